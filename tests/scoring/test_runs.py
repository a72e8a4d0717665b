"""Scoring runs end to end on the in-process worker: verdicts, cache, progress, idempotency."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from django.test import TestCase
from django.utils import timezone

from annotation.models import Clip, Pair
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from common.errors import ServiceError
from scoring import services, tasks
from scoring.judges.signal import SignalJudge
from scoring.models import ClipScore, Judge, ScoringRun, Verdict
from tests.factories import AnnotatorFactory, JudgmentFactory, StudyFactory


def _clip(wave: np.ndarray, sr: int = 16000) -> Clip:
    clip, _ = clip_ingest_array(audio=wave, sample_rate=sr, fmt="WAV")
    return clip


def _tone(freq: float, seconds: float = 1.0, sr: int = 16000, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


class SignalRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="signal-study")
        cls.condition, _ = condition_get_or_create(prompt="calm piano")
        # M = 4 clips, N = 6 pairs (every pair of clips): the cache must decode each clip once.
        cls.clean = [_clip(_tone(f)) for f in (220.0, 330.0)]
        cls.bad = [_clip(np.clip(_tone(f) * 8, -0.5, 0.5)) for f in (250.0, 350.0)]
        clips = cls.clean + cls.bad
        cls.pairs = []
        for i in range(len(clips)):
            for j in range(i + 1, len(clips)):
                cls.pairs.append(pair_get_or_create(study=cls.study, condition=cls.condition, clip_a=clips[i], clip_b=clips[j])[0])
        cls.judge = Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)

    def test_run_scores_every_pair_once_and_decodes_each_clip_once(self):
        before = SignalJudge.encode_calls
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, study=self.study)
        run.refresh_from_db()
        self.assertEqual(run.state, ScoringRun.State.DONE)
        self.assertEqual((run.total, run.done, run.failed), (6, 6, 0))
        self.assertEqual(Verdict.objects.filter(run=run).count(), 6)
        self.assertEqual(SignalJudge.encode_calls - before, 4)
        self.assertEqual(ClipScore.objects.filter(judge=self.judge).count(), 4)

    def test_clean_clip_wins_musicality_and_alignment_is_left_empty(self):
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, study=self.study)
        for verdict in run.verdicts.select_related("pair"):
            pair = verdict.pair
            self.assertIsNone(verdict.alignment_choice_id)
            self.assertTrue(verdict.details["technical"])
            a_clean, b_clean = pair.clip_a in self.clean, pair.clip_b in self.clean
            if a_clean and not b_clean:
                self.assertEqual(verdict.musicality_choice_id, pair.clip_a_id)
            elif b_clean and not a_clean:
                self.assertEqual(verdict.musicality_choice_id, pair.clip_b_id)

    def test_rerunning_a_finished_job_writes_nothing(self):
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, study=self.study)
        first = list(Verdict.objects.filter(run=run).values_list("id", "created_at"))
        scores = ClipScore.objects.count()
        tasks.pair_score_task.apply(args=(run.pk, self.pairs[0].pk))
        tasks.run_start.apply(args=(run.pk,))
        self.assertEqual(list(Verdict.objects.filter(run=run).values_list("id", "created_at")), first)
        self.assertEqual(ClipScore.objects.count(), scores)
        run.refresh_from_db()
        self.assertEqual((run.done, run.failed), (6, 0))

    def test_ties_predict_b(self):
        # Two identical-sounding clips (same tone, one sample apart so the hashes differ) score equal.
        a = _clip(_tone(440.0))
        b = _clip(np.concatenate([_tone(440.0), np.zeros(1, np.float32)]))
        pair, _ = pair_get_or_create(study=self.study, condition=self.condition, clip_a=a, clip_b=b)
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, pair_ids=[pair.pk])
        verdict = run.verdicts.get()
        if verdict.musicality_score_a == verdict.musicality_score_b:
            self.assertEqual(verdict.musicality_choice_id, pair.clip_b_id)
        self.assertEqual(verdict.musicality_choice_id, pair.clip_b_id if verdict.musicality_score_a <= verdict.musicality_score_b else pair.clip_a_id)

    def test_comparison_summary_counts_human_votes_and_drops_withdrawn(self):
        kept = AnnotatorFactory()
        gone = AnnotatorFactory()
        gone.annotator_profile.withdrawn_at = timezone.now()
        gone.annotator_profile.save()
        pair = next(p for p in self.pairs if p.clip_a in self.clean and p.clip_b in self.bad)
        JudgmentFactory(annotator=kept, pair=pair, musicality_choice=pair.clip_a, musicality_confidence=Decimal("4.0"))
        JudgmentFactory(annotator=gone, pair=pair, musicality_choice=pair.clip_b)
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, pair_ids=[pair.pk])
        run.refresh_from_db()
        music = run.summary["preference"]["musicality"]
        self.assertEqual(run.summary["human_rows"], 1)
        self.assertEqual(music["all"], {"accuracy": 1.0, "n": 1})
        self.assertEqual(music["by_confidence"]["all"][">3"], {"accuracy": 1.0, "n": 1})
        self.assertEqual(run.summary["preference"]["alignment"]["all"]["n"], 0)

    def test_seeded_demo_votes_are_left_out_of_the_comparison_and_the_page_says_how_many(self):
        from annotation.models import Judgment
        from tests.factories import UserFactory

        pair = next(p for p in self.pairs if p.clip_a in self.clean and p.clip_b in self.bad)
        JudgmentFactory(annotator=AnnotatorFactory(), pair=pair, musicality_choice=pair.clip_a)
        for _ in range(2):  # made up by the demo, and against the listener
            JudgmentFactory(annotator=AnnotatorFactory(), pair=pair, musicality_choice=pair.clip_b, source=Judgment.Source.SEEDED)
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, pair_ids=[pair.pk])
        run.refresh_from_db()
        self.assertEqual((run.summary["human_rows"], run.summary["seeded_left_out"]), (1, 2))
        self.assertEqual(run.summary["preference"]["musicality"]["all"], {"accuracy": 1.0, "n": 1})
        self.client.force_login(UserFactory(username="res-runs", roles=["admin"]))
        page = self.client.get(f"/scoring/runs/{run.pk}/").content.decode()
        self.assertIn("seeded demo votes excluded (2)", page)

    def test_bad_scope_is_refused_and_nothing_is_stored(self):
        with self.assertRaisesMessage(ServiceError, "exactly one"):
            services.run_create(judge=self.judge)
        with self.assertRaisesMessage(ServiceError, "Unknown pair id(s): 999999"):
            services.run_create(judge=self.judge, pair_ids=[999999])
        with self.assertRaisesMessage(ServiceError, "Unknown template"):
            services.run_create(judge=self.judge, study=self.study, template="paraphrase-1")
        self.assertFalse(ScoringRun.objects.exists())

    def test_unavailable_judge_is_refused_with_the_reason(self):
        clap = Judge.objects.create(key="clap", kind=Judge.Kind.CLAP, weights="no/such-model-here", queue=Judge.Queue.GPU)
        with self.assertRaisesMessage(ServiceError, "unavailable"):
            services.run_create(judge=clap, study=self.study)

    def test_unreadable_audio_is_a_failed_verdict_and_the_run_finishes(self):
        broken = _clip(_tone(500.0))
        pair, _ = pair_get_or_create(study=self.study, condition=self.condition, clip_a=self.clean[0], clip_b=broken)
        open(broken.file.path, "wb").write(b"not audio")
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=self.judge, pair_ids=[pair.pk])
        run.refresh_from_db()
        verdict = run.verdicts.get()
        self.assertEqual(verdict.status, Verdict.Status.FAILED)
        self.assertIn("error", verdict.details)
        self.assertEqual((run.state, run.done, run.failed), (ScoringRun.State.DONE, 0, 1))


@pytest.mark.django_db
def test_catch_pair_from_hard_negative_is_won_by_the_original():
    study = StudyFactory(name="catch-study")
    condition, _ = condition_get_or_create(prompt="calm piano")
    original = _clip(_tone(330.0, seconds=2.0))
    other = _clip(_tone(200.0, seconds=2.0))
    pair_get_or_create(study=study, condition=condition, clip_a=original, clip_b=other)
    derived, catch = services.hard_negative_create(clip=original, degradation={"kind": "clip", "gain_db": 20}, study=study)
    assert derived.kind == Clip.Kind.DERIVED and derived.derived_from == original
    assert derived.degradation["gain_db"] == 20.0
    assert catch.kind == Pair.Kind.CATCH and catch.expected_musicality == original
    judge = Judge.objects.create(key="signal-c", kind=Judge.Kind.SIGNAL)
    run = services.run_create(judge=judge, pair_ids=[catch.pk])
    tasks.run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    assert run.verdicts.get().musicality_choice_id == original.pk
    assert run.summary["verdicts"]["catch_accuracy"]["musicality"] == {"accuracy": 1.0, "n": 1}
