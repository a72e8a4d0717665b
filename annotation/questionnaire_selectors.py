"""Reads for questionnaires: the version asked, who still has one to answer, the answers as rows and counts,
and which annotators answered so (the report's `q.<question>=<value>` filters)."""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import median

from common.cache import cache_get_many, cache_set_many
from common.errors import ServiceError

from . import questionnaire_cache
from .questionnaire_models import Phase, Questionnaire, QuestionnaireResponse
from .questionnaire_schema import answer_text

FILTER_PREFIX = "q."
# Kinds whose answers a report can be restricted to (free text is not a category).
FILTERABLE = ("single", "multiple", "likert", "number")


def questionnaire_current(*, study, phase: str) -> Questionnaire | None:
    """The version asked now, or None when the study asks no questions in this phase."""
    current = Questionnaire.objects.filter(study=study, phase=phase).order_by("-version").first()
    return current if current is not None and current.questions else None


def questionnaire_pending(*, study, annotator, phase: str) -> Questionnaire | None:
    """The questionnaire the annotator still has to answer in this phase, or None (none asked, or answered, any version)."""
    current = questionnaire_current(study=study, phase=phase)
    if current is None or QuestionnaireResponse.objects.filter(study=study, phase=phase, annotator=annotator).exists():
        return None
    return current


# The listening pages ask on every load whether questions stand in the way: from the cache, so a study without
# questionnaires (or an annotator who answered) costs no query.
def questionnaire_blocks(*, study, annotator, phase: str) -> bool:
    """questionnaire_pending as a yes or no, through the cache."""
    return questionnaire_blocks_ids(study_id=study.pk, annotator_id=annotator.pk, phase=phase)


def questionnaire_blocks_ids(*, study_id: int, annotator_id: int, phase: str) -> bool:
    """questionnaire_blocks from the ids alone, for the APIs' submits that hold no study row (their locking query
    reads the study's id): once cached, no query at all."""
    asked, answered = questionnaire_cache.asked_key(study_id, phase), questionnaire_cache.answered_key(study_id, phase, annotator_id)
    found = cache_get_many(asked, answered)
    current = found.get(asked)
    if current is None:
        questionnaire = questionnaire_current(study=study_id, phase=phase)
        current = questionnaire.pk if questionnaire is not None else 0
        cache_set_many({asked: current}, questionnaire_cache.SECONDS)
    if not current or found.get(answered):
        return False
    done = QuestionnaireResponse.objects.filter(study_id=study_id, phase=phase, annotator_id=annotator_id).exists()
    if done:
        cache_set_many({answered: True}, questionnaire_cache.SECONDS)
    return not done


def _responses(study, annotators=None):
    # As with votes: an annotator who withdrew consent leaves every export and count made from then on.
    chosen = QuestionnaireResponse.objects.filter(study=study).exclude(annotator__annotator_profile__withdrawn_at__isnull=False)
    if annotators is not None:
        chosen = chosen.filter(annotator_id__in=annotators)
    return chosen.select_related("questionnaire", "annotator__annotator_profile", "annotator__external_participant__link").order_by("phase", "id")


def answer_rows(*, study) -> list[dict]:
    """One row per annotator × question asked (blank answer where an optional question was left out), with the version answered."""
    rows = []
    for response in _responses(study):
        profile = getattr(response.annotator, "annotator_profile", None)
        participant = getattr(response.annotator, "external_participant", None)
        for question in response.questionnaire.questions:
            value = response.answers.get(question["id"])
            rows.append({
                "annotator": profile.pseudonym if profile else f"user-{response.annotator_id}",
                "recruitment_link": (participant.link.label or participant.link.token[:6]) if participant else "",
                "phase": response.phase,
                "version": response.questionnaire.version,
                "question_id": question["id"],
                "kind": question["kind"],
                "question": question["text"],
                "answer": "" if value is None else (";".join(value) if isinstance(value, list) else value),
                "answer_label": answer_text(question, value),
                "answered_at": response.created_at.isoformat(),
            })  # fmt: skip
    return rows


ANSWER_COLUMNS = ["annotator", "recruitment_link", "phase", "version", "question_id", "kind", "question", "answer", "answer_label", "answered_at"]


def answer_summary(*, study, annotators=None) -> list[dict]:
    """Per phase, version and question: how many answered, and the counts per answer (free text: only how many wrote something).
    `annotators` (ids) restricts it to those people, as a dataset export does to the people whose votes it holds."""
    grouped: dict[tuple, dict] = {}
    values: dict[tuple, list] = defaultdict(list)
    for response in _responses(study, annotators):
        for position, question in enumerate(response.questionnaire.questions):
            key = (response.phase, response.questionnaire.version, question["id"])
            grouped.setdefault(key, {"phase": response.phase, "version": response.questionnaire.version, "question": question, "asked": 0, "position": position})
            grouped[key]["asked"] += 1
            value = response.answers.get(question["id"])
            if value is not None:
                values[key].append(value)
    summary = []
    for key, entry in grouped.items():
        question, answered = entry["question"], values[key]
        counts: list[tuple[str, int]] = []
        if question["kind"] in ("single", "multiple"):
            seen = Counter(v for value in answered for v in (value if isinstance(value, list) else [value]))
            counts = [(choice, seen[choice]) for choice in question["choices"]]
        elif question["kind"] == "likert":
            seen = Counter(answered)
            counts = [(answer_text(question, point), seen[point]) for point in range(1, len(question["scale"]) + 1)]
        numbers = {"median": median(answered), "min": min(answered), "max": max(answered)} if question["kind"] == "number" and answered else None
        summary.append({**entry, "answered": len(answered), "counts": counts, "numbers": numbers, "filterable": question["kind"] in FILTERABLE})
    order = {phase: i for i, phase in enumerate(Phase.values)}
    return sorted(summary, key=lambda s: (order[s["phase"]], -s["version"], s["position"]))


def answer_filters_parse(values) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`q.<question id>=<value>` pairs from query parameters (a QueryDict or a dict); several values of one question: any of them."""
    filters = []
    for key in sorted(k for k in values.keys() if str(k).startswith(FILTER_PREFIX)):
        raw = values.getlist(key) if hasattr(values, "getlist") else values[key]
        given = tuple(sorted({str(v).strip() for v in (raw if isinstance(raw, (list, tuple)) else [raw]) if str(v).strip()}))
        if given:
            filters.append((key[len(FILTER_PREFIX) :], given))
    return tuple(filters)


def _number_range(text: str, question: dict) -> tuple[float, float]:
    low, sep, high = text.partition("..")
    try:
        if not sep:
            return float(text), float(text)
        return (float(low) if low else float("-inf")), (float(high) if high else float("inf"))
    except ValueError:
        raise ServiceError(f"Filter q.{question['id']}={text}: give a number (q.{question['id']}=30) or a range (q.{question['id']}=18..30).", code="bad_filter") from None


def _matches(question: dict, answer, wanted: tuple[str, ...]) -> bool:
    if answer is None:
        return False
    kind = question["kind"]
    if kind == "multiple":
        return any(w in answer for w in wanted)
    if kind == "likert":
        # A Likert point may be named by its position or by its label.
        return any(w == str(answer) or w == question["scale"][answer - 1] for w in wanted)
    if kind == "number":
        return any(low <= answer <= high for low, high in (_number_range(w, question) for w in wanted))
    return answer in wanted


def annotators_answering(*, study, filters) -> set[int]:
    """Ids of the annotators whose answers match every filter (any version); a question the study never asked,
    a free-text question or a value no version offered raises a ServiceError that says which."""
    asked: dict[str, list[dict]] = defaultdict(list)
    for questions in Questionnaire.objects.filter(study=study).values_list("questions", flat=True):
        for question in questions:
            asked[question["id"]].append(question)
    for qid, wanted in filters:
        versions = asked.get(qid)
        if not versions:
            known = ", ".join(sorted(i for i, qs in asked.items() if qs[0]["kind"] in FILTERABLE)) or "none"
            raise ServiceError(f"Filter q.{qid}: this study's questionnaires have no question “{qid}” (questions to filter by: {known}).", code="bad_filter")
        kind = versions[0]["kind"]
        if kind not in FILTERABLE:
            raise ServiceError(f"Filter q.{qid}: free-text answers cannot filter a report; filter by a choice, Likert or number question.", code="bad_filter")
        offered = (
            {c for q in versions for c in q.get("choices", [])} | {label for q in versions for label in q.get("scale", [])} | {str(i) for q in versions for i in range(1, len(q.get("scale", [])) + 1)}
        )
        for w in wanted:
            if kind == "number":
                _number_range(w, versions[0])
            elif w not in offered:
                raise ServiceError(f"Filter q.{qid}={w}: not an answer this question offers (it offers: {', '.join(sorted(offered))}).", code="bad_filter")
    by_version = {q.pk: {x["id"]: x for x in q.questions} for q in Questionnaire.objects.filter(study=study)}
    people: dict[int, dict[str, tuple[dict, object]]] = defaultdict(dict)
    for annotator_id, questionnaire_id, answers in QuestionnaireResponse.objects.filter(study=study).values_list("annotator_id", "questionnaire_id", "answers"):
        for qid, value in answers.items():
            if qid in by_version[questionnaire_id]:
                people[annotator_id][qid] = (by_version[questionnaire_id][qid], value)
    return {annotator_id for annotator_id, answered in people.items() if all(qid in answered and _matches(answered[qid][0], answered[qid][1], wanted) for qid, wanted in filters)}


def datasheet_lines(*, studies, annotators) -> list[str]:
    """The datasheet's questionnaire section: counts per answer of the exported annotators (free text is not exported)."""
    lines = []
    for study in sorted(studies, key=lambda s: s.name):
        summary = answer_summary(study=study, annotators=annotators)
        if not summary:
            continue
        lines += ["", f"### {study.title or study.name}", "", "| phase | version | question | answered | answers |", "|---|---|---|---|---|"]
        for s in summary:
            if s["counts"]:
                shown = ", ".join(f"{label}: {n}" for label, n in s["counts"])
            elif s["numbers"]:
                shown = f"median {s['numbers']['median']:g} (from {s['numbers']['min']:g} to {s['numbers']['max']:g})"
            else:
                shown = "free text, not in this export" if s["question"]["kind"] == "text" else ""
            text = s["question"]["text"].replace("|", "/")
            lines.append(f"| {s['phase']} | {s['version']} | `{s['question']['id']}` {text} | {s['answered']} of {s['asked']} | {shown.replace('|', '/')} |")
    if not lines:
        return []
    return ["", "## Questionnaires", "", "What the annotators of these votes answered before and after their study, counted per answer (each answer keeps the version it answered).", *lines]
