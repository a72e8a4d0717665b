"""The headphone screen: attempts made and checked on the server, the pass rule and retries from the study's settings."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from common import audio_proof
from common.errors import ServiceError

from ..crowd_models import ScreeningAttempt
from ..models import Judgment, ScreeningKind
from ..screens import screen_for


def screening_exempt(*, study, annotator) -> bool:
    """A member who judged pairs here before the screen was turned on, in a study that screens only new members."""
    if study.screening_existing_members or study.screening_since is None:
        return False
    return Judgment.objects.filter(pair__study=study, annotator=annotator, created_at__lt=study.screening_since).exists()


def screening_status(*, study, annotator) -> dict:
    """"off", "passed", "open" (an attempt to take), or "failed" (no attempts left), with the attempts used.

    "off" too for a member the study does not screen (see `screening_exempt`).
    """
    if study.screening == ScreeningKind.OFF or screening_exempt(study=study, annotator=annotator):
        return {"state": "off", "attempts": 0, "allowed": 0}
    attempts = list(ScreeningAttempt.objects.filter(study=study, annotator=annotator).order_by("id"))
    allowed = 1 + study.screening_retries
    answered = [a for a in attempts if a.passed is not None]
    if any(a.passed for a in answered):
        return {"state": "passed", "attempts": len(answered), "allowed": allowed}
    if len(answered) >= allowed:
        return {"state": "failed", "attempts": len(answered), "allowed": allowed}
    return {"state": "open", "attempts": len(answered), "allowed": allowed}


@transaction.atomic
def screening_attempt_open(*, study, annotator) -> ScreeningAttempt:
    """The annotator's unanswered attempt, or a new one with a fresh seed while attempts remain."""
    status = screening_status(study=study, annotator=annotator)
    if status["state"] != "open":
        raise ServiceError(f"No screening to take here ({status['state']}).", code=f"screening_{status['state']}", status=409)
    current = ScreeningAttempt.objects.select_for_update().filter(study=study, annotator=annotator, passed__isnull=True).order_by("id").first()
    if current is not None:
        return current
    return ScreeningAttempt.objects.create(
        study=study,
        annotator=annotator,
        kind=study.screening,
        seed=secrets.randbits(62),
        trials=study.screening_trials,
        pass_mark=study.screening_pass,
    )


def screening_attempt_for(*, token: str, annotator) -> ScreeningAttempt:
    """The attempt behind a token, only for the annotator it was made for (anyone else: not found)."""
    attempt = ScreeningAttempt.objects.filter(token=token, annotator=annotator).first()
    if attempt is None:
        raise ServiceError("No such screening attempt for you.", code="not_found", status=404)
    return attempt


def screening_answer(*, token: str, annotator, answers) -> ScreeningAttempt:
    """Check the answers on the server and store the result; a second submission of one attempt is refused."""
    if not isinstance(answers, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in answers):
        raise ServiceError("Answer every sound with one of the numbers offered.", code="bad_answers")
    with transaction.atomic():
        attempt = ScreeningAttempt.objects.select_for_update().filter(token=token, annotator=annotator).first()
        if attempt is None:
            raise ServiceError("No such screening attempt for you.", code="not_found", status=404)
        if attempt.passed is not None:
            raise ServiceError("This check was already answered; its first answers stand.", code="already_answered", status=409)
        screen = screen_for(attempt.kind)
        if len(answers) != attempt.trials or any(a not in screen.choices for a in answers):
            raise ServiceError(f"Answer each of the {attempt.trials} sounds with {screen.choices_text()}.", code="bad_answers")
        attempt.answers = answers
        attempt.correct = screen.score(attempt.seed, answers)
        attempt.passed = attempt.correct >= attempt.pass_mark
        attempt.answered_at = timezone.now()
        attempt.save(update_fields=["answers", "correct", "passed", "answered_at"])
    return attempt


def screening_receipts_missing(*, attempt: ScreeningAttempt, receipts: dict[int, str]) -> list[int]:
    """The trials (0-based) the page has not proved receiving: each sound's Audio-Proof answered with its bytes
    (common.audio_proof), given per trial as the form's JSON receipt. A malformed, forged or other sound's receipt
    raises the ServiceError that says so; a missing one is listed."""
    urls = {str(i): reverse("screening-trial", kwargs={"token": attempt.token, "index": i}) for i in range(attempt.trials)}
    # Each sound is made and sent whole per request (no ranges): the receipts alone show what was received.
    proven = {int(side) for side in audio_proof.whole_response_sides(fields={str(i): raw for i, raw in receipts.items()}, urls=urls, label="sound")}
    return [i for i in range(attempt.trials) if i not in proven]
