"""A hand-checked study for the report tests: eight pairs over four modalities, known human votes and two judges' known answers."""

from __future__ import annotations

from decimal import Decimal

from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory

MODALITY_OF = {1: "text", 2: "text", 3: "text+lyrics", 4: "text+lyrics", 5: "text+ref", 6: "text+ref", 7: "text+lyrics+ref", 8: "text+lyrics+ref"}


# Human votes per pair: (chosen clip "a"/"b", confidence); the same on both dimensions.
HUMANS = {
    1: [("a", "4.0"), ("a", "5.0")],  # majority a, confidence 4.5 (>3)
    2: [("b", "2.0")],  # b, 2 (<3)
    3: [("a", "3.0"), ("b", "3.0")],  # tie: dropped from accuracy
    4: [("b", "3.0"), ("b", "3.0"), ("a", "5.0")],  # b, 3 (=3)
    5: [("a", "3.0")],  # a, 3 (=3)
    6: [("b", "4.0")],  # b, 4 (>3)
    7: [("a", "1.0")],  # a, 1 (<3)
    8: [("a", "5.0"), ("a", "4.0"), ("b", "1.0")],  # a, 4.5 (>3)
}


# Judge 1 answers with clip choices; on musicality it gets pair 2 right as well.
R1_ALIGNMENT = {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "b", 7: "a", 8: "b"}


R1_MUSICALITY = {**R1_ALIGNMENT, 2: "b"}


# Judge 2 gives scores only; pair 2 is a score tie (predicts B); 4 is discarded, 5 failed.
R2_SCORES = {1: (0.9, 0.1), 2: (0.5, 0.5), 3: (0.4, 0.6), 6: (0.2, 0.8), 7: (0.3, 0.6), 8: (0.7, 0.2)}


def build_study(name="judged"):
    study = StudyFactory(name=name, title="Judged study")
    reference = ClipFactory(kind="reference")
    conditions = {
        "text": ConditionFactory(),
        "text+lyrics": ConditionFactory(lyrics="la la la"),
        "text+ref": ConditionFactory(reference=reference),
        "text+lyrics+ref": ConditionFactory(lyrics="la la", reference=reference),
    }
    pairs = {i: PairFactory(study=study, condition=conditions[MODALITY_OF[i]]) for i in HUMANS}
    annotators = [AnnotatorFactory(username=f"h{i}") for i in range(3)]
    for i, votes in HUMANS.items():
        pair = pairs[i]
        for j, (pick, conf) in enumerate(votes):
            clip = pair.clip_a if pick == "a" else pair.clip_b
            JudgmentFactory(
                pair=pair,
                annotator=annotators[j],
                # Alternate the side shown so that clip terms matter.
                a_clip=pair.clip_a if j % 2 == 0 else pair.clip_b,
                alignment_choice=clip,
                musicality_choice=clip,
                alignment_confidence=Decimal(conf),
                musicality_confidence=Decimal(conf),
                rationale=f"vote {j} on pair {i}: clip {pick} is tighter",
            )
    judge1 = Judge.objects.create(key="rubric-test", kind=Judge.Kind.RUBRIC)
    judge2 = Judge.objects.create(key="signal-test", kind=Judge.Kind.SIGNAL)
    run1 = ScoringRun.objects.create(judge=judge1, study=study, label="rubric v1", state=ScoringRun.State.DONE)
    run2 = ScoringRun.objects.create(judge=judge2, study=study, label="signal v1", state=ScoringRun.State.DONE)
    for i, pair in pairs.items():
        Verdict.objects.create(
            run=run1,
            pair=pair,
            alignment_choice=pair.clip_a if R1_ALIGNMENT[i] == "a" else pair.clip_b,
            musicality_choice=pair.clip_a if R1_MUSICALITY[i] == "a" else pair.clip_b,
            rationale=f"judge says {R1_ALIGNMENT[i]}",
        )
        if i == 4:
            Verdict.objects.create(run=run2, pair=pair, status=Verdict.Status.DISCARDED)
        elif i == 5:
            Verdict.objects.create(run=run2, pair=pair, status=Verdict.Status.FAILED)
        else:
            a, b = R2_SCORES[i]
            Verdict.objects.create(run=run2, pair=pair, alignment_score_a=a, alignment_score_b=b)
    return study, pairs, annotators, run1, run2
