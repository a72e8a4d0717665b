"""Pseudo-label runs: the pool, both orders, the bias table, and the CMI-Pref-Pseudo export read back by our importer
(and by CMI-RewardBench's own loader where a checkout of it is named by CMI_REWARDBENCH_SRC)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from django.test import TestCase
from django.utils import timezone

from annotation.dataset import pairs_import
from annotation.models import Judgment
from common.errors import ServiceError
from scoring import pseudo, services
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory, UserFactory


def test_bias_table_counts_positions_and_consistency():
    F, S, T = pseudo.FIRST, pseudo.SECOND, pseudo.TIE
    # Four pairs: always the first clip (position-biased, inconsistent), consistent A, consistent B, a consistent tie.
    per_pair = [{"musicality": (F, F)}, {"musicality": (F, S)}, {"musicality": (S, F)}, {"musicality": (T, T)}]
    table = pseudo.bias_table(per_pair, ["musicality"], rounds=200, seed=1)["musicality"]
    assert table["pairs"] == 4 and table["answers"] == 8 and table["kept"] == 3
    assert table["a_share"]["value"] == pytest.approx(4 / 8)
    assert table["b_share"]["value"] == pytest.approx(2 / 8)
    assert table["tie_share"]["value"] == pytest.approx(2 / 8)
    assert table["consistency"]["value"] == pytest.approx(3 / 4)
    low, high = table["consistency"]["ci"]
    assert 0 <= low <= 0.75 <= high <= 1
    assert [pseudo.kept_label(p["musicality"]) for p in per_pair] == [None, "model_a", "model_b", "both"]


def test_a_judge_that_always_picks_the_first_clip_shows_it():
    rng = np.random.default_rng(0)
    per_pair = [{"alignment": ("first", "first" if rng.random() < 0.8 else "second")} for _ in range(400)]
    block = pseudo.bias_table(per_pair, ["alignment"], rounds=300)["alignment"]
    assert block["a_share"]["ci"][0] > 0.8  # 0.5 + 0.5 * 0.8 = 0.9 of answers say "first"
    assert block["consistency"]["ci"][1] < 0.3


def _verdict(run, pair, ab: dict, ba: dict) -> Verdict:
    labels = {dim: pseudo.kept_label((pseudo.POSITION[ab[dim]], pseudo.POSITION[ba[dim]])) for dim in ab}
    kept = {d: v for d, v in labels.items() if v}
    choice = {"model_a": pair.clip_a, "model_b": pair.clip_b}
    return Verdict.objects.create(
        run=run, pair=pair, status="ok" if kept else "discarded", alignment_choice=choice.get(kept.get("alignment")),
        musicality_choice=choice.get(kept.get("musicality")), details={"orders": {"ab": ab, "ba": ba}, "labels": kept},
    )  # fmt: skip


class PseudoRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="pool")
        cls.pairs = [PairFactory(study=cls.study) for _ in range(5)]
        JudgmentFactory(pair=cls.pairs[4], annotator=AnnotatorFactory())  # a voted pair is not in the pool
        cls.signal = Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
        cls.llm = Judge.objects.create(key="omni", kind=Judge.Kind.LLM_PAIRWISE, weights="/nowhere")

    def test_signal_run_over_the_unvoted_pairs_stores_its_bias_and_refuses_a_one_dimension_export(self):
        self.assertEqual(services.unvoted_pair_ids(study=self.study), [p.pk for p in self.pairs[:4]])
        with self.captureOnCommitCallbacks(execute=True):
            run = services.pseudo_run_create(judge=self.signal, study=self.study)
        run.refresh_from_db()
        self.assertEqual((run.purpose, run.state, run.total), ("pseudo", "done", 4))
        bias = run.summary["position_bias"]
        self.assertEqual(set(bias), {"musicality"})
        self.assertEqual(bias["musicality"]["pairs"], 4)
        # Distinct tones score differently: each order names the same clip.
        self.assertEqual(bias["musicality"]["consistency"]["value"], 1.0)
        self.assertEqual(bias["musicality"]["a_share"]["value"] + bias["musicality"]["b_share"]["value"], 1.0)
        with self.assertRaisesRegex(ServiceError, "no alignment preference"):
            pseudo.pseudo_export(run=run, out=Path(self._tmp()) / "x")
        with self.assertRaisesRegex(ServiceError, "these have votes: " + str(self.pairs[4].pk)):
            services.pseudo_run_create(judge=self.signal, pair_ids=[self.pairs[0].pk, self.pairs[4].pk])

    def _tmp(self) -> str:
        import tempfile

        path = tempfile.mkdtemp(prefix="pseudo-test-")
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def _llm_run(self) -> ScoringRun:
        run = ScoringRun.objects.create(judge=self.llm, study=self.study, purpose="pseudo", state="done", pair_ids=[p.pk for p in self.pairs[:4]], total=4, finished_at=timezone.now())
        both = {"alignment": "model_a", "musicality": "model_b"}
        _verdict(run, self.pairs[0], both, {"alignment": "model_b", "musicality": "model_a"})  # consistent on both
        _verdict(run, self.pairs[1], {"alignment": "model_b", "musicality": "both"}, {"alignment": "model_a", "musicality": "both"})  # both, with a tie
        _verdict(run, self.pairs[2], {"alignment": "model_a", "musicality": "model_a"}, {"alignment": "model_b", "musicality": "model_a"})  # alignment only
        _verdict(run, self.pairs[3], both, both)  # position-biased: nothing kept
        return run

    def test_export_keeps_consistent_labels_and_round_trips_through_the_importer(self):
        run = self._llm_run()
        out = Path(self._tmp()) / "export"
        report = pseudo.pseudo_export(run=run, out=out)
        self.assertEqual(report["rows"], 2)
        self.assertEqual(report["left_out"], {"kept on alignment only": 1})
        rows = [json.loads(line) for line in (out / pseudo.PSEUDO_FILE).read_text().splitlines()]
        self.assertEqual({r["source"] for r in rows}, {"cmi-pref-pseudo"})
        self.assertEqual({r["user id"] for r in rows}, {"judge-omni"})
        self.assertEqual(list(rows[0]), list(pseudo.EXPORT_KEYS))
        by_pair = {(r["audio-path"], r["audio2"]): r for r in rows}
        self.assertEqual(len(by_pair), 2)

        imported = pairs_import(files=[out / pseudo.PSEUDO_FILE], audio_root=out, study_name="pseudo-copy")
        self.assertTrue(imported.imported, imported.summary())
        self.assertEqual(imported.created["judgments"], 2)
        judgments = {j.pair.condition_id: j for j in Judgment.objects.filter(pair__study__name="pseudo-copy").select_related("pair", "alignment_choice", "musicality_choice")}
        expected = {self.pairs[0]: ("a", "b"), self.pairs[1]: ("b", "both")}
        for pair, (align, music) in expected.items():
            j = judgments[pair.condition_id]
            self.assertEqual(j.dataset_source, "cmi-pref-pseudo")
            self.assertEqual(j.annotator.annotator_profile.pseudonym, "judge-omni")
            side = {"a": pair.clip_a_id, "b": pair.clip_b_id}
            self.assertEqual(j.alignment_choice_id, side[align])
            if music == "both":
                self.assertEqual((j.musicality_tie, j.musicality_choice_id), ("both", None))
            else:
                self.assertEqual(j.musicality_choice_id, side[music])
        # Importing the same file again changes nothing.
        again = pairs_import(files=[out / pseudo.PSEUDO_FILE], audio_root=out, study_name="pseudo-copy")
        self.assertEqual(again.created["judgments"], 0)

    def test_bias_api_export_api_and_run_page(self):
        run = self._llm_run()
        researcher = UserFactory(username="res", roles=["researcher"])
        self.study.owner = researcher
        self.study.save(update_fields=["owner"])
        self.client.force_login(researcher)
        data = self.client.get(f"/api/scoring/runs/{run.pk}/bias/").json()
        self.assertEqual(data["purpose"], "pseudo")
        self.assertEqual(data["table"]["alignment"]["pairs"], 4)
        self.assertEqual(data["table"]["alignment"]["consistency"]["value"], 0.75)
        self.assertEqual(data["table"]["musicality"]["consistency"]["value"], 0.5)
        response = self.client.get(f"/api/scoring/runs/{run.pk}/pseudo-labels.zip")
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "application/zip")
        from scoring.services import run_compare

        run_compare(run=run)
        page = self.client.get(f"/scoring/runs/{run.pk}/").content.decode()
        self.assertIn('id="bias-table"', page)
        self.assertIn("pseudo-labels.zip", page)
        self.client.force_login(AnnotatorFactory())
        self.assertEqual(self.client.get(f"/api/scoring/runs/{run.pk}/pseudo-labels.zip").status_code, 403)


def test_cmi_rewardbench_loader_reads_the_export(tmp_path, db):
    """Their loader and label normaliser, run from a temporary copy of a checkout (never vendored here)."""
    source = os.environ.get("CMI_REWARDBENCH_SRC")
    if not source or not (Path(source) / "inference_benchmark.py").is_file():
        pytest.skip("set CMI_REWARDBENCH_SRC to a checkout of CMI-RewardBench to run its loader on the export")
    pytest.importorskip("tqdm")
    pytest.importorskip("pandas")
    study = StudyFactory(name="cmi-loader")
    judge = Judge.objects.create(key="omni-cmi", kind=Judge.Kind.LLM_PAIRWISE, weights="/nowhere")
    pairs = [PairFactory(study=study, condition=ConditionFactory(), clip_a=ClipFactory(), clip_b=ClipFactory()) for _ in range(2)]
    run = ScoringRun.objects.create(judge=judge, study=study, purpose="pseudo", state="done", total=2)
    _verdict(run, pairs[0], {"alignment": "model_a", "musicality": "model_b"}, {"alignment": "model_b", "musicality": "model_a"})
    _verdict(run, pairs[1], {"alignment": "model_b", "musicality": "model_b"}, {"alignment": "model_a", "musicality": "model_a"})
    out = tmp_path / "export"
    pseudo.pseudo_export(run=run, out=out)
    code = tmp_path / "cmi"
    code.mkdir()
    for name in ("inference_benchmark.py", "evaluate_results.py", "core", "config"):
        src = Path(source) / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, code / name)
    sys.path.insert(0, str(code))
    try:
        bench = importlib.import_module("inference_benchmark")
        evaluate = importlib.import_module("evaluate_results")
        rows = bench._load_jsonl(str(out / pseudo.PSEUDO_FILE))
        assert len(rows) == 2
        assert [r for r in rows if str(r.get("split", "")) == "test"] == []  # training data: the benchmark's test filter keeps none
        items = [bench._prepare_item(row=r, row_index=i, dataset_root=str(out)) for i, r in enumerate(rows)]
        for item in items:
            assert Path(item["audio_a_resolved"]).is_file() and Path(item["audio_b_resolved"]).is_file()
            assert item["benchmark_dataset"] == "Unknown"  # never counted as CMI-Pref benchmark rows
            assert item["prompt"]
        labels = sorted((evaluate._norm_pref(r["preference-alignment"]), evaluate._norm_pref(r["preference-musicality"])) for r in rows)
        assert labels == [("model_a", "model_b"), ("model_b", "model_b")]
    finally:
        sys.path.remove(str(code))
        for name in ("inference_benchmark", "evaluate_results", "core", "core.model_abc"):
            sys.modules.pop(name, None)
