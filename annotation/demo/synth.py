"""Rendering: wavetable instruments, drums and a formant voice play the score; each system's faults are applied."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.signal import sosfilt

from .catalogue import CLEAN_SYSTEM, SYSTEM_NAMES
from .compose import Note, Score, Style, compose, stable_int, style_for
from .mastering import QUIET_LUFS, TARGET_LUFS, master

# --- Synthesis -------------------------------------------------------------------------

# (harmonic amplitudes, attack s, decay s or None for sustain, vibrato cents)
TIMBRES = {
    "piano": ((1.0, 0.55, 0.3, 0.18, 0.1, 0.06, 0.04), 0.004, 0.7, 0.0),
    "pluck": (tuple(1.0 / k for k in range(1, 11)), 0.003, 0.35, 0.0),
    "saw": (tuple(1.0 / k for k in range(1, 13)), 0.012, 2.5, 0.0),
    "flute": ((1.0, 0.25, 0.1, 0.04), 0.04, None, 12.0),
    "strings": (tuple(0.9 / k for k in range(1, 11)), 0.09, None, 10.0),
    "keys": ((1.0, 0.0, 0.33, 0.0, 0.2, 0.0, 0.14), 0.008, 1.2, 0.0),
    "pad": ((1.0, 0.45, 0.22, 0.12, 0.06), 0.15, None, 0.0),
}
VOWEL_FORMANTS = {
    "a": ((730, 90), (1090, 110), (2440, 160)),
    "e": ((530, 70), (1840, 110), (2480, 160)),
    "i": ((290, 60), (2290, 120), (3010, 180)),
    "o": ((570, 80), (840, 90), (2410, 160)),
    "u": ((320, 60), (870, 90), (2240, 160)),
}


def midi_hz(midi: float) -> float:
    return 440.0 * 2.0 ** ((midi - 69.0) / 12.0)


@lru_cache(maxsize=64)
def _ramp(n: int) -> np.ndarray:
    ramp = np.arange(n, dtype=np.float64)
    ramp.flags.writeable = False
    return ramp


@lru_cache(maxsize=64)
def _envelope(n: int, sr: int, *, attack: float, decay: float | None, release: float = 0.03) -> np.ndarray:
    # Cached: chords, bass and most melody notes repeat the same few lengths.
    t = _ramp(n) / sr
    env = np.minimum(1.0, t * (1.0 / max(attack, 1.0 / sr)))
    if decay is not None:
        env *= np.exp(t * (-1.0 / decay))
    r = min(n, int(release * sr))
    if r > 0:
        env[n - r :] *= np.linspace(1.0, 0.0, r)
    env.flags.writeable = False
    return env


TABLE_SIZE = 8192


@lru_cache(maxsize=256)
def _wavetable(timbre: str, harmonics: int) -> np.ndarray:
    """One cycle of the timbre with only the harmonics that fit under Nyquist: no aliasing, one lookup per sample."""
    amps = TIMBRES[timbre][0][:harmonics]
    phase = 2 * np.pi * np.arange(TABLE_SIZE) / TABLE_SIZE
    table = sum(amp * np.sin(k * phase) for k, amp in enumerate(amps, start=1) if amp)
    return np.asarray(table, dtype=np.float64)


def _tone(freq: float, n: int, sr: int, timbre: str, *, phase0: float = 0.0, vibrato_rate: float = 5.3) -> np.ndarray:
    amps, attack, decay, vibrato = TIMBRES[timbre]
    offset = phase0 / (2 * np.pi) * TABLE_SIZE
    if vibrato:
        # Vibrato fades in, as played.
        t = _ramp(n) / sr
        depth = (2.0 ** (vibrato / 1200.0) - 1.0) * np.minimum(1.0, t / 0.3)
        position = np.cumsum(freq * TABLE_SIZE / sr * (1.0 + depth * np.sin(2 * np.pi * vibrato_rate * t))) + offset
    else:
        position = _ramp(n) * (freq * TABLE_SIZE / sr) + offset
    harmonics = max(1, min(len(amps), int(0.45 * sr / (freq * 2.0 ** (vibrato / 1200.0)))))
    # TABLE_SIZE is a power of two: the mask wraps the phase faster than a modulo.
    index = position.astype(np.int64) & (TABLE_SIZE - 1)
    return _wavetable(timbre, harmonics)[index] * _envelope(n, sr, attack=attack, decay=decay)


def _add(buf: np.ndarray, start: int, sig: np.ndarray) -> None:
    if start < 0:
        sig, start = sig[-start:], 0
    end = min(len(buf), start + len(sig))
    if end > start:
        buf[start:end] += sig[: end - start]


def _kick(sr: int) -> np.ndarray:
    t = np.arange(int(0.35 * sr)) / sr
    freq = 48.0 + 95.0 * np.exp(-t / 0.035)
    return np.sin(2 * np.pi * np.cumsum(freq) / sr) * np.exp(-t / 0.13)


def _snare(sr: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(0.22 * sr)) / sr
    white = rng.standard_normal(len(t) + 2)
    # Band-pass (zeros at DC and Nyquist): crisp, with no energy where inter-sample peaks come from.
    noise = (white[2:] - white[:-2]) * 0.35
    return noise * np.exp(-t / 0.06) + 0.6 * np.sin(2 * np.pi * 190.0 * t) * np.exp(-t / 0.045)


def _hat(sr: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(0.06 * sr)) / sr
    white = rng.standard_normal(len(t) + 2)
    noise = white[2:] - white[:-2]
    return noise * np.exp(-t / 0.014)


@lru_cache(maxsize=64)
def _vocal_tract(vowel: str, sr: int) -> np.ndarray:
    """Glottal roll-off and a cascade of three formant resonators (Klatt style, unit gain at DC) as one SOS filter."""
    sections = [np.concatenate([np.polymul([0.25], [0.3]), [0.0, 0.0], np.polymul([1.0, -0.75], [1.0, -0.7])])]
    for formant, bandwidth in VOWEL_FORMANTS.get(vowel, VOWEL_FORMANTS["a"]):
        r = math.exp(-math.pi * bandwidth / sr)
        theta = 2 * math.pi * min(formant, 0.45 * sr) / sr
        b1, b2 = -2.0 * r * math.cos(theta), r * r
        sections.append(np.array([1.0 + b1 + b2, 0.0, 0.0, 1.0, b1, b2]))
    return np.stack(sections)


def _voice_note(freq: float, n: int, sr: int, vowel: str) -> np.ndarray:
    """A formant-filtered glottal pulse train: crude, but unmistakably a sung vowel."""
    t = np.arange(n) / sr
    depth = (2.0 ** (25.0 / 1200.0) - 1.0) * np.minimum(1.0, t / 0.25)
    cycles = np.cumsum(freq * (1.0 + depth * np.sin(2 * np.pi * 5.6 * t))) / sr
    pulses = np.diff(np.floor(cycles), prepend=0.0)
    return sosfilt(_vocal_tract(vowel, sr), pulses) * _envelope(n, sr, attack=0.03, decay=None, release=0.06)


@dataclass(frozen=True)
class Faults:
    """How a rendering departs from the clean one; the clean one has none."""

    tempo_factor: float = 1.0
    detune_cents: tuple[float, float] = (0.0, 0.0)
    hum: bool = False
    dc_offset: float = 0.0
    drift: float = 0.0
    jitter_s: float = 0.0
    dropout_share: float = 0.0
    snr_db: float | None = None
    target_lufs: float = TARGET_LUFS
    drive_db: float = 0.0
    lead_in_share: float = 0.0


FAULTS = {
    "aurora": Faults(),
    "clipper": Faults(drive_db=16.0),
    "hiss": Faults(snr_db=10.0),
    "detune": Faults(detune_cents=(30.0, 50.0), hum=True, dc_offset=0.06),
    "wobble": Faults(drift=0.15, jitter_s=0.045, dropout_share=0.10),
    "draggy": Faults(tempo_factor=0.5, target_lufs=QUIET_LUFS, lead_in_share=0.1),
}


def _time_map(beats: int, bpm: float, faults: Faults, rng: np.random.Generator):
    """Beat position -> seconds. A steady grid, or a drifting one for unstable systems."""
    period = 60.0 / bpm
    if not faults.drift:
        return lambda beat: beat * period
    grid = np.arange(0, beats + 8, 0.25)
    phase = rng.uniform(0, 2 * np.pi)
    walk = np.cumsum(rng.normal(0.0, 0.02, len(grid)))
    speed = 1.0 + faults.drift * np.sin(2 * np.pi * grid / 6.0 + phase) + np.clip(walk, -faults.drift, faults.drift)
    seconds = np.concatenate([[0.0], np.cumsum(0.25 * period / np.clip(speed, 0.5, 1.6))])[: len(grid)]
    return lambda beat: float(np.interp(beat, grid, seconds))

def _mix(score: Score, style: Style, faults: Faults, *, sample_rate: int, n: int, rng: np.random.Generator, vocal: bool, bpm: float) -> np.ndarray:
    sr = sample_rate
    when = _time_map(score.beats, bpm, faults, rng)

    def start_of(beat: float) -> int:
        jitter = float(np.clip(rng.normal(0.0, faults.jitter_s / 2), -faults.jitter_s, faults.jitter_s)) if faults.jitter_s else 0.0
        return int(round((when(beat) + jitter) * sr))

    def length_of(note: Note, start: int) -> int:
        # Nothing past the end of the clip is synthesised: the final fade-out covers the cut.
        return max(1, min(int((when(note.beat + note.length) - when(note.beat)) * sr), n - start))

    lead, chords, bass, drums, voice = (np.zeros(n) for _ in range(5))
    for note in score.chords:
        start, phase0 = start_of(note.beat), rng.uniform(0, 6.28)
        if start < n:
            _add(chords, start, note.velocity * _tone(midi_hz(note.midi), length_of(note, start), sr, style.pad, phase0=phase0))
    for note in score.bass:
        start = start_of(note.beat)
        if start < n:
            _add(bass, start, _tone(midi_hz(note.midi), length_of(note, start), sr, "pad" if style.pad != "piano" else "piano"))
    low, high = faults.detune_cents
    for note in score.melody:
        cents = rng.choice([-1.0, 1.0]) * rng.uniform(low, high) if high else 0.0
        freq = midi_hz(note.midi + cents / 100.0)
        start = start_of(note.beat)
        if start >= n:
            continue
        length = length_of(note, start)
        _add(lead, start, note.velocity * _tone(freq, length, sr, style.lead))
        if vocal:
            _add(voice, start, note.velocity * _voice_note(freq / 2.0, length, sr, note.syllable or "a"))
    if faults.hum:
        # Roughness: a fast amplitude flutter on the lead.
        lead *= 1.0 + 0.35 * np.sin(2 * np.pi * 35.0 * np.arange(n) / sr)
    kick = _kick(sr)
    for beat in score.kicks:
        _add(drums, start_of(beat), kick)
    for beat in score.snares:
        _add(drums, start_of(beat), 0.55 * _snare(sr, rng))
    for beat in score.hats:
        _add(drums, start_of(beat), (0.16 if beat % 1 == 0 else 0.11) * _hat(sr, rng))

    def norm(x: np.ndarray) -> np.ndarray:
        rms = np.sqrt(np.mean(np.square(x)))
        return x / rms if rms > 1e-9 else x

    lead_gain = 0.55 if vocal else 1.0
    mix = 1.0 * lead_gain * norm(lead) + 0.4 * norm(chords) + 0.55 * norm(bass) + 0.8 * norm(drums)
    if vocal:
        mix += 1.0 * norm(voice)
    if faults.hum:
        t = np.arange(n) / sr
        hum = np.sin(2 * np.pi * 50 * t) + 0.5 * np.sin(2 * np.pi * 100 * t) + 0.3 * np.sin(2 * np.pi * 150 * t)
        mix += 0.35 * hum
    return mix


def _dropouts(x: np.ndarray, sample_rate: int, share: float, rng: np.random.Generator) -> np.ndarray:
    """Cut digital-silence gaps of 0.15-0.35 s until about `share` of the clip is gone."""
    y = x.copy()
    n = len(y)
    want = int(share * n)
    gone, tries = 0, 0
    mask = np.zeros(n, dtype=bool)
    while gone < want and tries < 100:
        tries += 1
        length = min(int(rng.uniform(0.15, 0.35) * sample_rate), want - gone + int(0.05 * sample_rate))
        start = int(rng.uniform(0.05, 0.95) * n - length / 2)
        start = max(0, min(n - length, start))
        if mask[max(0, start - sample_rate // 4) : start + length + sample_rate // 4].any():
            continue  # keep gaps apart so each is heard as a dropout
        mask[start : start + length] = True
        gone += length
    y[mask] = 0.0
    return y


def _check_args(seconds: float, sample_rate: int) -> None:
    if not (isinstance(sample_rate, int) and 8000 <= sample_rate <= 192000):
        raise ValueError(f"sample_rate must be an integer from 8000 to 192000, got {sample_rate!r}")
    if not (isinstance(seconds, (int, float)) and 0.1 <= seconds <= 600):
        raise ValueError(f"seconds must be from 0.1 to 600, got {seconds!r}")


def render(
    system: str, *, prompt: str, lyrics: str = "", bpm: int | None = None, seed: int = 0, seconds: float = 6.0, sample_rate: int = 22050
) -> np.ndarray:
    """Render `system`'s answer to a condition: float32 mono in [-1, 1], identical for identical inputs."""
    if system not in FAULTS:
        raise ValueError(f"unknown demo system {system!r}; choose one of {', '.join(SYSTEM_NAMES)}")
    _check_args(seconds, sample_rate)
    prompt, lyrics = prompt or "", lyrics or ""
    faults = FAULTS[system]
    style = style_for(prompt, bpm=bpm)
    return _render(style, faults, system=system, prompt=prompt, lyrics=lyrics, seed=seed, seconds=seconds, sample_rate=sample_rate)


def _render(style: Style, faults: Faults, *, system: str, prompt: str, lyrics: str, seed: int, seconds: float, sample_rate: int) -> np.ndarray:
    total = int(round(seconds * sample_rate))
    # A late start: digital silence before the first note.
    lead_in = int(faults.lead_in_share * total)
    n = total - lead_in
    bpm = max(30.0, style.bpm * faults.tempo_factor)
    # Each system writes its own tune for the same prompt, as real systems would. Lyrics only
    # choose the sung vowels, so the same prompt with other words keeps its tune.
    rng = np.random.default_rng([seed, stable_int(prompt), stable_int(system)])
    beats = int(math.ceil(seconds * bpm / 60.0 * (1.0 + 2 * faults.drift))) + 2
    score = compose(style, beats=beats, rng=rng, lyrics=lyrics)
    mix = _mix(score, style, faults, sample_rate=sample_rate, n=n, rng=rng, vocal=bool(lyrics.strip()), bpm=bpm)

    if faults.snr_db is not None:
        signal_power = float(np.mean(np.square(mix)))
        noise = rng.standard_normal(n)
        mix = mix + noise * math.sqrt(signal_power / 10.0 ** (faults.snr_db / 10.0))

    fade_in, fade_out = min(n, int(0.005 * sample_rate)), min(n, int(0.05 * sample_rate))
    mix[:fade_in] *= np.linspace(0.0, 1.0, fade_in)
    mix[n - fade_out :] *= np.linspace(1.0, 0.0, fade_out)
    out = master(mix, sample_rate, target_lufs=faults.target_lufs)

    if faults.drive_db:
        out = np.clip(out / np.max(np.abs(out)) * 10.0 ** (faults.drive_db / 20.0), -1.0, 1.0)
    if faults.dc_offset:
        out = out + faults.dc_offset
        peak = np.max(np.abs(out))
        if peak > 0.98:
            out = (out - faults.dc_offset) * ((0.98 - faults.dc_offset) / np.max(np.abs(out - faults.dc_offset))) + faults.dc_offset
    if faults.dropout_share:
        out = _dropouts(out, sample_rate, faults.dropout_share, rng)
    if lead_in:
        out = np.concatenate([np.zeros(lead_in), out])
    return np.clip(out, -1.0, 1.0).astype(np.float32)


def render_reference(*, prompt: str, seed: int = 0, seconds: float = 6.0, sample_rate: int = 22050) -> np.ndarray:
    """A style anchor for reference-audio conditions: the prompt's style, clean, with its own tune."""
    _check_args(seconds, sample_rate)
    prompt = prompt or ""
    # Same style as the prompt asks for, its own tune, no voice: an anchor, not an answer.
    return _render(style_for(prompt), FAULTS[CLEAN_SYSTEM], system="reference", prompt=prompt, lyrics="", seed=seed, seconds=seconds, sample_rate=sample_rate)

