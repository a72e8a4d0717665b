"""Submissions that are run, not uploaded: an in-platform judge (a scoring run) and an outside judge over HTTP.

In-platform: the judge runs as an ordinary scoring run over the benchmark's study pairs (the same
jobs, queues, clip cache and verdicts as any run); when the run is done its verdicts become the
submission's predictions. Arena items are not study pairs, so such a judge leaves them unanswered
(counted wrong, shown as coverage).

Outside judge: the platform POSTs each item to the team's registered endpoint (JudgeEndpoint) as JSON

    {"id", "prompt", "lyrics", "modality", "audio_a", "audio_b", "reference_audio", "expires_in"}

where the audio fields are signed links that expire (BENCHMARK_AUDIO_URL_TTL seconds), and reads
back one JSON object in the MIREX prediction layout (`preferred`, `preferred_<dimension>`,
`probability_a`...; an `id` is not needed). At most BENCHMARK_HTTP_CONCURRENCY requests are in
flight; each gets BENCHMARK_HTTP_TIMEOUT seconds and BENCHMARK_HTTP_RETRIES more tries on a
timeout, a connection error or a 5xx answer. An item that still has no answer is stored without a
label and with the reason ("timeout" or "error: ..."): counted wrong, counted on the submission
(n_timeouts, n_errors) and shown on the leaderboard.

Every request carries `X-Auditorium-Timestamp` (Unix seconds) and `X-Auditorium-Signature`:
"sha256=" + hex HMAC-SHA256 with the endpoint's shared secret over `timestamp + "." + body`, so
the endpoint can refuse anything that did not come from this server, or that is replayed late.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django import db
from django.db import transaction
from django.utils import timezone

from auditorium.celery import task
from common.errors import ServiceError
from common.roles import is_researcher
from scoring import services as scoring_services
from scoring.evaluation import ALIGNMENT, DIMENSIONS, MUSICALITY, NO_LABEL
from scoring.models import Judge, ScoringRun, Verdict

from . import audio, formats
from .endpoint_address import deadline, endpoint_address, pinned_opener
from .models import Benchmark, BenchmarkItem, JudgeEndpoint, Prediction, Submission, Team
from .selectors import submitting_team
from .services import labels_from_verdict, predictions_store, submission_create

logger = logging.getLogger(__name__)
MAX_ANSWER_BYTES = 1_000_000
COLLECT_TASK = "benchmarks.judge_collect"
HTTP_TASK = "benchmarks.http_run"


def _queue(name: str, *args) -> None:
    if name == HTTP_TASK and settings.CELERY_TASK_ALWAYS_EAGER and settings.BENCHMARK_HTTP_IN_THREAD:
        # No broker: an eager task would run every request inside the POST that asked for it (minutes for a slow
        # judge). A thread of this process runs it instead, and the submission page shows its progress.
        transaction.on_commit(lambda: _in_thread(*args))
        return
    transaction.on_commit(lambda: task(name).delay(*args))


def _in_thread(submission_id: int) -> threading.Thread:
    def work():
        try:
            http_run(submission_id=submission_id)
        except Exception as exc:  # the thread has no caller to tell: the submission says what went wrong
            logger.exception("benchmark HTTP run %s failed", submission_id)
            Submission.objects.filter(pk=submission_id).exclude(state=Submission.State.DONE).update(state=Submission.State.FAILED, error=f"the run stopped: {type(exc).__name__}"[:500], finished_at=timezone.now())
        finally:
            db.connections.close_all()

    thread = threading.Thread(target=work, name=f"benchmark-http-{submission_id}", daemon=True)
    thread.start()
    return thread


def run_submission_request(*, benchmark: Benchmark, user, team: str, judge: str = "", endpoint: str = "", label: str = "") -> Submission:
    """A judge run asked for on the web or through the API: an in-platform judge by key (researchers),
    or one of the team's registered outside judges by name (its members; researchers for any team)."""
    found = submitting_team(user, team)
    if benchmark.is_mos:
        raise ServiceError(f"Benchmark {benchmark.name} scores rated clips: it takes prediction files with a score per clip, not judge runs.", code="mos_files_only")
    if judge:
        if not is_researcher(user):
            raise ServiceError("In-platform judges are run by researchers.", code="forbidden", status=403)
        chosen = Judge.objects.filter(key=judge).first()
        if chosen is None:
            raise ServiceError(f"No judge with key {judge!r}.", code="no_judge")
        return judge_submission_create(benchmark=benchmark, team=found, judge=chosen, label=label, user=user)
    if endpoint:
        registered = found.endpoints.filter(name=endpoint).first()
        if registered is None:
            raise ServiceError(f"Team {found.name} has no registered endpoint named {endpoint[:100]!r}; register it on the team's page.", code="no_endpoint")
        return http_submission_create(benchmark=benchmark, endpoint=registered, label=label, user=user)
    raise ServiceError("Give `endpoint` (an outside judge your team registered) or `judge`.", code="no_source")


# --- In-platform judge --------------------------------------------------------------------------------


def judge_submission_create(*, benchmark: Benchmark, team: Team, judge: Judge, label: str = "", user=None) -> Submission:
    pair_ids = list(benchmark.items.filter(pair__isnull=False).order_by("position").values_list("pair_id", flat=True))
    if not pair_ids:
        raise ServiceError(f"Benchmark {benchmark.name} has no study pairs left for an in-platform judge to run on.", code="no_pairs")
    with transaction.atomic():
        submission = submission_create(benchmark=benchmark, team=team, user=user, label=label or judge.key, kind=Submission.Kind.JUDGE, state=Submission.State.RUNNING, judge=judge)
        # A judge run on a study's pairs follows the study rule whoever asks (scoring/study_rule.py): a team made by
        # any researcher does not open another researcher's study.
        submission.scoring_run = scoring_services.run_create(judge=judge, pair_ids=pair_ids, label=f"benchmark {benchmark.name}", user=user)
        submission.save(update_fields=["scoring_run"])
        _queue(COLLECT_TASK, submission.pk)
    return submission


def judge_collect(*, submission_id: int) -> bool:
    """Turn a finished run's verdicts into predictions; False while the run is still going. Idempotent."""
    submission = Submission.objects.select_related("scoring_run", "benchmark").get(pk=submission_id)
    if submission.state in (Submission.State.DONE, Submission.State.FAILED):
        return True
    run = submission.scoring_run
    if run is None or run.state == ScoringRun.State.FAILED:
        Submission.objects.filter(pk=submission.pk).update(state=Submission.State.FAILED, error=(run.error if run else "the scoring run is gone"), finished_at=timezone.now())
        return True
    if run.state != ScoringRun.State.DONE:
        return False
    verdicts = {v.pair_id: v for v in Verdict.objects.filter(run=run)}
    items = list(submission.benchmark.items.filter(pair__isnull=False).values_list("item_id", "id", "pair_id"))
    rows, ids = {}, {}
    for item_id, pk, pair_id in items:
        verdict = verdicts.get(pair_id)
        ids[item_id] = pk
        if verdict is None:
            rows[item_id] = {"error": "no verdict"}
            continue
        rows[item_id] = labels_from_verdict(verdict)
        if verdict.status == Verdict.Status.FAILED:
            rows[item_id]["error"] = "judge failed"
    with transaction.atomic():
        predictions_store(submission=submission, rows=rows, items=ids)
        failed = sum(1 for r in rows.values() if r.get("error"))
        Submission.objects.filter(pk=submission.pk).update(state=Submission.State.DONE, n_errors=failed, finished_at=timezone.now())
    return True


# --- Outside judge over HTTP --------------------------------------------------------------------------


def http_submission_create(*, benchmark: Benchmark, endpoint: JudgeEndpoint, label: str = "", user=None) -> Submission:
    """A registered outside judge run on every item; `user` (who asked, recorded) must be a member of the endpoint's
    team or a researcher."""
    team = endpoint.team
    with transaction.atomic():
        submission = submission_create(
            benchmark=benchmark, team=team, user=user, label=label or endpoint.name, kind=Submission.Kind.HTTP, state=Submission.State.PENDING, endpoint=endpoint, endpoint_url=endpoint.url
        )
        _queue(HTTP_TASK, submission.pk)
    return submission


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The X-Auditorium-Signature value: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>."""
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def _item_payload(benchmark: Benchmark, item: BenchmarkItem) -> dict:
    base = settings.BENCHMARK_AUDIO_BASE_URL
    return {
        "id": item.item_id,
        "prompt": item.prompt,
        "lyrics": item.lyrics,
        "modality": item.modality,
        "audio_a": audio.signed_url(None, benchmark, item.clip_a, base=base),
        "audio_b": audio.signed_url(None, benchmark, item.clip_b, base=base),
        "reference_audio": audio.signed_url(None, benchmark, item.reference, base=base) if item.reference else "",
        "expires_in": settings.BENCHMARK_AUDIO_URL_TTL,
    }


def _ask(url: str, secret: str, payload: dict, opener: urllib.request.OpenerDirector) -> dict:
    """One item to the endpoint, with retries; returns prediction values, or {"error": ...} with all labels missing."""
    body = json.dumps(payload).encode()
    last = "error"
    for attempt in range(settings.BENCHMARK_HTTP_RETRIES + 1):
        if attempt:
            time.sleep(min(0.2 * 2**attempt, 5.0))
        # Signed afresh on every try: a retry is not a replay of an old timestamp.
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-Auditorium-Timestamp": stamp, "X-Auditorium-Signature": signature(secret, stamp, body)}
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        limit = settings.BENCHMARK_HTTP_TIMEOUT
        try:
            with deadline(limit) as clock:
                try:
                    with opener.open(request, timeout=limit) as response:
                        raw = response.read(MAX_ANSWER_BYTES + 1)
                except (OSError, http.client.HTTPException) as exc:
                    if clock.expired:
                        raise TimeoutError from None
                    raise exc
            if clock.expired:
                raise TimeoutError
            if len(raw) > MAX_ANSWER_BYTES:
                return {"error": f"error: the answer is longer than {MAX_ANSWER_BYTES} bytes"}
            answer = formats.loads_bounded(raw.decode())
        except (TimeoutError, socket.timeout):
            last = "timeout"
            continue
        except urllib.error.HTTPError as exc:
            last = f"error: HTTP {exc.code}"
            if exc.code < 500:
                break
            continue
        except urllib.error.URLError as exc:
            last = "timeout" if isinstance(exc.reason, (TimeoutError, socket.timeout)) else f"error: {exc.reason}"
            continue
        except (ValueError, OSError, http.client.HTTPException) as exc:
            # Not JSON (or cut short): retried like a connection error; docs/benchmarks.md says so.
            last = f"error: {type(exc).__name__}"
            continue
        if not isinstance(answer, dict):
            return {"error": "error: the answer is not a JSON object"}
        problems: list[str] = []
        values = formats._mirex_row(answer, "answer", problems)
        if problems or all(values[d] == NO_LABEL for d in DIMENSIONS):
            return {"error": ("error: " + (problems[0] if problems else "no preference in the answer"))[:200]}
        return values
    return {"error": last}


def _store_answers(submission: Submission, items: list[BenchmarkItem], answers: list[dict]) -> None:
    objects = [
        Prediction(
            submission=submission,
            item=item,
            alignment=int(answer.get(ALIGNMENT, NO_LABEL)),
            musicality=int(answer.get(MUSICALITY, NO_LABEL)),
            prob_alignment=answer.get(f"prob_{ALIGNMENT}"),
            prob_musicality=answer.get(f"prob_{MUSICALITY}"),
            error=str(answer.get("error", ""))[:200],
        )
        for item, answer in zip(items, answers)
    ]
    with transaction.atomic():
        Prediction.objects.filter(submission=submission, item__in=items).delete()
        Prediction.objects.bulk_create(objects)


def http_run(*, submission_id: int, chunk: int = 200) -> Submission:
    """Ask the endpoint about every item without an answer yet, storing answers a chunk at a time (a re-run resumes), then mark the submission scored."""
    submission = Submission.objects.select_related("benchmark", "endpoint").get(pk=submission_id)
    if submission.state in (Submission.State.DONE, Submission.State.FAILED):
        return submission
    if submission.endpoint is None:
        Submission.objects.filter(pk=submission.pk).update(state=Submission.State.FAILED, error="its registered endpoint was removed", finished_at=timezone.now())
        submission.refresh_from_db()
        return submission
    secret = submission.endpoint.secret
    try:
        # Checked now, not only at registration: the name may resolve elsewhere since. Every request goes to this address.
        opener = pinned_opener(endpoint_address(submission.endpoint_url))
    except ServiceError as exc:
        Submission.objects.filter(pk=submission.pk).update(state=Submission.State.FAILED, error=exc.message[:500], finished_at=timezone.now())
        submission.refresh_from_db()
        return submission
    Submission.objects.filter(pk=submission.pk).update(state=Submission.State.RUNNING)
    benchmark = submission.benchmark
    answered = set(Prediction.objects.filter(submission=submission, error="").values_list("item_id", flat=True))
    todo = [item for item in benchmark.items.select_related("clip_a", "clip_b", "reference").order_by("position") if item.pk not in answered]
    with ThreadPoolExecutor(max_workers=settings.BENCHMARK_HTTP_CONCURRENCY) as pool:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            answers = list(pool.map(lambda item: _ask(submission.endpoint_url, secret, _item_payload(benchmark, item), opener), part))
            _store_answers(submission, part, answers)
    failures = Prediction.objects.filter(submission=submission).exclude(error="")
    timeouts = failures.filter(error="timeout").count()
    Submission.objects.filter(pk=submission.pk).update(state=Submission.State.DONE, n_timeouts=timeouts, n_errors=failures.count() - timeouts, finished_at=timezone.now())
    submission.refresh_from_db()
    return submission
