"""The export package and the two prediction layouts, including CMI-RewardBench's own results.jsonl."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from common.errors import ServiceError
from scoring.benchmarks import selectors, services
from scoring.benchmarks.models import Submission
from tests.benchmarks.helpers import item_truth, jsonl, known_study

pytestmark = pytest.mark.django_db

LABEL_KEYS = {"preference-alignment", "preference-musicality", "confidence_preference-alignment", "confidence_preference-musicality", "preference"}


def _export(tmp_path, *, dev: bool):
    study, _ = known_study(n_pairs=24, name="fmt", split="train" if dev else "test")
    bench = services.benchmark_create(name="fmt-dev" if dev else "fmt", study=study, is_dev=dev, seed=1, bootstrap_rounds=200)
    out = tmp_path / "pkg"
    call_command("benchmark_export", bench.name, "--out", str(out))
    return bench, out


def test_export_has_the_task_layout_and_no_labels(tmp_path):
    bench, out = _export(tmp_path, dev=False)
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 24
    for row in rows:
        assert not (LABEL_KEYS & set(row)), "a test benchmark's export must carry no labels"
        for key in ("id", "prompt", "lyrics", "audio_a", "audio_b", "reference_audio", "audio-path", "audio2", "ref-audio-path", "source", "split"):
            assert key in row
        assert row["source"] == "cmi-arena-annotation" and row["split"] == "test"
        assert (out / row["audio-path"]).is_file() and (out / row["audio2"]).is_file()
    # Nothing says which items are private, and the raw text of the export never names a label.
    text = (out / "items.jsonl").read_text() + (out / "benchmark.json").read_text()
    assert "private" not in text and "model_a" not in text
    # The manifest checks out, like `sha256sum -c MANIFEST.sha256`.
    lines = (out / "MANIFEST.sha256").read_text().splitlines()
    assert len(lines) == len(bench.manifest) + 2
    for line in lines:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


def test_dev_export_carries_the_majority_labels(tmp_path):
    bench, out = _export(tmp_path, dev=True)
    truth = item_truth(bench)
    for line in (out / "items.jsonl").read_text().splitlines():
        row = json.loads(line)
        for dim in ("alignment", "musicality"):
            assert row[f"preference-{dim}"] == {"A": "model_a", "B": "model_b"}[truth[row["id"]][dim]]
            assert row[f"confidence_preference-{dim}"] in {"2.0", "3.0", "4.0"}


def test_export_refuses_a_folder_that_is_not_empty(tmp_path):
    bench, out = _export(tmp_path, dev=False)
    with pytest.raises(CommandError, match="not empty"):
        call_command("benchmark_export", bench.name, "--out", str(out))


# --- CMI-RewardBench's results.jsonl ------------------------------------------------------------------


def _their_pair_label(score_a, score_b):
    # inference_benchmark.py's rule, restated: A only when its score is higher; a tie goes to B.
    if score_a is None or score_b is None:
        return None
    return "model_a" if score_a > score_b else "model_b"


def _their_results(rows: list[dict], scores: dict) -> bytes:
    """results.jsonl as their inference writes it: each input row, then the fields it adds, one json.dumps per line."""
    out = []
    for row in rows:
        (align_a, mus_a), (align_b, mus_b) = scores[row["id"]]
        base = dict(row)
        base["benchmark_dataset"] = "CMI-Pref"
        base["predicted_text-music alignment"] = align_a
        base["predicted_musicality"] = mus_a
        base["predicted_text-music alignment_b"] = align_b
        base["predicted_musicality_b"] = mus_b
        base["predicted_preference"] = _their_pair_label(mus_a, mus_b)
        base["predicted_preference-musicality"] = _their_pair_label(mus_a, mus_b)
        base["predicted_preference-alignment"] = _their_pair_label(align_a, align_b)
        base["inference_valid_a"] = True
        base["inference_valid_b"] = True
        base["inference_error"] = ""
        out.append(json.dumps(base, ensure_ascii=False) + "\n")
    return "".join(out).encode()


def _their_accuracy(rows: list[dict], gt_key: str, pred_key: str) -> float:
    # evaluate_results.py's accuracy, restated from its documented rule (not its code).
    spell = {"a": "model_a", "b": "model_b", "model_a": "model_a", "model_b": "model_b", "both": "both", "neither": "both"}
    scores = []
    for row in rows:
        gt, pred = spell.get(str(row.get(gt_key)).strip().lower()), spell.get(str(row.get(pred_key)).strip().lower())
        if gt is None or pred is None:
            continue
        scores.append(1.0 if gt == pred else 0.5 if "both" in (gt, pred) else 0.0)
    return sum(scores) / len(scores)


def test_cmi_results_jsonl_uploads_unchanged_and_scores_as_their_evaluator(tmp_path):
    bench, out = _export(tmp_path, dev=True)
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    # Scores with ties and a spread of right and wrong answers: every third item ties (predicts B).
    scores = {}
    for n, row in enumerate(rows):
        a = (0.5, 0.5) if n % 3 == 0 else (0.9 - 0.03 * n, 0.2 + 0.02 * n)
        scores[row["id"]] = (a, (0.4 + 0.01 * n, 0.5) if n % 3 else (0.5, 0.5))
    data = _their_results(rows, scores)
    results_file = tmp_path / "results.jsonl"
    results_file.write_bytes(data)
    services.team_create(name="cmi")
    call_command("benchmark_submit", bench.name, "--team", "cmi", "--file", str(results_file))
    sub = Submission.objects.get(team__name="cmi")
    assert sub.file_format == "cmi-results"
    written = [json.loads(line) for line in data.decode().splitlines()]
    for dim in ("alignment", "musicality"):
        theirs = _their_accuracy(written, f"preference-{dim}", f"predicted_preference-{dim}")
        ours = next(r for r in selectors.scores(bench, part="all", dim=dim)["rows"] if r["submission"] == sub.pk)
        assert ours["accuracy"] == pytest.approx(theirs)
        assert ours["n"] == len(rows)


# --- Refusals ------------------------------------------------------------------------------------------


@pytest.fixture
def small_bench():
    study, _ = known_study(n_pairs=6, name="small")
    return services.benchmark_create(name="small", study=study, bootstrap_rounds=100)


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": "small-00001", "preferred": "A"}', "{not json"], "line 2: not valid JSON"),
        (['{"id": "small-00001", "preferred": "A"}', '{"id": "small-00001", "preferred": "B"}'], "line 2: id 'small-00001' was already given on line 1"),
        (['{"id": "nope", "preferred": "A"}'], "line 1: id 'nope' is not an item of this benchmark"),
        (['{"preferred": "A"}'], "line 1: no `id`"),
        (['{"id": "small-00001", "preferred": "C"}'], "line 1: preferred 'C' is not one of"),
        (['{"id": "small-00001", "probability_a": 1.5}'], "line 1: probability_a must be a number from 0 to 1"),
        (['{"id": "small-00001"}'], "line 1: no preference for any dimension"),
        (["[1, 2]"], "line 1: expected a JSON object"),
        ([""], "holds no predictions"),
    ],
)
def test_bad_files_are_refused_whole_naming_the_line(small_bench, lines, message):
    team = services.team_create(name="t")
    with pytest.raises(ServiceError) as caught:
        services.submission_from_file(benchmark=small_bench, team=team, data=("\n".join(lines) + "\n").encode())
    assert message in caught.value.message
    assert Submission.objects.count() == 0


def test_probabilities_give_a_brier_score(small_bench):
    truth = item_truth(small_bench)
    rows = [{"id": i, "probability_a": 0.8 if t["alignment"] == "A" else 0.3} for i, t in sorted(truth.items())]
    sub = services.submission_from_file(benchmark=small_bench, team=services.team_create(name="p"), data=jsonl(rows))
    detail = selectors.submission_breakdown(small_bench, sub, part="all")
    cal = detail["alignment"]["calibration"]
    expected = sum((0.2 if t["alignment"] == "A" else 0.3) ** 2 for t in truth.values()) / len(truth)
    assert cal["brier"] == pytest.approx(expected)
    assert sum(b["n"] for b in cal["bins"]) == len(truth)
    assert detail["alignment"]["all"]["accuracy"] == 1.0


def test_daily_limit(small_bench, settings):
    settings.BENCHMARK_DAILY_SUBMISSIONS = 2
    team = services.team_create(name="busy")
    data = jsonl([{"id": "small-00001", "preferred": "A"}])
    services.submission_from_file(benchmark=small_bench, team=team, data=data)
    services.submission_from_file(benchmark=small_bench, team=team, data=data)
    with pytest.raises(ServiceError, match="used its 2 submissions"):
        services.submission_from_file(benchmark=small_bench, team=team, data=data)
    assert Submission.objects.filter(team=team).count() == 2


def test_closed_benchmark_takes_no_submission(small_bench):
    services.benchmark_close(benchmark=small_bench, operator=True)
    with pytest.raises(ServiceError, match="closed"):
        services.submission_from_file(benchmark=small_bench, team=services.team_create(name="late"), data=jsonl([{"id": "small-00001", "preferred": "A"}]))
