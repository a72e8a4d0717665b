"""Live pushes to open scoring pages over Channels: run and training progress, and "report changed".

Called after commit by services and tasks; a push never fails its caller, because the change it
announces is already stored and pages catch up on their next load. A study's report changes with
a judgment, an exclusion (scoring.exclusion), a withdrawal or renewed consent, and a finished run.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import Judgment, Pair
from common.debounce import debounce_clear, debounced_apply

from . import queueing

logger = logging.getLogger(__name__)

# Open report pages re-fetch on every push; one push per study per window keeps a busy
# study from costing a channel-layer round trip inside every judgment submit.
REPORT_PUSH_WINDOW_SECONDS = 2


def run_group(run_id: int) -> str:
    return f"scoring-run-{run_id}"


def training_group(training_id: int) -> str:
    return f"scoring-training-{training_id}"


def report_group(study_id: int) -> str:
    return f"scoring-report-{study_id}"


def _group_send(group: str, message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(group, message)


def run_progress_broadcast(progress: dict) -> None:
    """Push a run's progress (selectors.run_progress) to its open run pages."""
    try:
        _group_send(run_group(progress["run"]), {"type": "run.progress", "progress": progress})
    except Exception:  # a lost progress push must never fail the scoring job
        logger.exception("progress push for run %s failed", progress["run"])


def training_progress_broadcast(progress: dict) -> None:
    """Push a reward-model training's progress (reward.services.training_progress) to its open pages."""
    try:
        _group_send(training_group(progress["training"]), {"type": "training.progress", "progress": progress})
    except Exception:  # a lost progress push must never fail the training
        logger.exception("progress push for training %s failed", progress["training"])


def report_changed_broadcast(*, study_id: int, reason: str) -> None:
    """Tell open report pages of the study that their numbers are stale."""
    try:
        _group_send(report_group(study_id), {"type": "report.changed", "reason": reason, "at": timezone.now().isoformat()})
    except Exception:  # a dead channel layer must not break a vote that is already committed
        logger.warning("report refresh broadcast failed", exc_info=True)


def _push_pending_key(study_id: int) -> str:
    return f"scoring:report-push:{study_id}"


def report_changed_queue(*, study_id: int, reason: str) -> None:
    """Debounced push: at most one broadcast per study per window, none dropped (common.debounce)."""
    try:
        task = queueing.task(queueing.REPORT_CHANGED)
        debounced_apply(task, key=_push_pending_key(study_id), delay=REPORT_PUSH_WINDOW_SECONDS, args=[study_id, reason])
    except Exception:  # broker or cache down: the vote is committed; pages catch up on their next load
        logger.warning("report refresh could not be queued", exc_info=True)


def report_changed_push(*, study_id: int, reason: str) -> None:
    """The queued end of report_changed_queue (runs in a worker)."""
    debounce_clear(_push_pending_key(study_id))
    report_changed_broadcast(study_id=study_id, reason=reason)


def report_judgment_listener(judgment) -> None:
    report_changed_queue(study_id=judgment.pair.study_id, reason="judgment")


def report_consent_listener(user) -> None:
    """A withdrawal (or consent given again) moves the annotator's votes out of (or back into) every study they voted in."""
    for study_id in set(Judgment.objects.filter(annotator=user).values_list("pair__study_id", flat=True)):
        report_changed_broadcast(study_id=study_id, reason="consent")


def report_run_finished(*, study_id: int | None, pair_ids: list[int]) -> None:
    """A finished run adds a judge to the report of its study, or of every study its pairs belong to."""
    study_ids = {study_id} if study_id else set(Pair.objects.filter(pk__in=pair_ids).values_list("study_id", flat=True))
    for one in study_ids:
        report_changed_broadcast(study_id=one, reason="run")


def report_listener_install() -> None:
    """Hook the live refresh into judgment submission and consent changes (idempotent; meant for ScoringConfig.ready())."""
    if report_judgment_listener not in annotation_services.judgment_listeners:
        annotation_services.judgment_listeners.append(report_judgment_listener)
    if report_consent_listener not in annotation_services.consent_listeners:
        annotation_services.consent_listeners.append(report_consent_listener)
