"""Reads for adjudication: who may settle a study's disputed pairs, the queue of those pairs (lowest agreement
first, each with why it is there), one pair's votes and judge verdicts, and the provenance the export writes.

Answers are in the pair's stored order throughout (clip_a, clip_b), like the models: a vote for the clip
shown as A on one annotator's screen may be clip_b. Imported both / neither votes count as answers of their own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.apps import apps
from django.db.models import Q

from common.crowd import aggregate

from .adjudication_models import Adjudication, StudyAdjudicator
from .models import Judgment, Pair, Study
from .selectors import study_writable_by

DIMENSIONS = ("alignment", "musicality")
# A pair is queued when, on either dimension, the most common answer holds less than this share of its votes
# (2 of 3 is 0.67 and queued, 3 of 4 is 0.75 and not) ...
AGREEMENT_BELOW = 0.75
# ... or Dawid–Skene, weighing each voter by their reliability in the study, is less sure than this ...
POSTERIOR_BELOW = 0.8
# ... or a judge's position-consistent verdict names the other clip than a strict human majority.
# Only pairs with at least this many votes: one vote says nothing about agreement.
MIN_VOTES = 2

UNANIMOUS, MAJORITY, ADJUDICATED, UNRESOLVED = "unanimous", "majority", "adjudicated", "unresolved"


def is_adjudicator(*, study: Study, user) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and StudyAdjudicator.objects.filter(study=study, user=user).exists()


def adjudication_readable_by(*, study: Study, user) -> bool:
    """The queue and its items (votes, rationales, verdicts): the study's adjudicators, and whoever may change the study."""
    return is_adjudicator(study=study, user=user) or study_writable_by(study=study, user=user)


def adjudicators_of(*, study: Study):
    return [grant.user for grant in StudyAdjudicator.objects.filter(study=study).select_related("user").order_by("user__username")]


def adjudicated_clip_audible(*, user, clip) -> bool:
    """The clip rule's adjudicator question (annotation.access.clip_audible_by): a clip (or reference) of a pair of a
    study the user adjudicates."""
    mine = StudyAdjudicator.objects.filter(user=user).values("study")
    return Pair.objects.filter(Q(clip_a=clip) | Q(clip_b=clip) | Q(condition__reference=clip), study__in=mine).exists()


def counted_votes(*, study: Study):
    """The votes adjudication weighs: the study's regular pairs, without seeded demo votes and without annotators who
    withdrew or were excluded (as the export and the report leave them out)."""
    return (
        Judgment.objects.filter(pair__study=study, pair__kind=Pair.Kind.REGULAR)
        .exclude(source=Judgment.Source.SEEDED)
        .exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
        .exclude(annotator__annotator_profile__excluded_at__isnull=False)
    )


def answer_of(*, choice_id: int | None, tie: str, clip_a_id: int) -> str:
    if choice_id is None:
        return tie
    return "clip_a" if choice_id == clip_a_id else "clip_b"


def agreement_of(answers: list[str]) -> float | None:
    """Share of the votes that give the most common answer; None without votes."""
    if not answers:
        return None
    return Counter(answers).most_common(1)[0][1] / len(answers)


def strict_majority(answers: list[str]) -> str | None:
    """The answer more than half the votes give, else None."""
    if not answers:
        return None
    answer, count = Counter(answers).most_common(1)[0]
    return answer if count * 2 > len(answers) else None


def provenance_of(answers: list[str], *, adjudicated: bool) -> str:
    """How a pair's label on one dimension was settled: `adjudicated` once an adjudicator decided it; else
    `unanimous` when every vote (one or more) gives the same answer, `majority` when more than half do,
    `unresolved` when none does (a split, or no vote)."""
    if adjudicated:
        return ADJUDICATED
    if not answers:
        return UNRESOLVED
    if len(set(answers)) == 1:
        return UNANIMOUS
    return MAJORITY if strict_majority(answers) is not None else UNRESOLVED


@dataclass
class QueueItem:
    pair_id: int
    votes: int
    answers: dict[str, list[str]]
    agreement: dict[str, float]
    posterior: dict[str, float | None] = field(default_factory=dict)
    judge: dict | None = None
    reasons: list[str] = field(default_factory=list)
    decision: Adjudication | None = None

    @property
    def lowest_agreement(self) -> float:
        return min(self.agreement.values())

    @property
    def lowest_posterior(self) -> float:
        known = [p for p in self.posterior.values() if p is not None]
        return min(known) if known else 1.0

    @property
    def tally_alignment(self) -> str:
        return self.tally("alignment")

    @property
    def tally_musicality(self) -> str:
        return self.tally("musicality")

    def tally(self, dim: str) -> str:
        counts = Counter(self.answers[dim])
        names = {"clip_a": "A", "clip_b": "B"}
        return " · ".join(f"{names.get(answer, answer)} {n}" for answer, n in sorted(counts.items()))


def _latest_verdicts(pair_ids) -> dict[int, dict]:
    """Pair id -> its newest position-consistent judge verdict (`ok`: the judge gave the same answer in both orders)."""
    verdict_model = apps.get_model("scoring", "Verdict")
    rows = (
        verdict_model.objects.filter(pair_id__in=pair_ids, status="ok")
        .order_by("pair_id", "-created_at", "-id")
        .values("pair_id", "alignment_choice_id", "musicality_choice_id", "rationale", "run__judge__key", "run_id")
    )
    out: dict[int, dict] = {}
    for row in rows:
        out.setdefault(row["pair_id"], row)
    return out


def _posteriors(rows, clip_a: dict[int, int]) -> dict[tuple[int, str], float]:
    """(pair id, dimension) -> Dawid–Skene's probability of its more likely clip, fitted on the study's two-valued votes."""
    out = {}
    for dim in DIMENSIONS:
        fitted = [r for r in rows if r[f"{dim}_choice_id"] is not None]
        if not fitted:
            continue
        result = aggregate(
            [r["annotator_id"] for r in fitted], [r["pair_id"] for r in fitted], [int(r[f"{dim}_choice_id"] == clip_a[r["pair_id"]]) for r in fitted], rounds=0, methods=("dawid_skene",)
        )
        for pair_id, p in result.labels["p_dawid_skene"].items():
            if p == p:  # not NaN
                out[(int(pair_id), dim)] = max(float(p), 1.0 - float(p))
    return out


def adjudication_queue(*, study: Study, include_decided: bool = True) -> list[QueueItem]:
    """The study's disputed pairs, lowest agreement first (then least sure posterior, then pair id), each with its reasons;
    decided ones after the open ones when `include_decided`."""
    rows = list(counted_votes(study=study).values("pair_id", "annotator_id", "alignment_choice_id", "alignment_tie", "musicality_choice_id", "musicality_tie"))
    clip_a = dict(Pair.objects.filter(study=study, kind=Pair.Kind.REGULAR).values_list("pk", "clip_a_id"))
    by_pair: dict[int, list[dict]] = {}
    for row in rows:
        by_pair.setdefault(row["pair_id"], []).append(row)
    disputed = {pid: votes for pid, votes in by_pair.items() if len(votes) >= MIN_VOTES}
    posterior = _posteriors([r for r in rows if r["pair_id"] in disputed], clip_a)
    verdicts = _latest_verdicts(list(disputed))
    decisions = {d.pair_id: d for d in Adjudication.objects.filter(pair__study=study).select_related("adjudicator__annotator_profile")}
    items = []
    for pair_id, votes in disputed.items():
        answers = {dim: [answer_of(choice_id=v[f"{dim}_choice_id"], tie=v[f"{dim}_tie"], clip_a_id=clip_a[pair_id]) for v in votes] for dim in DIMENSIONS}
        item = QueueItem(pair_id=pair_id, votes=len(votes), answers=answers, agreement={dim: agreement_of(answers[dim]) for dim in DIMENSIONS})
        item.posterior = {dim: posterior.get((pair_id, dim)) for dim in DIMENSIONS}
        for dim in DIMENSIONS:
            if item.agreement[dim] < AGREEMENT_BELOW:
                item.reasons.append(f"{dim}: split vote ({item.tally(dim)})")
            elif item.posterior[dim] is not None and item.posterior[dim] < POSTERIOR_BELOW:
                item.reasons.append(f"{dim}: Dawid–Skene only {item.posterior[dim]:.2f} sure")
        verdict = verdicts.get(pair_id)
        if verdict is not None:
            item.judge = {"judge": verdict["run__judge__key"], "rationale": verdict["rationale"], "run_id": verdict["run_id"]}
            for dim in DIMENSIONS:
                choice = verdict[f"{dim}_choice_id"]
                majority = strict_majority(answers[dim])
                item.judge[dim] = None if choice is None else answer_of(choice_id=choice, tie="", clip_a_id=clip_a[pair_id])
                item.judge[f"{dim}_side"] = {"clip_a": "A", "clip_b": "B"}.get(item.judge[dim])
                if choice is not None and majority in ("clip_a", "clip_b") and item.judge[dim] != majority:
                    item.reasons.append(f"{dim}: judge {verdict['run__judge__key']} against the human majority")
        if not item.reasons:
            continue
        item.decision = decisions.get(pair_id)
        if item.decision is None or include_decided:
            items.append(item)
    items.sort(key=lambda i: (i.decision is not None, i.lowest_agreement, i.lowest_posterior, i.pair_id))
    return items


def queue_item_of(*, study: Study, pair_id: int) -> QueueItem | None:
    return next((item for item in adjudication_queue(study=study) if item.pair_id == pair_id), None)


def adjudication_pair(*, study: Study, pair_id: int) -> Pair | None:
    return Pair.objects.filter(study=study, pk=pair_id, kind=Pair.Kind.REGULAR).select_related("condition__reference").first()


def decision_of(*, pair: Pair) -> Adjudication | None:
    return Adjudication.objects.filter(pair=pair).select_related("adjudicator__annotator_profile").first()


def pair_votes_shown(*, study: Study, pair: Pair) -> list[dict]:
    """The pair's counted votes as the item page lists them: pseudonym, answer per dimension (A = clip_a), confidence, rationale."""
    names = {"clip_a": "A", "clip_b": "B"}
    out = []
    for j in counted_votes(study=study).filter(pair=pair).select_related("annotator__annotator_profile").order_by("created_at", "pk"):
        profile = getattr(j.annotator, "annotator_profile", None)
        row = {"pseudonym": profile.pseudonym if profile else "", "rationale": j.rationale, "at": j.created_at}
        for dim in DIMENSIONS:
            answer = answer_of(choice_id=getattr(j, f"{dim}_choice_id"), tie=getattr(j, f"{dim}_tie"), clip_a_id=pair.clip_a_id)
            row[dim] = names.get(answer, answer)
            row[f"{dim}_confidence"] = getattr(j, f"{dim}_confidence")
        out.append(row)
    return out


def decision_text(decision: Adjudication) -> str:
    names = {"clip_a": "A", "clip_b": "B", "tie": "tie"}
    profile = getattr(decision.adjudicator, "annotator_profile", None)
    who = profile.pseudonym if profile else decision.adjudicator.get_username()
    return f"instruction following {names[decision.alignment]}, musicality {names[decision.musicality]}, by {who} at {decision.decided_at:%Y-%m-%d %H:%M} UTC: “{decision.reason}”"


def in_row_terms(verdict: str | None, *, shown_a_is_clip_a: bool) -> str | None:
    """An adjudicated answer as an export row states preferences: model_a is the clip at the row's audio-path."""
    if verdict is None or verdict == "tie":
        return verdict
    return "model_a" if (verdict == "clip_a") == shown_a_is_clip_a else "model_b"


def provenance_columns(judgments) -> dict[int, dict]:
    """Pair id -> the export's provenance keys for each of its rows, from the exported votes and the pair's decision
    (`adjudicated-<dimension>` in the pair's stored order: the exporter puts it in each row's terms, `in_row_terms`)."""
    answers: dict[int, dict[str, list[str]]] = {}
    for j in judgments:
        per_dim = answers.setdefault(j.pair_id, {dim: [] for dim in DIMENSIONS})
        for dim in DIMENSIONS:
            per_dim[dim].append(answer_of(choice_id=getattr(j, f"{dim}_choice_id"), tie=getattr(j, f"{dim}_tie"), clip_a_id=j.pair.clip_a_id))
    decisions = {d.pair_id: d for d in Adjudication.objects.filter(pair_id__in=list(answers)).select_related("adjudicator__annotator_profile")}
    out = {}
    for pair_id, per_dim in answers.items():
        decision = decisions.get(pair_id)
        profile = getattr(decision.adjudicator, "annotator_profile", None) if decision else None
        out[pair_id] = {
            **{f"provenance-{dim}": provenance_of(per_dim[dim], adjudicated=decision is not None) for dim in DIMENSIONS},
            **{f"adjudicated-{dim}": getattr(decision, dim) if decision else None for dim in DIMENSIONS},
            "adjudicated_by": (profile.pseudonym if profile else None) if decision else None,
            "adjudicated_at": decision.decided_at.isoformat().replace("+00:00", "Z") if decision else None,
        }
    return out


def adjudication_studies_of(*, user):
    """Studies the user was named an adjudicator of (their home page links each queue)."""
    if not getattr(user, "is_authenticated", False):
        return Study.objects.none()
    return Study.objects.filter(adjudicator_grants__user=user).order_by("name")
