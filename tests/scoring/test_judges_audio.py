"""The judges' audio loading: the polyphase resampler equals scipy's resample_poly, and the downmix
equals numpy's mean, so the faster path leaves every judge's input as it was."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from scoring.judges.base import downmix, load_audio
from scoring.judges.resample import resample

pytest.importorskip("torch")


@pytest.mark.parametrize("sr_in,sr_out", [(44100, 48000), (44100, 16000), (22050, 24000), (16000, 24000), (48000, 16000), (44100, 24000), (8000, 48000)])
@pytest.mark.parametrize("length", [1, 7, 1000, 44100 * 3 + 17])
def test_resample_equals_scipy_resample_poly(sr_in, sr_out, length):
    rng = np.random.default_rng(length)
    wave = (0.5 * rng.standard_normal(length)).astype(np.float32)
    g = np.gcd(sr_in, sr_out)
    want = resample_poly(wave, sr_out // g, sr_in // g).astype(np.float32)
    got = resample(wave, sr_in, sr_out)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-6


def test_downmix_equals_numpy_mean():
    rng = np.random.default_rng(0)
    for channels in (1, 2, 3, 6):
        data = rng.standard_normal((1001, channels)).astype(np.float32)
        assert np.array_equal(downmix(data), data.mean(axis=1))


@pytest.mark.parametrize("fmt,ext", [("FLAC", "flac"), ("MP3", "mp3")])
def test_load_audio_is_the_old_decode_and_resample(tmp_path, fmt, ext):
    t = np.arange(44100 * 2) / 44100
    stereo = np.stack([0.3 * np.sin(2 * np.pi * 220 * t), 0.2 * np.sin(2 * np.pi * 330 * t)], axis=1).astype(np.float32)
    path = tmp_path / f"a.{ext}"
    sf.write(str(path), stereo, 44100, format=fmt)
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    old = resample_poly(data.mean(axis=1), 160, 147).astype(np.float32)
    new = load_audio(path, sample_rate=48000)
    assert new.shape == old.shape and np.abs(new - old).max() <= 1e-6


def test_decoding_in_processes_gives_the_same_waves_in_order(tmp_path):
    from scoring.judges.device import prefetch_audio

    paths = []
    for i in range(5):
        t = np.arange(22050 + 1000 * i) / 22050
        path = tmp_path / f"{i}.flac"
        sf.write(str(path), (0.2 * np.sin(2 * np.pi * (200 + 50 * i) * t)).astype(np.float32), 22050, format="FLAC")
        paths.append(str(path))
    threads = list(prefetch_audio(paths, sample_rate=48000, workers=2))
    processes = list(prefetch_audio(paths, sample_rate=48000, workers=2, processes=True))
    assert [len(w) for w in processes] == [len(w) for w in threads]
    assert all(np.array_equal(a, b) for a, b in zip(threads, processes))


@pytest.mark.parametrize("subtype,channels", [("PCM_16", 1), ("PCM_16", 2), ("PCM_16", 3), ("PCM_24", 2), ("FLOAT", 2)])
def test_mono_read_equals_the_float_decode_and_mean(tmp_path, subtype, channels):
    from scoring.judges.base import read_audio

    rng = np.random.default_rng(channels)
    data = np.clip(0.4 * rng.standard_normal((3001, channels)), -1, 1).astype(np.float32)
    path = tmp_path / "a.wav"
    sf.write(str(path), data, 16000, subtype=subtype)
    decoded, _ = read_audio(path)
    assert np.array_equal(load_audio(path, sample_rate=16000), decoded.mean(axis=1))
