"""Role checks on every route: each route is classified here, so a new one cannot slip in unchecked."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import AnnotatorProfile
from scoring.benchmarks.models import Benchmark
from scoring.models import Judge
from tests.factories import PairFactory, StudyAnnotatorFactory, StudyFactory, UserFactory
from tests.reliability.routes import all_routes, url_for, world  # noqa: F401  (world is a fixture)

PUBLIC = {
    "healthz", "readyz", "healthz-workers", "login", "logout", "api-schema", "api-docs",
    # The arena is for anonymous visitors; its own tests cover the terms, cookie and blind rules.
    "arena", "leaderboard", "audio", "api-terms", "api-prompt-random", "api-battle-create", "api-battle-detail",
    "api-battle-events", "api-battle-vote", "api-leaderboard", "leaderboard-history", "api-leaderboard-history",
    # A judge benchmark's audio behind an expiring signed link (outside judges fetch it without an account).
    "benchmark-audio",
    # A recruitment link: its GET shows a start page; joining is a CSRF-checked POST (tests/annotation/test_recruitment_signin.py).
    "recruitment-enter",
}
# Any signed-in annotator; object-level rules (own assignment, membership) are tested per app.
ANNOTATOR = {
    "home", "consent", "consent-withdraw", "annotate", "api-study-list", "api-assignment-next", "api-listening-events", "api-judgment-submit", "api-judgment-cycle", "api-assignment-skip",
    "clip-audio", "pair-audio",
    # Headphone check, practice round and the recruited participant's end page: membership checked per request.
    "screening", "screening-submit", "screening-trial", "practice", "practice-audio", "recruitment-done",
    # Judge benchmarks: any signed-in user may post; membership of the team is checked per request (tests/benchmarks).
    "benchmark-submit", "benchmark-run", "api-benchmark-submit", "api-benchmark-run",
    # Rating studies (acr, multi): membership and the own assignment checked per request (tests/ratings).
    "rate", "api-next", "api-listening", "api-submit", "api-skip",
    # Separate screens: one dimension's answer, the own assignment checked per request (tests/annotation/test_dimension_passes.py).
    "api-dimension-answer",
    # Questionnaires before and after the study: membership checked per request (tests/annotation/test_questionnaires.py).
    "questionnaire-pre", "questionnaire-post",
}
RESEARCHER = {
    "api-study-report", "api-study-report-table", "api-study-compare", "study-compare", "api-study-plan", "study-plan", "api-annotator-exclusion", "api-scoring-judges", "api-scoring-runs",
    "api-scoring-run", "api-scoring-run-verdicts", "api-scoring-run-bias", "api-scoring-external", "judge-list", "run-list", "run-detail",
    "study-report", "study-report-exclusion", "study-manage-list", "study-create", "study-manage", "study-edit",
    "study-annotators-add", "api-study-export", "reward-train", "training-detail", "pairs-import", "pairs-import-done", "report-list",
    # Best-of-N: the list and its form for researchers; an experiment's page by the study rule of its study.
    "best-of-n", "best-of-n-detail",
    # Judge benchmarks: researchers and team members (tests/benchmarks/test_no_leaks.py covers teams).
    "benchmark-list", "benchmark-create", "benchmark-detail", "benchmark-export", "benchmark-submission", "benchmark-close",
    "api-benchmark-list", "api-benchmark-leaderboard", "api-benchmark-submission",
    # The battle-log release page (public only with ARENA_RELEASE_PUBLIC; tests/arena/test_release_page.py).
    "release", "release-status",
    # Benchmark teams: researchers, and members for their own teams only (tests/benchmarks/test_teams_and_endpoints.py).
    "team-list", "team-detail", "team-members-add", "team-endpoint-register",
    "study-collaborators",
    # Practice pairs and recruitment links on the study page: changes, so writers only (tests/annotation/test_crowd_manage.py).
    "study-practice-add", "study-practice-remove", "study-link-add", "study-link-close", "study-link-resume",
    # Adjudication: the queue for the study's adjudicators and writers; naming adjudicators for writers (tests/annotation/test_adjudication.py).
    "study-adjudication", "study-adjudicators",
    # The questionnaire editor: writers change, readers preview (tests/annotation/test_questionnaires.py).
    "study-questionnaires",
    # The Prolific page and its actions: writers only (tests/annotation/test_prolific.py).
    "study-prolific", "study-prolific-token", "study-prolific-tie", "study-prolific-fetch", "study-prolific-decide", "study-prolific-bonus", "study-prolific-queue",
}
# Researcher routes that serve a finished file (404 or 409 without one): checked for refusals only here,
# downloads in their own tests.
RESEARCHER_FILES = {"release-download", "api-scoring-run-pseudo"}  # the pseudo-label export: 409 for a run that is not a pseudo-label run
# An adjudication pair's page and audio: 404 for a pair not in the study (tests/annotation/test_adjudication.py covers who reaches them).
RESEARCHER_FILES |= {"study-adjudication-item", "study-adjudication-audio"}
# The study's owner and admins only (other researchers get 403 or 404): tests/annotation/test_study_export.py.
OWNER = {"study-export", "study-export-status", "study-export-download", "study-questionnaire-answers"}
POST_ONLY = {
    "study-export",
    "reward-train", "api-annotator-exclusion", "study-report-exclusion", "api-assignment-next", "api-listening-events", "api-judgment-submit", "api-judgment-cycle", "api-assignment-skip",
    "study-annotators-add", "benchmark-close", "benchmark-submit", "benchmark-run", "api-benchmark-submit", "api-benchmark-run",
    "api-next", "api-listening", "api-submit", "api-skip", "api-dimension-answer",
    "team-members-add", "team-endpoint-register", "study-collaborators",
    "study-practice-add", "study-practice-remove", "study-link-add", "study-link-close", "study-link-resume",
    "study-adjudicators",
    "study-prolific-token", "study-prolific-tie", "study-prolific-fetch", "study-prolific-decide", "study-prolific-bonus", "study-prolific-queue",
}


def test_every_route_is_classified():
    names = {name.split(":")[-1] for name in all_routes()}
    unclassified = names - PUBLIC - ANNOTATOR - RESEARCHER - OWNER - RESEARCHER_FILES
    assert not unclassified, f"classify these routes in {__file__}: {sorted(unclassified)}"


def researcher_routes(world, names=RESEARCHER):
    routes = all_routes()
    for full_name, pattern in routes.items():
        if full_name.split(":")[-1] in names:
            yield full_name, url_for(full_name, pattern, world["kwargs"])


def call(client, name, url):
    return client.post(url, {}) if name.split(":")[-1] in POST_ONLY else client.get(url)


def test_annotators_cannot_reach_researcher_routes(client, world):
    annotator = UserFactory(username="plain-annotator", roles=["annotator"])
    client.force_login(annotator)
    for name, url in researcher_routes(world, RESEARCHER | OWNER | RESEARCHER_FILES):
        status = call(client, name, url).status_code
        assert status in (403, 404), f"{name} {url} answered {status} to an annotator"


def test_researchers_who_do_not_own_the_study_cannot_reach_owner_routes(client, world):
    client.force_login(UserFactory(username="other-researcher", roles=["researcher"]))
    for name, url in researcher_routes(world, OWNER):
        status = call(client, name, url).status_code
        assert status in (403, 404), f"{name} {url} answered {status} to a researcher who does not own the study"


def test_anonymous_cannot_reach_private_routes(client, world):
    routes = all_routes()
    for full_name, pattern in routes.items():
        short = full_name.split(":")[-1]
        if short in PUBLIC or short == "clip-audio":
            continue
        url = url_for(full_name, pattern, world["kwargs"])
        response = call(client, full_name, url)
        redirected_to_login = response.status_code == 302 and reverse("login") in response["Location"]
        assert redirected_to_login or response.status_code in (401, 403), f"{full_name} {url} answered {response.status_code} to an anonymous visitor"


def test_researchers_reach_researcher_routes(client, world):
    researcher = UserFactory(username="a-researcher", roles=["researcher"])
    # Changing a study (its edit page among these routes) is for its owner, named collaborators and admins.
    world["study"].collaborators.add(researcher)
    client.force_login(researcher)
    for name, url in researcher_routes(world):
        if name.split(":")[-1] in POST_ONLY:
            continue
        status = call(client, name, url).status_code
        assert status == 200, f"{name} {url} answered {status} to a researcher"


def test_annotators_never_see_each_others_answers(client, world):
    other = StudyAnnotatorFactory(study=world["study"]).annotator
    client.force_login(other)
    body = client.post(reverse("api-assignment-next", kwargs={"name": "acl"})).content.decode()
    judgment = world["judgment"]
    assert judgment.rationale not in body or not judgment.rationale
    assert "judgment" not in body and "confidence" not in body


@pytest.mark.django_db
def test_oversized_text_fields_are_refused_with_a_message(client):
    study = StudyFactory(name="sizes", min_listen_seconds=0.0)
    PairFactory(study=study)
    user = StudyAnnotatorFactory(study=study).annotator
    client.force_login(user)
    assignment = client.post(reverse("api-assignment-next", kwargs={"name": "sizes"})).json()["assignment"]
    body = {
        "idempotency_key": "k", "alignment": "A", "alignment_confidence": 3, "musicality": "A", "musicality_confidence": 3,
        "rationale": "x" * 6000, "listening_log": {"A": {"plays": 1, "seconds": 0}, "B": {"plays": 1, "seconds": 0}},
    }
    r = client.post(reverse("api-judgment-submit", kwargs={"assignment_id": assignment["id"]}), body, content_type="application/json")
    assert r.status_code == 400 and "rationale" in r.json()["detail"]
    r = client.post(reverse("api-assignment-skip", kwargs={"assignment_id": assignment["id"]}), {"reason": "y" * 5000}, content_type="application/json")
    assert r.status_code == 400 and "reason" in r.json()["detail"]


# --- The study rule on every route -----------------------------------------------------------------

# URL arguments that point at one study's data: a stranger must get 403 or 404 on any route that has one.
STUDY_OBJECT_ARGS = {"name", "run_id", "training_id", "public_id", "pseudonym", "item_id", "link_id", "table"}


def _study_fingerprint(study) -> tuple:
    """Everything that hangs off the study (rows with study=, rows of its pairs, the study's own row), as counts and values."""
    from django.apps import apps
    from django.forms.models import model_to_dict

    from annotation.models import Study

    counts = []
    for model in apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if "study" in names and model._meta.get_field("study").related_model is Study:
            counts.append((model._meta.label, sorted(map(str, model.objects.filter(study=study).values_list()))))
        elif "pair" in names and getattr(model._meta.get_field("pair"), "related_model", None) is not None and model._meta.get_field("pair").related_model._meta.label == "annotation.Pair":
            counts.append((model._meta.label, model.objects.filter(pair__study=study).count()))
    study = Study.objects.get(pk=study.pk)
    from annotation.models import StudyAnnotator

    members = StudyAnnotator.objects.filter(study=study).values("annotator")
    excluded = sorted(AnnotatorProfile.objects.filter(user__in=members).values_list("pseudonym", "excluded_at"), key=str)
    return tuple(counts), sorted(model_to_dict(study, exclude=["collaborators"]).items(), key=str), sorted(study.collaborators.values_list("pk", flat=True)), excluded


@pytest.fixture
def secret_world(world):
    """The `world` study made recognisable (a marker in its name's place in every page) with an export, a link, a practice pair and a clip to ask for."""
    from annotation import services
    from annotation.crowd_models import PracticeItem
    from annotation.models import StudyExport

    study = world["study"]
    study.title = "Zq7 secret study title"
    study.owner = UserFactory(username="the-owner", roles=["researcher"])
    study.save()
    Benchmark.objects.filter(name=study.name).update(study=study)
    pair = world["judgment"].pair
    export = StudyExport.objects.create(study=study, requested_by=study.owner, state=StudyExport.State.DONE)
    link = services.recruitment_link_create(study=study, completion_code="C0DE")
    item = PracticeItem.objects.create(study=study, condition=pair.condition, clip_a=pair.clip_a, clip_b=pair.clip_b, explanation="x")
    kwargs = dict(world["kwargs"], link_id=link.pk, item_id=item.pk, public_id=str(export.public_id))
    per_route = {"clip-audio": {"public_id": str(pair.clip_a.public_id)}}
    judge = Judge.objects.get(key="signal-acl")
    body = {
        "study": study.name, "name": study.name, "judge": judge.key, "features": judge.key, "action": "exclude", "reason": "x", "usernames": "the-owner",
        "pair_id": pair.pk, "explanation": "x", "completion_code": "C0DE", "cap": "5", "days": "1", "completion_url": "https://example.org/c", "label": "x",
        "title": "taken", "licence": "x", "include_seeded": "1", "include_unvoted": "1",
    }
    return {**world, "kwargs": kwargs, "per_route": per_route, "body": body, "markers": (study.title,)}


def test_a_stranger_researcher_reaches_no_study_data_on_any_route(client, secret_world):
    """Every route in the URL conf, as a researcher who neither owns nor collaborates on the study: a route
    that names the study or one of its objects answers 403 or 404; any other answers without mentioning
    the study; and no route changes anything that hangs off the study."""
    study = secret_world["study"]
    client.force_login(UserFactory(username="stranger", roles=["researcher"]))
    before = _study_fingerprint(study)
    leaks = []
    for full_name, converters in all_routes().items():
        short = full_name.split(":")[-1]
        if short in PUBLIC and short not in ("recruitment-enter",):
            continue
        kwargs = {**secret_world["kwargs"], **secret_world["per_route"].get(short, {})}
        url = reverse(full_name, kwargs={key: kwargs[key] for key in converters})
        for method in ("GET", "POST"):
            response = client.get(url) if method == "GET" else client.post(url, secret_world["body"])
            body = b"".join(response.streaming_content) if response.streaming else response.content
            problem = None
            # A benchmark's routes take the benchmark's name: benchmarks are shared with researchers by design; what they do to the study is checked below.
            named = converters - {"name"} if short.startswith(("benchmark", "api-benchmark")) else converters
            if named & STUDY_OBJECT_ARGS and response.status_code not in (403, 404, 405) and short != "recruitment-enter":
                problem = f"answered {response.status_code}"
            elif response.status_code < 400 and any(marker.encode() in body for marker in secret_world["markers"]):
                problem = "shows the study"
            elif _study_fingerprint(study) != before:
                problem = "changed the study's data"
                before = _study_fingerprint(study)
            if problem:
                leaks.append(f"{method} {full_name} {url}: {problem}")
    assert not leaks, "a stranger researcher reached the study:\n" + "\n".join(leaks)
