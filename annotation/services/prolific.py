"""Prolific through its API: the study's token, tying a link to a Prolific study, fetching its submissions, and
approving, rejecting and paying bonuses, one at a time or by rule.

Requests of the researcher only write what is owed (a decision or a bonus row, state `pending`) and queue
`prolific_work` for the tie once committed; the task sends it. Every step can be repeated:
- a transition (approve, reject) is idempotent at Prolific (its docs), so a pending or half-sent one is sent again;
- a bonus is one row per (link's tie, participant, reason): asking again for the same reason adds nothing;
- a bulk's row is marked `sent` with its bulk id and idempotency key *before* the pay call, because Prolific's pay
  endpoint is not idempotent (its docs) and pays asynchronously. A `sent` row is never paid again blindly: the next
  run reads the submission's bonus_payments first, marks it paid if the bonus is there, and re-sends the pay of the
  same bulk id with the same key only when Prolific still shows nothing PROLIFIC_PAY_RECHECK_S after the send.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.errors import ServiceError

from .. import jobs
from ..crowd_models import ExternalParticipant, RecruitmentLink
from ..prolific import STUDY_ID, ProlificClient, ProlificError, TokenUnreadable, token_decrypt, token_encrypt
from ..prolific_models import BonusState, Decision, ProlificBonus, ProlificCredential, ProlificStudyTie, ProlificSubmission, WorkState, new_key
from ..prolific_selectors import participant_quality
from .recruitment import participant_hash

# Prolific's rejection categories (docs: "Approve or reject a submission"), with what the researcher reads.
REJECTION_CATEGORIES = [
    ("TOO_QUICKLY", "Completed too quickly"),
    ("TOO_SLOWLY", "Completed too slowly"),
    ("FAILED_INSTRUCTIONS", "Did not follow the instructions"),
    ("INCOMP_LONGITUDINAL", "Did not complete a longitudinal study"),
    ("FAILED_CHECK", "Failed attention or quality checks"),
    ("LOW_EFFORT", "Low effort"),
    ("MALINGERING", "Malingering"),
    ("NO_CODE", "No completion code"),
    ("BAD_CODE", "Wrong completion code"),
    ("NO_DATA", "No data"),
    ("UNSUPP_DEVICE", "Unsupported device"),
    ("OTHER", "Other"),
]
# Prolific refuses a rejection whose message to the participant is shorter than this.
MIN_REJECT_MESSAGE = 100
MAX_PAGES = 200
AWAITING_REVIEW = "AWAITING REVIEW"


def _awaiting(status: str) -> bool:
    return status.replace("_", " ").upper() == AWAITING_REVIEW


@dataclass(frozen=True)
class Rule:
    """Which matched participants a bulk action is for; every condition set must hold."""

    completed: bool = False
    screen_passed: bool = False
    gold_min: float | None = None
    gold_below: float | None = None

    def describe(self) -> str:
        parts = ["completed the study"] * self.completed + ["passed the headphone check"] * self.screen_passed
        if self.gold_min is not None:
            parts.append(f"gold accuracy ≥ {self.gold_min:.0%}")
        if self.gold_below is not None:
            parts.append(f"gold accuracy < {self.gold_below:.0%}")
        return ", ".join(parts) or "every matched participant"


# --- Token and tie --------------------------------------------------------------------------------------


def prolific_token_set(*, study, token: str, user=None) -> ProlificCredential:
    token = (token or "").strip()
    if not 20 <= len(token) <= 400 or not token.isascii() or not token.isprintable() or " " in token:
        # The message never repeats what was typed: it may be most of a real token.
        raise ServiceError("That does not look like a Prolific API token (20 to 400 printable characters, no spaces); copy it again from Prolific's API tokens page.", code="bad_token")
    credential, _ = ProlificCredential.objects.update_or_create(study=study, defaults={"token_ciphertext": token_encrypt(token), "set_by": user})
    return credential


def prolific_token_clear(*, study) -> int:
    return ProlificCredential.objects.filter(study=study).delete()[0]


def prolific_tie(*, study, link_id: int, prolific_study_id: str) -> ProlificStudyTie:
    prolific_study_id = (prolific_study_id or "").strip()
    if not STUDY_ID.match(prolific_study_id):
        raise ServiceError("A Prolific study id is letters and digits only (e.g. 60f6acb180a7b59ac0621f9e), as in the study's Prolific URL.", code="bad_study_id")
    link = RecruitmentLink.objects.filter(pk=link_id, study=study).first()
    if link is None:
        raise ServiceError("No such recruitment link in this study.", code="not_found", status=404)
    tie, _ = ProlificStudyTie.objects.update_or_create(link=link, defaults={"prolific_study_id": prolific_study_id})
    return tie


def _tie(study, tie_id: int) -> ProlificStudyTie:
    tie = ProlificStudyTie.objects.filter(pk=tie_id, link__study=study).select_related("link__study").first()
    if tie is None:
        raise ServiceError("No such Prolific study tied to this study's links.", code="not_found", status=404)
    return tie


def _client(study) -> ProlificClient:
    credential = ProlificCredential.objects.filter(study=study).first()
    if credential is None:
        raise ServiceError("No Prolific API token is stored for this study; enter one first.", code="no_token", status=409)
    try:
        return ProlificClient(token=token_decrypt(credential.token_ciphertext), study=study)
    except TokenUnreadable as exc:
        raise ServiceError(str(exc), code="token_unreadable", status=409) from None


# --- Submissions ----------------------------------------------------------------------------------------


def prolific_submissions_fetch(*, study, tie_id: int) -> dict:
    """Read the Prolific study's submissions (every page) and match each to an account by the participant id's keyed hash."""
    tie = _tie(study, tie_id)
    client = _client(study)
    path, results = f"studies/{tie.prolific_study_id}/submissions/", []
    for _ in range(MAX_PAGES):
        try:
            answer = client.call("GET", path)
        except ProlificError as exc:
            raise ServiceError(f"{exc.message}. Nothing was changed; try again.", code="prolific_failed", status=502) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
            raise ServiceError("Prolific's answer to the submissions list has no results; nothing was changed.", code="prolific_failed", status=502)
        results.extend(r for r in answer["results"] if isinstance(r, dict) and r.get("id"))
        following = ((answer.get("_links") or {}).get("next") or {}).get("href") if isinstance(answer.get("_links"), dict) else None
        if not following or not str(following).startswith(client.base):
            break
        path = str(following)[len(client.base) :]
    hashes = {participant_hash(str(r.get("participant_id") or r.get("participant") or "")): r for r in results}
    accounts = {p.participant_hash: p for p in ExternalParticipant.objects.filter(study=study, participant_hash__in=hashes, duplicate_claim=False)}
    matched = 0
    with transaction.atomic():
        for key, row in hashes.items():
            participant = accounts.get(key)
            matched += participant is not None
            defaults = {"participant": participant, "status": str(row.get("status") or "")[:40]}
            if isinstance(row.get("bonus_payments"), list):
                defaults["bonus_cents"] = [int(c) for c in row["bonus_payments"] if isinstance(c, (int, float))]
            ProlificSubmission.objects.update_or_create(tie=tie, submission_id=str(row["id"])[:64], defaults=defaults)
        tie.synced_at = timezone.now()
        tie.save(update_fields=["synced_at"])
    return {"submissions": len(hashes), "matched": matched}


def _chosen(tie: ProlificStudyTie, rule: Rule, submission_pk: int | None) -> list[ProlificSubmission]:
    rows = ProlificSubmission.objects.filter(tie=tie, participant__isnull=False).select_related("participant")
    if submission_pk is not None:
        rows = rows.filter(pk=submission_pk)
        if not rows:
            raise ServiceError("That submission is not one of this Prolific study's matched submissions; fetch the submissions again.", code="not_found", status=404)
        return list(rows)
    rows = list(rows)
    quality = participant_quality(study=tie.link.study, participants=[r.participant for r in rows])
    chosen = []
    for row in rows:
        q = quality[row.participant_id]
        if rule.completed and row.participant.completed_at is None:
            continue
        if rule.screen_passed and q["screen_passed"] is not True:
            continue
        if rule.gold_min is not None and (q["gold"] is None or q["gold"] < rule.gold_min):
            continue
        if rule.gold_below is not None and (q["gold"] is None or q["gold"] >= rule.gold_below):
            continue
        chosen.append(row)
    return chosen


# --- Approve and reject -----------------------------------------------------------------------------------


def prolific_decide(
    *, study, tie_id: int, action: str, rule: Rule = Rule(), submission_pk: int | None = None, rejection_category: str = "", message: str = "", user=None
) -> dict:
    """Record an approval or a rejection for the chosen submissions awaiting review, and queue sending them."""
    tie = _tie(study, tie_id)
    _client(study)  # refuse now, not in the worker, when no usable token is stored
    if action not in Decision.values:
        raise ServiceError("Choose approve or reject.", code="bad_action")
    message = (message or "").strip()
    if action == Decision.REJECT:
        if rejection_category not in dict(REJECTION_CATEGORIES):
            raise ServiceError("Choose one of Prolific's rejection categories.", code="bad_category")
        if len(message) < MIN_REJECT_MESSAGE:
            raise ServiceError(f"Prolific needs a message to the participant of at least {MIN_REJECT_MESSAGE} characters explaining the rejection ({len(message)} given).", code="short_message")
    else:
        rejection_category, message = "", ""
    chosen = _chosen(tie, rule, submission_pk)
    open_ = [s for s in chosen if _awaiting(s.status) and s.decision_state not in (WorkState.DONE,)]
    now = timezone.now()
    with transaction.atomic():
        count = ProlificSubmission.objects.filter(pk__in=[s.pk for s in open_]).exclude(decision_state=WorkState.DONE).update(
            decision=action, decision_state=WorkState.PENDING, rejection_category=rejection_category, message=message, decided_by=user, decided_at=now, error=""
        )
        if count:
            jobs.prolific_work_on_commit(tie_id=tie.pk)
    return {"queued": count, "skipped": len(chosen) - count}


def _send_decisions(tie: ProlificStudyTie, client: ProlificClient) -> dict:
    sent = failed = 0
    for sub in ProlificSubmission.objects.filter(tie=tie, decision_state__in=[WorkState.PENDING, WorkState.SENDING]):
        if not ProlificSubmission.objects.filter(pk=sub.pk, decision_state__in=[WorkState.PENDING, WorkState.SENDING]).update(decision_state=WorkState.SENDING):
            continue
        body = {"action": sub.decision}
        if sub.decision == Decision.REJECT:
            body |= {"message": sub.message, "rejection_category": sub.rejection_category}
        try:
            answer = client.call("POST", f"submissions/{sub.submission_id}/transition/", body=body, key=f"transition-{sub.pk}-{sub.decision}")
        except ProlificError as exc:
            ProlificSubmission.objects.filter(pk=sub.pk).update(decision_state=WorkState.FAILED, error=exc.message[:500])
            failed += 1
            continue
        status = str(answer.get("status") or "")[:40] if isinstance(answer, dict) else ""
        ProlificSubmission.objects.filter(pk=sub.pk).update(decision_state=WorkState.DONE, error="", **({"status": status} if status else {}))
        sent += 1
    return {"decisions_sent": sent, "decisions_failed": failed}


# --- Bonuses ----------------------------------------------------------------------------------------------


def _amount(value) -> Decimal:
    try:
        amount = Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    except Exception:
        raise ServiceError("A bonus is an amount such as 0.50 (in the Prolific study's currency).", code="bad_amount") from None
    if not Decimal("0.01") <= amount <= Decimal(str(settings.PROLIFIC_MAX_BONUS)):
        raise ServiceError(f"A bonus is from 0.01 to {settings.PROLIFIC_MAX_BONUS:.2f} per participant (in the Prolific study's currency).", code="bad_amount")
    return amount


def prolific_bonus(*, study, tie_id: int, amount, reason: str, rule: Rule = Rule(), submission_pk: int | None = None, user=None) -> dict:
    """Owe a bonus to each chosen participant for `reason` (once per participant and reason), and queue paying them."""
    tie = _tie(study, tie_id)
    _client(study)
    amount = _amount(amount)
    reason = (reason or "").strip()
    if not 1 <= len(reason) <= 100:
        raise ServiceError("Name the bonus's reason (1 to 100 characters, e.g. “gold accuracy ≥ 80%”): one bonus per participant and reason.", code="bad_reason")
    chosen = _chosen(tie, rule, submission_pk)
    created = 0
    with transaction.atomic():
        for sub in chosen:
            _, made = ProlificBonus.objects.get_or_create(
                tie=tie, participant=sub.participant, reason=reason, defaults={"submission": sub, "amount": amount, "created_by": user}
            )  # fmt: skip
            created += made
        if created or tie.bonuses.exclude(state__in=[BonusState.PAID, BonusState.FAILED]).exists():
            jobs.prolific_work_on_commit(tie_id=tie.pk)
    return {"created": created, "already": len(chosen) - created}


def _cents(amount: Decimal) -> int:
    return int((amount * 100).to_integral_value(rounding=ROUND_HALF_UP))


def _confirm_sent(tie: ProlificStudyTie, client: ProlificClient, now) -> dict:
    """Settle bulks whose pay answer was lost: paid if Prolific shows the bonus, re-sent (same bulk id and key) if it still shows none after the wait."""
    confirmed = resent = 0
    for bulk_id in tie.bonuses.filter(state=BonusState.SENT).order_by().values_list("bulk_id", flat=True).distinct():
        rows = list(tie.bonuses.filter(state=BonusState.SENT, bulk_id=bulk_id).select_related("submission"))
        seen: dict[int, list[int]] = {}
        for row in rows:
            if row.submission_id not in seen:
                try:
                    answer = client.call("GET", f"submissions/{row.submission.submission_id}/")
                except ProlificError:
                    seen[row.submission_id] = None
                    continue
                cents = [int(c) for c in (answer.get("bonus_payments") or []) if isinstance(c, (int, float))] if isinstance(answer, dict) else []
                ProlificSubmission.objects.filter(pk=row.submission_id).update(bonus_cents=cents)
                seen[row.submission_id] = cents
        paid = []
        for row in rows:
            cents = seen.get(row.submission_id)
            if cents is None:
                continue
            want = _cents(row.amount)
            # Bonuses of this amount already counted as ours on this submission; one more in Prolific's list is this one.
            ours = ProlificBonus.objects.filter(submission_id=row.submission_id, state=BonusState.PAID, amount=row.amount).count() + sum(1 for p in paid if p.submission_id == row.submission_id and p.amount == row.amount)
            if cents.count(want) > ours:
                paid.append(row)
        if paid:
            confirmed += ProlificBonus.objects.filter(pk__in=[p.pk for p in paid], state=BonusState.SENT).update(state=BonusState.PAID, paid_at=now, error="")
        waiting = [r for r in rows if r not in paid]
        if not waiting or any(seen.get(r.submission_id) is None for r in waiting):
            continue
        if paid or tie.bonuses.filter(bulk_id=bulk_id, state=BonusState.PAID).exists():
            # Prolific pays a bulk as a whole; sending it again would pay the confirmed rows twice.
            ProlificBonus.objects.filter(pk__in=[r.pk for r in waiting]).update(error="Part of this bulk is paid and this bonus is not shown yet; check it on Prolific's site.")
            continue
        sent_at = waiting[0].sent_at
        # Never while the first pay may still be waiting for its answer (another run's, or this one's own).
        if sent_at and now - sent_at < timedelta(seconds=max(settings.PROLIFIC_PAY_RECHECK_S, 2 * settings.PROLIFIC_TIMEOUT_S)):
            continue
        # Claimed by moving sent_at: of two runs that both got here, one re-sends.
        if ProlificBonus.objects.filter(tie=tie, bulk_id=bulk_id, state=BonusState.SENT, sent_at=sent_at).update(sent_at=now) != len(waiting):
            continue
        resent += 1
        _pay(client, bulk_id, waiting[0].idempotency_key, [r.pk for r in waiting], now)
    return {"bonuses_confirmed": confirmed, "pays_resent": resent}


def _pay(client: ProlificClient, bulk_id: str, key: str, pks: list[int], now) -> None:
    try:
        client.call("POST", f"bulk-bonus-payments/{bulk_id}/pay/", body={}, key=key, retry=False)
    except ProlificError as exc:
        if exc.ambiguous:
            # It may have paid: the row stays `sent` and the next run checks Prolific before anything is sent again.
            ProlificBonus.objects.filter(pk__in=pks).update(error=f"{exc.message}; checking Prolific before paying again"[:500])
        else:
            ProlificBonus.objects.filter(pk__in=pks).update(state=BonusState.FAILED, error=exc.message[:500])
        return
    ProlificBonus.objects.filter(pk__in=pks, state=BonusState.SENT).update(state=BonusState.PAID, paid_at=now, error="")


def _send_bonuses(tie: ProlificStudyTie, client: ProlificClient, now) -> dict:
    # A claim older than every retry of a set-up could take was left by a worker that died: set-ups pay nothing, so it starts again.
    stale = now - timedelta(seconds=(settings.PROLIFIC_TIMEOUT_S + settings.PROLIFIC_BACKOFF_S * 2**settings.PROLIFIC_RETRIES) * (settings.PROLIFIC_RETRIES + 1) + 60)
    tie.bonuses.filter(state=BonusState.CLAIMED, sent_at__lt=stale).update(state=BonusState.PENDING)
    bulks = failed = 0
    while True:
        chunk = list(tie.bonuses.filter(state=BonusState.PENDING).values_list("pk", flat=True)[: settings.PROLIFIC_BONUS_CHUNK])
        if not chunk:
            break
        key = new_key()
        if not ProlificBonus.objects.filter(pk__in=chunk, state=BonusState.PENDING).update(state=BonusState.CLAIMED, idempotency_key=key, sent_at=now):
            continue
        rows = list(ProlificBonus.objects.filter(pk__in=chunk, state=BonusState.CLAIMED, idempotency_key=key).select_related("submission"))
        csv = "".join(f"{r.submission.submission_id},{r.amount}\n" for r in rows)
        pks = [r.pk for r in rows]
        try:
            answer = client.call("POST", "submissions/bonus-payments/", body={"study_id": tie.prolific_study_id, "csv_bonuses": csv}, key=f"setup-{key}")
            bulk_id = str(answer.get("id") or "") if isinstance(answer, dict) else ""
            if not bulk_id:
                raise ProlificError("Prolific's answer to the bonus set-up has no id")
        except ProlificError as exc:
            # A set-up pays nothing: one Prolific refused is shown; one that got no answer is tried again next run.
            state = BonusState.PENDING if exc.ambiguous or exc.status is None else BonusState.FAILED
            ProlificBonus.objects.filter(pk__in=pks).update(state=state, error=exc.message[:500])
            failed += len(pks)
            if state == BonusState.PENDING:
                break
            continue
        # Recorded before the pay call: from here on a lost answer is checked, never paid again blindly.
        ProlificBonus.objects.filter(pk__in=pks).update(state=BonusState.SENT, bulk_id=bulk_id[:64], sent_at=timezone.now())
        _pay(client, bulk_id, key, pks, timezone.now())
        bulks += 1
    return {"bulks": bulks, "bonuses_failed": failed}


def prolific_work(*, tie_id: int, now=None) -> dict:
    """Send the tie's pending decisions and bonuses, and settle lost pay answers; idempotent (the task's body)."""
    tie = ProlificStudyTie.objects.filter(pk=tie_id).select_related("link__study").first()
    if tie is None:
        return {}
    try:
        client = _client(tie.link.study)
    except ServiceError as exc:
        ProlificSubmission.objects.filter(tie=tie, decision_state=WorkState.PENDING).update(error=exc.message[:500])
        tie.bonuses.filter(state=BonusState.PENDING).update(error=exc.message[:500])
        return {"error": exc.message}
    now = now or timezone.now()
    summary = _send_decisions(tie, client)
    summary |= _confirm_sent(tie, client, now)
    summary |= _send_bonuses(tie, client, now)
    return summary


def prolific_work_queue(*, study, tie_id: int) -> int:
    """Queue the tie's work again (after a lost answer or a worker that stopped); returns how many items wait."""
    tie = _tie(study, tie_id)
    waiting = tie.bonuses.exclude(state__in=[BonusState.PAID, BonusState.FAILED]).count()
    waiting += ProlificSubmission.objects.filter(tie=tie).filter(Q(decision_state=WorkState.PENDING) | Q(decision_state=WorkState.SENDING)).count()
    if waiting:
        jobs.prolific_work_on_commit(tie_id=tie.pk)
    return waiting
