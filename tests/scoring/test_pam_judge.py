"""PAM on the CLAP judge's model, through the real loader on the tiny random CLAP, with the network blocked."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.judges.pam import PROMPTS, PAMJudge
from scoring.models import ClipScore, Judge, Verdict
from tests.factories import StudyFactory

pytestmark = pytest.mark.slow


def _wav(path, seconds: float, *, freq: float, seed: int, sr: int = 48000) -> ClipAudio:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = (0.3 * np.sin(2 * np.pi * freq * t) + 0.05 * rng.standard_normal(len(t))).astype(np.float32)
    sf.write(str(path), wave, sr, subtype="FLOAT")
    return ClipAudio(path=str(path), sha256=f"{path.name}-{seed}")


def _library_pam(directory, wave: np.ndarray, prompts: tuple[str, str]) -> float:
    """The library's own CLAP forward (its normalisation and audio logit scale) on each 10 s window, softmax, mean."""
    import torch
    from transformers import ClapModel, ClapProcessor

    model = ClapModel.from_pretrained(directory).eval()
    processor = ClapProcessor.from_pretrained(directory)
    size = 48000 * 10
    windows = [wave[i : i + size] for i in range(0, len(wave), size)]
    scores = []
    with torch.inference_mode():
        for window in windows:
            inputs = processor(text=list(prompts), audio=[window], sampling_rate=48000, return_tensors="pt", padding=True)
            logits = model(**inputs).logits_per_audio[0].double()
            scores.append(float(torch.softmax(logits, dim=-1)[0]))
    return float(np.mean(scores))


def test_pam_is_the_softmax_over_the_opposing_prompts_averaged_over_windows(tiny_clap_dir, no_network, tmp_path):
    judge = adapter_for(JudgeConfig(key="pam", kind="pam", weights=str(tiny_clap_dir), options={"device": "cpu"}))
    assert isinstance(judge, PAMJudge) and judge.availability().available
    clips = [_wav(tmp_path / "a.wav", 3.0, freq=330, seed=0), _wav(tmp_path / "b.wav", 12.5, freq=550, seed=1)]
    first = judge.score_clips(clips, ConditionInput(prompt="calm piano"))
    # The condition does not enter: the same scores under another prompt, and the same twice.
    second = judge.score_clips(clips, ConditionInput(prompt="fast rock drums", lyrics="la la"))
    assert [r["musicality"] for r in first] == [r["musicality"] for r in second]
    assert [len(r["windows"]) for r in first] == [1, 2]
    for clip, row in zip(clips, first):
        assert 0.0 < row["musicality"] < 1.0
        wave, _ = sf.read(clip.path, dtype="float32")
        assert row["musicality"] == pytest.approx(_library_pam(tiny_clap_dir, wave, PROMPTS["sound"]), abs=1e-4)
    assert judge.context_key(ConditionInput(prompt="x")) == judge.context_key(ConditionInput(prompt="y"))
    music = adapter_for(JudgeConfig(key="pam-m", kind="pam", weights=str(tiny_clap_dir), options={"device": "cpu", "prompts": "music"}))
    assert music.context_key(ConditionInput()) != judge.context_key(ConditionInput())
    state = adapter_for(JudgeConfig(key="pam-x", kind="pam", weights=str(tiny_clap_dir), options={"prompts": "speech"})).availability()
    assert not state.available and "speech" in state.reason


@pytest.mark.django_db
def test_pam_run_scores_each_clip_once_across_conditions(tiny_clap_dir, no_network):
    study = StudyFactory(name="pam-study")
    waves = [(0.2 * np.sin(2 * np.pi * f * np.arange(16000) / 16000)).astype(np.float32) for f in (200, 300, 400)]
    clips = [clip_ingest_array(audio=w, sample_rate=16000, fmt="WAV")[0] for w in waves]
    pair_ids = []
    for prompt in ("calm piano", "fast rock drums"):
        condition, _ = condition_get_or_create(prompt=prompt)
        for i, j in ((0, 1), (0, 2), (1, 2)):
            pair_ids.append(pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[j])[0].pk)
    judge = Judge.objects.create(key="pam-tiny", kind=Judge.Kind.PAM, weights=str(tiny_clap_dir), options={"device": "cpu"})
    before = PAMJudge.encode_calls
    run = services.run_create(judge=judge, pair_ids=pair_ids)
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    assert run.done == 6 and run.failed == 0
    assert PAMJudge.encode_calls - before == 3  # one PAM score per clip, shared by both conditions
    assert ClipScore.objects.filter(judge=judge).count() == 3
    for verdict in Verdict.objects.filter(run=run):
        assert verdict.alignment_choice_id is None and verdict.alignment_score_a is None
        assert 0 < verdict.musicality_score_a < 1 and 0 < verdict.musicality_score_b < 1
        assert verdict.musicality_choice_id in (verdict.pair.clip_a_id, verdict.pair.clip_b_id)
