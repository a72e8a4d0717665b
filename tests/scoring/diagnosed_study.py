"""The report's hand-checked study (report_study) with a probability judge added: AQA-like scores in [0, 1] that
order the pairs as the signal judge does, so the judge diagnostics have a matrix and a calibration table."""

from __future__ import annotations

from scoring.models import Judge, ScoringRun, Verdict

from .report_study import build_study


def diagnosed_study(name: str = "diagnosed"):
    study, pairs, annotators, rubric_run, signal_run = build_study(name)
    aqa = Judge.objects.create(key="aqa-test", kind=Judge.Kind.AQA)
    run = ScoringRun.objects.create(judge=aqa, study=study, label="aqa v1", state=ScoringRun.State.DONE)
    for verdict in Verdict.objects.filter(run=signal_run, status=Verdict.Status.OK):
        a, b = verdict.alignment_score_a, verdict.alignment_score_b
        Verdict.objects.create(run=run, pair=verdict.pair, alignment_score_a=a * 0.9, alignment_score_b=b * 0.9, musicality_score_a=a, musicality_score_b=b, details={"labels": {}})
    return study, annotators
