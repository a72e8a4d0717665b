"""Property-based fuzz of every JSON endpoint (schemathesis over the served OpenAPI schema): no request may cause a 5xx.

Three passes, each through the whole WSGI stack (middleware, CSRF, authentication, parsers):
1. per operation, schema-driven cases, called as every role that can reach it (annotator,
   researcher/admin, arena visitor with its cookie), with real path ids half of the time so the
   cases get past the 404s into the code behind them;
2. per operation with a body, hostile bodies: nested thousands deep, huge and out-of-range
   numbers, malformed JSON, invalid UTF-8, enormous strings, wrong types;
3. stateful: schemathesis' state machine chains calls along links it infers from the responses
   (a created run's id into its detail and verdicts, a study's name into next / report / export);
4. under a real uvicorn server (the ASGI stack the deployment runs): every operation with chunked
   bodies (small, malformed, and past the request cap), and every path with an id given ids at
   and past 2^63.
Pass 1 also puts ids past 2^63 into a third of its cases' integer path parameters.
The example counts keep each database's run well under a minute (AUDITORIUM_FUZZ_EXAMPLES raises them).
"""

from __future__ import annotations

import copy
import io
import os
import uuid

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES_PER_OPERATION = int(os.environ.get("AUDITORIUM_FUZZ_EXAMPLES", "15"))
STATEFUL_EXAMPLES = int(os.environ.get("AUDITORIUM_FUZZ_STATEFUL_EXAMPLES", "15"))

HOSTILE_BODIES: list[bytes] = [
    b"[" * 3000 + b"]" * 3000,
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b"[" * 40 + b"]" * 40,
    b'{"judge": "signal-technical", "pair_ids": [9223372036854775808]}',
    b'{"judge": "signal-technical", "pair_ids": [-9223372036854775809, 0, 1e308]}',
    b'{"events": [{"seq": 99999999999999999999999999, "side": "a", "kind": "play", "position": 1e999}]}',
    b'{"events": [{"seq": 1, "side": "a", "kind": "play", "client_time": -1e308, "position": NaN}]}',
    b'{"pair_ids": [' + b"9" * 5000 + b"]}",
    b"{",
    b'{"a": }',
    b"\xff\xfe\x00garbage",
    b'"' + b"x" * 200_000 + b'"',
    b'{"prompt": "' + b"p" * 200_000 + b'", "lyrics": 7, "vote": ["a"], "feedback": {"x": 1}}',
    b"null",
    b"[]",
    b"1e999",
    b'{"idempotency_key": null, "alignment": "A", "alignment_confidence": "1e400", "musicality": "B", "musicality_confidence": -0.0, "listening_log": [[[]]]}',
    b'{"reason": "\\u0000\\ud800", "excluded": "maybe", "version": {"$ne": 1}}',
]


# At and past what a 64-bit key holds: each must miss (404), never reach the database driver.
HUGE_IDS = [2**63 - 1, 2**63, 2**64, 10**19, 99999999999999999999]


@pytest.fixture
def keep_test_connection():
    """The raw WSGI app closes the database connection after each request; the test transaction needs it open
    (Django's own test client disconnects the same handlers)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_settings(settings):
    for name in ("ARENA_VOTE_RATE", "ARENA_IP_VOTE_RATE", "ARENA_BATTLE_RATE", "ARENA_IP_BATTLE_RATE", "ARENA_EVENT_RATE"):
        setattr(settings, name, "100000/60")
    settings.ARENA_IP_DAILY_BATTLE_RATE = settings.ARENA_IP_DAILY_VOTE_RATE = "100000/86400"
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"fuzz-{uuid.uuid4().hex}"
    settings.CACHES = caches
    return settings


def _signed_in(user, token: str) -> dict:
    client = Client()
    client.force_login(user)
    return {"cookies": {"sessionid": client.cookies["sessionid"].value, "csrftoken": token}, "headers": {"X-CSRFToken": token}}


@pytest.fixture
def world(db, fuzz_settings):
    from annotation.services import assignment_next, consent_give
    from arena.services import visitor_accept_terms
    from scoring.benchmarks.models import Benchmark, Submission, Team
    from scoring.models import Judge, ScoringRun
    from scoring.services import judges_ensure_defaults
    from tests.arena.conftest import arena_system, ready_battle

    study = StudyFactory(name="fuzz", min_listen_seconds=0.0)
    for _ in range(3):
        PairFactory(study=study)
    annotator = UserFactory(username="fuzz-annotator", roles=["annotator"])
    StudyAnnotatorFactory(study=study, annotator=annotator)
    consent_give(user=annotator)
    researcher = UserFactory(username="fuzz-admin", roles=["annotator", "researcher"], is_staff=True, is_superuser=True)
    StudyAnnotatorFactory(study=study, annotator=researcher)
    consent_give(user=researcher)
    assignment = assignment_next(study=study, annotator=annotator)
    judges_ensure_defaults()
    run = ScoringRun.objects.create(judge=Judge.objects.first(), study=study)
    # A judge benchmark of the same name, so its routes reach a real benchmark and submission.
    submission = Submission.objects.create(benchmark=Benchmark.objects.create(name=study.name), team=Team.objects.create(name="fuzz-team"), state=Submission.State.DONE)
    visitor, cookie = visitor_accept_terms(cookie=None, version=fuzz_settings.ARENA_TERMS_VERSION)
    battle = ready_battle(visitor, arena_system("fuzz-a"), arena_system("fuzz-b"))
    token = _get_new_csrf_string()
    roles = {
        "annotator": _signed_in(annotator, token),
        "researcher": _signed_in(researcher, token),
        "visitor": {"cookies": {fuzz_settings.ARENA_VISITOR_COOKIE: cookie, "csrftoken": token}, "headers": {"X-CSRFToken": token}},
    }
    known = {
        "name": study.name,
        "assignment_id": getattr(assignment, "pk", None) or getattr(assignment, "id", 1),
        "run_id": run.pk,
        "submission_id": submission.pk,
        "pseudonym": researcher.annotator_profile.pseudonym,
        "public_id": str(battle.public_id),
        "table": "annotators",
    }
    return {"roles": roles, "known": known}


def roles_for(path: str) -> list[str]:
    return ["visitor"] if path.startswith("/arena/") else ["annotator", "researcher"]


def schema_and_operations():
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20, [f"{o.method} {o.path}" for o in operations]
    return schema, operations


class Tally:
    """Failures (any 5xx) and, for the summary printed with -s, answers per status class."""

    def __init__(self, name: str):
        self.name, self.failures, self.statuses, self.operations = name, [], {}, set()

    def record(self, *, role: str, method: str, template: str, detail: str, response) -> None:
        status = response.status_code
        self.operations.add(f"{method.upper()} {template}")
        self.statuses[f"{status // 100}xx"] = self.statuses.get(f"{status // 100}xx", 0) + 1
        if status >= 500:
            text = getattr(response, "text", None) or getattr(response, "content", b"")[:300]
            self.failures.append(f"[{role}] {method.upper()} {detail} -> {status}: {str(text)[:300]}")

    def check(self) -> None:
        print(f"\n{self.name}: {len(self.operations)} operations, {sum(self.statuses.values())} requests, by status {dict(sorted(self.statuses.items()))}")
        assert not self.failures, "\n".join(self.failures[:10])


@pytest.mark.slow
@pytest.mark.django_db
def test_no_operation_answers_5xx_to_generated_input(keep_test_connection, world):
    _, operations = schema_and_operations()
    tally = Tally("generated")
    for operation in operations:
        for role in roles_for(operation.path):
            auth = world["roles"][role]

            @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(), ids=st.sampled_from(["real", "generated", "huge"]), huge=st.sampled_from(HUGE_IDS))
            def check(case, ids, huge):
                if ids == "real" and case.path_parameters:
                    case.path_parameters = {k: world["known"].get(k, v) for k, v in case.path_parameters.items()}
                if ids == "huge" and case.path_parameters:
                    case.path_parameters = {k: huge if k.endswith("_id") and k != "public_id" else v for k, v in case.path_parameters.items()}
                response = case.call(headers=auth["headers"], cookies=auth["cookies"])
                tally.record(role=role, method=case.method, template=operation.path, detail=f"{case.formatted_path} body={case.body!r:.200}", response=response)

            check()
    assert sum(tally.statuses.values()) >= len(operations) * EXAMPLES_PER_OPERATION
    assert tally.statuses.get("2xx", 0) > 0  # the cases get past authentication and validation somewhere
    tally.check()


@pytest.mark.slow
@pytest.mark.django_db
def test_no_operation_answers_5xx_to_hostile_bodies(keep_test_connection, world):
    _, operations = schema_and_operations()
    with_body = [o for o in operations if o.method.upper() in ("POST", "PUT", "PATCH")]
    assert len(with_body) >= 8
    tally = Tally("hostile bodies")
    for operation in with_body:
        path = operation.path.format(**world["known"])
        for role in roles_for(operation.path):
            auth = world["roles"][role]
            client = Client(enforce_csrf_checks=True, headers=auth["headers"])
            for name, value in auth["cookies"].items():
                client.cookies[name] = value
            for body in HOSTILE_BODIES:
                for content_type in ("application/json", "application/x-www-form-urlencoded"):
                    response = client.generic(operation.method.upper(), path, body, content_type=content_type)
                    tally.record(role=role, method=operation.method, template=operation.path, detail=f"{path} {content_type} body={body[:60]!r}", response=response)
    assert tally.statuses.get("4xx", 0) > len(with_body) * len(HOSTILE_BODIES)  # refused, not waved through
    tally.check()


@pytest.mark.slow
@pytest.mark.django_db
def test_stateful_sequences_answer_no_5xx(keep_test_connection, world):
    schema, _ = schema_and_operations()
    auth = world["roles"]["researcher"]
    tally = Tally("stateful")

    class Workflow(schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": auth["headers"], "cookies": auth["cookies"]}

        def validate_response(self, response, case, **kwargs):
            tally.record(role="researcher", method=case.method, template=case.operation.path, detail=f"{case.formatted_path} body={case.body!r:.200}", response=response)

    Workflow.run(settings=settings(max_examples=STATEFUL_EXAMPLES, stateful_step_count=6, deadline=None, database=None, suppress_health_check=list(HealthCheck)))
    assert len(tally.operations) >= 3  # it chained calls, not one operation over and over
    tally.check()


def _chunks(body: bytes, size: int = 7):
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_under_uvicorn_chunked_bodies_and_huge_ids_answer_no_5xx(world, fuzz_settings):
    import requests

    from tests.live_uvicorn import serving

    fuzz_settings.AUDITORIUM_MAX_REQUEST_BYTES = 64 * 1024
    _, operations = schema_and_operations()
    tally = Tally("uvicorn: chunked bodies, huge ids")
    past_cap = b'{"pad": "' + b"x" * (fuzz_settings.AUDITORIUM_MAX_REQUEST_BYTES * 2) + b'"}'
    with serving() as (port, _):
        base = f"http://127.0.0.1:{port}"
        for operation in operations:
            method = operation.method.upper()
            with_id = [name for name in world["known"] if name.endswith("_id") and name != "public_id" and "{" + name + "}" in operation.path]
            paths = [(operation.path.format(**world["known"]), False)]
            for huge in HUGE_IDS if with_id else []:
                paths.append((operation.path.format(**{**world["known"], **{name: huge for name in with_id}}), huge > 2**63 - 1))
            for role in roles_for(operation.path):
                auth = world["roles"][role]
                for path, past_range in paths:
                    bodies = [None] if method in ("GET", "HEAD", "DELETE") else [b"{}", b'{"a": ', HOSTILE_BODIES[0], past_cap]
                    for body in bodies:
                        data = None if body is None else (_chunks(body) if len(body) < 10_000 else _chunks(body, 16_384))
                        response = requests.request(method, base + path, data=data, headers={**auth["headers"], "Content-Type": "application/json"}, cookies=auth["cookies"], timeout=30)
                        tally.record(role=role, method=method, template=operation.path, detail=f"{path} chunked={body is not None}", response=response)
                        if body is past_cap:
                            assert response.status_code == 413, f"{method} {path} -> {response.status_code}"
                        elif past_range:
                            assert response.status_code == 404, f"{method} {path} -> {response.status_code}"
    assert len(tally.operations) == len(operations)
    tally.check()


# Prediction files built to cost or crash a parser: deep nesting, numbers of thousands of digits, endless lines,
# more rows than items, broken arrays, bytes that are not UTF-8.
HOSTILE_JSONL: list[bytes] = [
    b"[" * 100_000,
    b"{" * 100_000,
    b'{"id": "fz-00001", "x": ' + b"[" * 50_000 + b"}\n",
    b'{"id": "fz-00001", "probability_a": 0.' + b"5" * 5000 + b"}\n",
    b'{"id": "fz-00001", "probability_a": ' + b"9" * 5000 + b"}\n",
    b'{"id": "fz-00001", "probability_a": 1e999}\n',
    b'{"id": "fz-00001", "probability_a": NaN, "preferred": "A"}\n',
    b"x\n" * 200_000,
    b'{"id": "' + b"a" * 400_000 + b'"}\n',
    b'{"id": "fz-00001", "preferred": "A"}\n' * 5_000,
    b'[{"id": "fz-00001", "preferred": "A"},' * 3_000,
    b'{"predictions": [' + b'{"id": "fz-00001"},' * 2_000 + b"]}",
    b'{"predictions": 7}',
    b"\xef\xbb\xbf\xff\xfe\x00 not text",
    b"\x00" * 10_000,
    b'{"id": ["fz-00001"], "preferred": {"a": 1}}\n{"id": 7}\nnull\n[]\n"s"\n',
    b'{"id": "fz-00001", "preferred": "' + b"A" * 100_000 + b'"}\n',
    b"\r\n" * 50_000,
    b"",
]


@pytest.mark.django_db
def test_every_benchmark_route_answers_hostile_prediction_files_without_5xx(keep_test_connection, fuzz_settings):
    """Every benchmark route of the URL conf (pages and API), as a team member, with each hostile file as an upload and
    as a raw body."""
    from django.urls import reverse

    from scoring.benchmarks import services
    from scoring.benchmarks.models import Team
    from tests.benchmarks.helpers import known_study
    from tests.benchmarks.worlds import routes

    study, _ = known_study(n_pairs=6, name="fz")
    bench = services.benchmark_create(name="fz", study=study, bootstrap_rounds=100)
    member = UserFactory(username="fz-member")
    Team.objects.create(name="fz-team", benchmark=bench).members.add(member)
    client = Client()
    client.force_login(member)
    fill = {"name": bench.name, "team": "fz-team", "submission_id": 1, "token": "x"}
    targets = [reverse(name, kwargs={k: fill[k] for k in keys}) for name, _ns, keys in routes() if "benchmark" in name or name.startswith("benchmarks:")]
    assert len(targets) >= 15
    tally = Tally("benchmark routes: hostile prediction files")
    for url in targets:
        for body in HOSTILE_JSONL:
            response = client.post(url, {"team": "fz-team", "label": "fz", "file": io.BytesIO(body)})
            tally.record(role="member", method="post", template=url, detail=f"{url} file={body[:40]!r}", response=response)
            response = client.generic("POST", url, body, content_type="application/json")
            tally.record(role="member", method="post", template=url, detail=f"{url} raw={body[:40]!r}", response=response)
    assert not bench.submissions.exists()  # every hostile file was refused
    tally.check()
