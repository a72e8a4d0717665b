"""Learned judges through their real loaders, on tiny random models saved to disk, with the network blocked."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.judges.audiollm import AQAJudge, LLMPairwiseJudge, RubricJudge
from scoring.judges.clap import ClapJudge
from scoring.models import ClipScore, Judge, ScoringRun, Verdict
from tests.factories import StudyFactory

pytestmark = pytest.mark.slow


def _wav(path, seconds: float, *, freq: float = 440.0, sr: int = 22050, seed: int = 0) -> ClipAudio:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = (0.3 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    sf.write(str(path), wave, sr)
    return ClipAudio(path=str(path), sha256=f"{path.name}-{seed}")


def test_network_guard_blocks_outside_connections(no_network):
    import socket

    with pytest.raises(OSError, match="blocked"):
        socket.create_connection(("huggingface.co", 443), timeout=1)


def test_clap_loads_offline_and_scores_are_cosines_and_deterministic(tiny_clap_dir, no_network, tmp_path):
    judge = adapter_for(JudgeConfig(key="clap", kind="clap", weights=str(tiny_clap_dir)))
    assert judge.availability().available
    clips = [_wav(tmp_path / "a.wav", 3.0, freq=330), _wav(tmp_path / "b.wav", 12.5, freq=550, seed=1)]
    condition = ConditionInput(prompt="calm piano", lyrics="")
    first = judge.score_clips(clips, condition)
    second = judge.score_clips(clips, condition)
    assert [r["alignment"] for r in first] == [r["alignment"] for r in second]  # 12.5 s clip: chunked, not cropped at random
    for row in first:
        assert -1.0 <= row["alignment"] <= 1.0
        assert set(row["cosine"]) == {"text"}
    embeddings = judge.audio_embeddings(clips)
    assert np.asarray(embeddings).shape == (2, 16)
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)


def test_clap_with_reference_averages_text_and_reference_cosines(tiny_clap_dir, no_network, tmp_path):
    judge = adapter_for(JudgeConfig(key="clap", kind="clap", weights=str(tiny_clap_dir)))
    clip = _wav(tmp_path / "a.wav", 2.0)
    reference = _wav(tmp_path / "r.wav", 2.0, freq=220, seed=3)
    row = judge.score_clips([clip], ConditionInput(prompt="lofi beat", reference=reference))[0]
    assert set(row["cosine"]) == {"text", "reference"}
    assert row["alignment"] == pytest.approx((row["cosine"]["text"] + row["cosine"]["reference"]) / 2)


def test_clap_judge_without_weights_is_unavailable_with_the_reason(settings, tmp_path):
    settings.AUDITORIUM_MODEL_DIR = tmp_path
    state = adapter_for(JudgeConfig(key="clap", kind="clap", weights="clap-htsat-unfused")).availability()
    assert not state.available and "weights not found" in state.reason
    state = adapter_for(JudgeConfig(key="clap", kind="clap", weights="laion/no-such-model-anywhere")).availability()
    assert not state.available and "not in the local Hugging Face cache" in state.reason
    assert "no weights configured" in adapter_for(JudgeConfig(key="clap", kind="clap")).availability().reason


def test_relative_weights_resolve_under_the_model_dir(settings, tiny_clap_dir):
    settings.AUDITORIUM_MODEL_DIR = tiny_clap_dir.parent
    state = adapter_for(JudgeConfig(key="clap", kind="clap", weights=tiny_clap_dir.name)).availability()
    assert state.available and state.weights_path == str(tiny_clap_dir)


@pytest.mark.django_db
def test_clap_run_encodes_each_clip_once_across_pairs_and_conditions(tiny_clap_dir, no_network):
    study = StudyFactory(name="clap-study")
    waves = [(0.2 * np.sin(2 * np.pi * f * np.arange(16000) / 16000)).astype(np.float32) for f in (200, 300, 400)]
    clips = [clip_ingest_array(audio=w, sample_rate=16000, fmt="WAV")[0] for w in waves]
    pair_ids = []
    for prompt in ("calm piano", "fast rock drums"):
        condition, _ = condition_get_or_create(prompt=prompt)
        for i, j in ((0, 1), (0, 2), (1, 2)):
            pair_ids.append(pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[j])[0].pk)
    judge = Judge.objects.create(key="clap-tiny", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), queue=Judge.Queue.GPU)
    before = ClapJudge.encode_calls
    run = services.run_create(judge=judge, pair_ids=pair_ids)
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    assert (run.state, run.done, run.failed) == (ScoringRun.State.DONE, 6, 0)
    # 6 pairs over 3 clips and 2 conditions: 3 audio encoder passes, not 12.
    assert ClapJudge.encode_calls - before == 3
    assert ClipScore.objects.filter(judge=judge, context_key="").count() == 3
    for verdict in run.verdicts.all():
        assert verdict.musicality_choice_id is None
        assert verdict.alignment_choice_id in (verdict.pair.clip_a_id, verdict.pair.clip_b_id)
        assert -1 <= verdict.alignment_score_a <= 1


def test_aqa_scores_are_probabilities_and_deterministic(tiny_qwen_dir, no_network, tmp_path):
    judge = adapter_for(JudgeConfig(key="aqa", kind="aqa", weights=str(tiny_qwen_dir), options={"batch_size": 3}))
    assert isinstance(judge, AQAJudge)
    clips = [_wav(tmp_path / f"{i}.wav", 1.5, freq=200 + 100 * i, sr=16000, seed=i) for i in range(3)]
    condition = ConditionInput(prompt="happy piano song", lyrics="la la")
    first = judge.score_clips(clips, condition)
    again = judge.score_clips(clips, condition)
    assert len(first) == 3
    for row, other in zip(first, again):
        for dim in ("alignment", "musicality"):
            assert 0.0 < row[dim] < 1.0
            assert row[dim] == pytest.approx(other[dim], abs=1e-6)
    # Batching must not change a clip's score (left padding keeps the next-token position).
    single = adapter_for(JudgeConfig(key="aqa1", kind="aqa", weights=str(tiny_qwen_dir), options={"batch_size": 1})).score_clips(clips, condition)
    for row, other in zip(first, single):
        assert row["alignment"] == pytest.approx(other["alignment"], abs=1e-4)


def test_rubric_judge_verifies_each_item_and_reports_the_pass_share(tiny_qwen_dir, no_network, tmp_path):
    judge = adapter_for(JudgeConfig(key="rubric", kind="rubric", weights=str(tiny_qwen_dir)))
    assert isinstance(judge, RubricJudge)
    clip = _wav(tmp_path / "c.wav", 1.0, sr=16000)
    reference = _wav(tmp_path / "r.wav", 1.0, freq=220, sr=16000, seed=2)
    row = judge.score_clips([clip], ConditionInput(prompt="sad slow piano ballad at 70 BPM", reference=reference))[0]
    ids = [item["id"] for item in row["items"]]
    assert ids == ["instrument:piano", "mood:sad", "tempo:slow", "tempo:70bpm", "reference:style"]
    assert all(0 < item["p_yes"] < 1 and item["passed"] == (item["p_yes"] >= 0.5) for item in row["items"])
    assert row["alignment"] == pytest.approx(np.mean([i["p_yes"] for i in row["items"]]))
    assert row["pass_share"] == pytest.approx(np.mean([i["passed"] for i in row["items"]]))


def test_llm_pairwise_with_a_real_model_records_unparseable_answers_as_failures(tiny_qwen_dir, no_network, tmp_path):
    # A random tiny model cannot write the JSON: the verdict must be "failed" with its raw text, never a guess.
    judge = adapter_for(JudgeConfig(key="llm", kind="llm_pairwise", weights=str(tiny_qwen_dir), options={"max_new_tokens": 6}))
    assert isinstance(judge, LLMPairwiseJudge)
    a, b = _wav(tmp_path / "a.wav", 1.0, sr=16000), _wav(tmp_path / "b.wav", 1.0, freq=660, sr=16000, seed=1)
    outcome = judge.compare(a, b, ConditionInput(prompt="rock song", lyrics="hello"))
    assert outcome.status == "failed"
    assert outcome.labels == {}
    assert isinstance(outcome.details["raw"]["ab"], str) and outcome.details["error"]


@pytest.mark.django_db
def test_llm_run_stores_failed_verdicts_with_raw_text(tiny_qwen_dir, no_network):
    study = StudyFactory(name="llm-study")
    condition, _ = condition_get_or_create(prompt="rock")
    clips = [clip_ingest_array(audio=np.full(16000, 0.1 * (i + 1), np.float32) * np.sin(np.arange(16000) / (5 + i)), sample_rate=16000, fmt="WAV")[0] for i in range(2)]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1])
    judge = Judge.objects.create(key="llm-tiny", kind=Judge.Kind.LLM_PAIRWISE, weights=str(tiny_qwen_dir), options={"max_new_tokens": 4}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=[pair.pk])
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert verdict.alignment_choice_id is None and verdict.musicality_choice_id is None
    assert "raw" in verdict.details and verdict.details["raw"]["ab"] is not None
