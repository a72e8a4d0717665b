"""Device log-mel features against transformers' own extractors, and Qwen2-Audio inputs against its processor.

Tolerances, and why:
- CLAP (dB): within 60 dB of a clip's peak the two agree to 1e-3 dB (measured: <= 2e-4). Further
  down, 90-100 dB under the peak of a pure tone, float32 FFT rounding (~1e-7 of the frame's
  energy) becomes visible next to the reference's float64 window and power, so there the bound
  is 0.1 dB (measured: 0.03). No model can tell 0.1 dB at -90 dB re peak from silence.
- Whisper (log10 units, scaled (x + 4) / 4): the reference computes with torch in float32 too,
  so the bound is 1e-5 (measured: 2.4e-7). The frame mask and the audio token count are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from .devices import DEVICES

pytestmark = pytest.mark.slow
transformers = pytest.importorskip("transformers")


def _tone(n: int, *, sr: int, freq: float = 440.0, noise: float = 0.02, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / sr
    return (0.3 * np.sin(2 * np.pi * freq * t) + noise * rng.standard_normal(n)).astype(np.float32)


CLAP_WAVES = [
    ("full 10 s window", lambda: _tone(480000, sr=48000)),
    ("2.57 s, repeated to fill", lambda: _tone(123457, sr=48000, freq=330, seed=1)),
    ("83 ms", lambda: _tone(4000, sr=48000, freq=1000, seed=2)),
    ("one sample short, pure 60 Hz", lambda: _tone(479999, sr=48000, freq=60, noise=0.0)),
    ("near silence", lambda: (1e-4 * np.random.default_rng(3).standard_normal(48000)).astype(np.float32)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("padding", ["repeatpad", "repeat", "pad"])
def test_clap_mel_matches_the_reference_extractor(device, padding):
    from transformers import ClapFeatureExtractor

    from scoring.judges.features import ClapMel

    extractor = ClapFeatureExtractor(truncation="rand_trunc", frequency_min=50, padding=padding)
    waves = [make() for _, make in CLAP_WAVES]
    reference = extractor(waves, sampling_rate=48000, return_tensors="np")["input_features"]
    ours = ClapMel(extractor, device).features(waves).cpu().numpy()
    assert ours.shape == reference.shape == (len(waves), 1, 1001, 64)
    for (name, _), ref, got in zip(CLAP_WAVES, reference, ours):
        diff = np.abs(ref - got)
        loud = ref > ref.max() - 60.0
        assert diff[loud].max() <= 1e-3, (name, diff[loud].max())
        assert diff.max() <= 0.1, (name, diff.max())


def test_clap_mel_refuses_what_it_does_not_reproduce():
    from transformers import ClapFeatureExtractor

    from scoring.judges.features import ClapMel, UnsupportedExtractor

    with pytest.raises(UnsupportedExtractor, match="rand_trunc"):
        ClapMel(ClapFeatureExtractor(truncation="fusion"), "cpu")
    mel = ClapMel(ClapFeatureExtractor(truncation="rand_trunc"), "cpu")
    with pytest.raises(ValueError, match="split the clip first"):
        mel.features([np.zeros(480001, np.float32)])


@pytest.mark.parametrize("device", DEVICES)
def test_whisper_mel_matches_the_reference_extractor_with_its_frame_mask(device):
    from transformers import WhisperFeatureExtractor

    from scoring.judges.features import WhisperMel
    from scoring.judges.llm_backend import audio_tokens

    extractor = WhisperFeatureExtractor(feature_size=128)
    waves = [_tone(n, sr=16000, freq=f, seed=i) for i, (n, f) in enumerate(((300000, 440), (123457, 330), (4000, 1000), (479999, 60), (580000, 220)))]
    reference = extractor(waves, sampling_rate=16000, return_tensors="np", return_attention_mask=True, padding="max_length")
    mel = WhisperMel(extractor, device)
    features, mask = mel.features(waves)
    assert features.shape == reference["input_features"].shape == (5, 128, 3000)
    assert np.abs(features.cpu().numpy() - reference["input_features"]).max() <= 1e-5
    assert (mask.cpu().numpy() == reference["attention_mask"]).all()
    # The 36 s clip is cut at 30 s: 3000 frames, 750 audio tokens (Qwen2-Audio's processor formula).
    assert [audio_tokens(mel.frames(len(w))) for w in waves] == [(((int(m) - 1) // 2 + 1) - 2) // 2 + 1 for m in reference["attention_mask"].sum(-1)]
    assert audio_tokens(mel.frames(len(waves[-1]))) == 750


@pytest.mark.parametrize("device", DEVICES)
def test_qwen2_audio_inputs_built_on_the_device_equal_the_processors(tiny_qwen_dir, no_network, device):
    import torch

    from scoring.judges.features import WhisperMel
    from scoring.judges.llm_backend import TransformersAudioLLM

    backend = TransformersAudioLLM(str(tiny_qwen_dir), family="qwen2_audio", device=device, dtype="float32")
    assert isinstance(backend.mel, WhisperMel)
    shared = _tone(16000, sr=16000)
    requests = [
        ("system", [{"type": "audio", "slot": "clip"}, {"type": "text", "text": "Is this happy piano music? Answer Yes or No."}], [shared]),
        ("system", [{"type": "audio", "slot": "clip"}, {"type": "text", "text": "Is it calm?"}], [shared]),
        ("system", [{"type": "text", "text": "First:"}, {"type": "audio", "slot": "a"}, {"type": "text", "text": "Second:"}, {"type": "audio", "slot": "b"}], [_tone(6400, sr=16000, seed=1), _tone(11000, sr=16000, seed=2)]),
    ]
    ours = backend._inputs(requests)
    mel, backend.mel = backend.mel, None
    try:
        reference = backend._inputs(requests)
    finally:
        backend.mel = mel
    assert set(ours) == set(reference)
    for key in ("input_ids", "attention_mask", "feature_attention_mask"):
        assert torch.equal(ours[key].cpu(), reference[key].cpu()), key
    assert (ours["input_features"].cpu() - reference["input_features"].cpu()).abs().max() <= 1e-5
    # Left padding: every row's last position is a real token (the next-token position for AQA).
    assert bool(ours["attention_mask"][:, -1].all())
