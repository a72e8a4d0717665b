"""Demo content: procedural music "systems" whose quality is known by construction.

A newcomer needs realistic pairs to annotate, and tests of reports and judges
need a ranking that is true by design rather than by someone's opinion. Six
systems render the same kind of music from a prompt (melody, chords, bass,
drums, and a sung vowel line when lyrics are given); five of them carry
deliberate faults. Each degraded system has at least one fault a signal-level
judge can measure (clipping, noise, silence, loudness, DC offset), so a
deterministic judge must prefer `aurora` in every pair that contains it.

Everything is numpy and scipy; rendering 6 s takes a few tens of milliseconds.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.ndimage import minimum_filter1d, uniform_filter1d
from scipy.signal import sosfilt

ORGANISATION = "Auditorium demo"
TARGET_LUFS = -14.0
QUIET_LUFS = -30.0
# Leave 1 dB of headroom: a clean master never touches full scale.
PEAK_CEILING = 0.89


@dataclass(frozen=True)
class DemoSystem:
    name: str
    organisation: str
    description: str
    musicality_rank: int
    alignment_rank: int
    flaws: list[str] = field(default_factory=list)


DEMO_SYSTEMS: list[DemoSystem] = [
    DemoSystem(
        name="aurora",
        organisation=ORGANISATION,
        description="Clean reference: melody, chords, bass and drums at the prompt's tempo and key, mastered to -14 LUFS with 1 dB of headroom.",
        musicality_rank=1,
        alignment_rank=1,
        flaws=[],
    ),
    DemoSystem(
        name="draggy",
        organisation=ORGANISATION,
        description="Clean but at half the requested tempo, late to start and mastered far too quietly.",
        musicality_rank=2,
        alignment_rank=6,
        flaws=[
            "tempo: half the requested BPM",
            "loudness: about -30 LUFS (16 dB below the -14 LUFS target)",
            "late start: the first tenth of the clip is digital silence",
        ],
    ),
    DemoSystem(
        name="hiss",
        organisation=ORGANISATION,
        description="The clean arrangement with broadband white noise mixed in at about 10 dB SNR.",
        musicality_rank=3,
        alignment_rank=3,
        flaws=["noise: broadband hiss at about 10 dB SNR (high noise floor, high spectral flatness)"],
    ),
    DemoSystem(
        name="detune",
        organisation=ORGANISATION,
        description="Melody and voice detuned against the chords by 30-50 cents per note, with mains hum, roughness and a DC offset.",
        musicality_rank=4,
        alignment_rank=2,
        flaws=[
            "pitch: every melody note 30-50 cents off the chords",
            "hum: 50 Hz mains hum with harmonics, 35 Hz roughness on the lead",
            "DC offset: +0.06 full scale",
        ],
    ),
    DemoSystem(
        name="wobble",
        organisation=ORGANISATION,
        description="Rhythmically unstable: tempo drifts, onsets are jittered and the audio drops out in short silent gaps.",
        musicality_rank=5,
        alignment_rank=4,
        flaws=["timing: tempo drift of about 15% and onset jitter of up to 45 ms", "dropouts: digital-silence gaps, about 10% of the clip"],
    ),
    DemoSystem(
        name="clipper",
        organisation=ORGANISATION,
        description="The clean mix driven about 16 dB into hard clipping.",
        musicality_rank=6,
        alignment_rank=5,
        flaws=["clipping: a large share of samples (typically over 20%) at full scale", "loudness: far above -14 LUFS"],
    ),
]
SYSTEM_NAMES = [s.name for s in DEMO_SYSTEMS]
CLEAN_SYSTEM = "aurora"


@dataclass(frozen=True)
class DemoCondition:
    key: str
    prompt: str
    lyrics: str = ""
    has_reference: bool = False
    split: str = "train"


DEMO_CONDITIONS: list[DemoCondition] = [
    DemoCondition(
        key="demo-01",
        prompt="Upbeat synth-pop track at 120 BPM with a bright synth lead, punchy drums and a happy major-key chord progression.",
    ),
    DemoCondition(
        key="demo-02",
        prompt="Slow melancholic piano ballad in A minor, 70 BPM, soft drums, an intimate late-night mood.",
        split="test",
    ),
    DemoCondition(
        key="demo-03",
        prompt="Warm acoustic folk song with fingerpicked guitar, hopeful mood, moderate tempo around 96 BPM.",
        lyrics="Morning light on the open road\nCarry me home, carry me home",
    ),
    DemoCondition(
        key="demo-04",
        prompt="Dark minor-key electronic track with a driving 128 BPM beat and a moody synth lead.",
        lyrics="Neon rain falls on the city\nI am waiting here alone",
        split="test",
    ),
    DemoCondition(
        key="demo-05",
        prompt="Lo-fi hip hop beat, relaxed 84 BPM groove, mellow electric piano chords, in the style of the reference.",
        has_reference=True,
    ),
    DemoCondition(
        key="demo-06",
        prompt="Tense cinematic strings piece in D minor, slow 72 BPM pulse, close to the reference clip.",
        has_reference=True,
        split="test",
    ),
    DemoCondition(
        key="demo-07",
        prompt="Cheerful children's song with a flute melody, bouncy 110 BPM, simple major chords, the same feel as the reference.",
        lyrics="Little bird, sing with me\nOne, two, three, under the tree",
        has_reference=True,
    ),
    DemoCondition(
        key="demo-08",
        prompt="Nostalgic 80s synthwave in E minor, 108 BPM, big drums, sung in the manner of the reference.",
        lyrics="Driving through the summer night\nChasing every fading light",
        has_reference=True,
        split="test",
    ),
]


# --- Reading the prompt -------------------------------------------------------------

NOTE_PC = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}
MAJOR = (0, 2, 4, 5, 7, 9, 11)
MINOR = (0, 2, 3, 5, 7, 8, 10)
MINOR_WORDS = ("minor", "sad", "melanchol", "dark", "moody", "somber", "sombre", "tense", "gloomy")
FAST_WORDS = ("fast", "upbeat", "energetic", "dance", "driving", "bouncy", "uptempo")
SLOW_WORDS = ("slow", "ballad", "calm", "gentle", "lullaby", "ambient", "relaxed", "chill")
GENRE_TEMPI = (("drum and bass", 172), ("techno", 128), ("house", 124), ("edm", 126), ("hip hop", 90), ("boom bap", 90), ("rap", 92), ("reggae", 76), ("waltz", 90))
# First match wins: a "piano ballad with strings" leads with strings.
LEADS = (
    ("flute", "flute"),
    ("string", "strings"),
    ("violin", "strings"),
    ("orchestra", "strings"),
    ("guitar", "pluck"),
    ("banjo", "pluck"),
    ("piano", "piano"),
    ("synth", "saw"),
    ("electronic", "saw"),
    ("country", "pluck"),
    ("folk", "pluck"),
)


@dataclass(frozen=True)
class Style:
    bpm: float
    root_pc: int
    minor: bool
    lead: str
    pad: str
    drums: bool


def _stable_int(*parts: object) -> int:
    """A hash that, unlike hash(), is the same in every process."""
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


def style_for(prompt: str, *, bpm: int | None = None) -> Style:
    """Key, mode, tempo and instruments from plain keywords in the prompt."""
    text = prompt.lower()
    if bpm is None:
        match = re.search(r"(\d{2,3})\s*bpm", text)
        if match:
            bpm = int(match.group(1))
        elif any(w in text for w in FAST_WORDS):
            bpm = 128
        elif any(w in text for w in SLOW_WORDS):
            bpm = 72
        else:
            bpm = next((tempo for word, tempo in GENRE_TEMPI if re.search(rf"\b{word}\b", text)), 100)
    tempo = float(min(max(bpm, 30), 240))
    key = re.search(r"\b([A-G])([#b]?)[\s-]*((?i:major|minor))\b", prompt)
    if key:
        root_pc = (NOTE_PC[key.group(1)] + {"#": 1, "b": -1, "": 0}[key.group(2)]) % 12
        minor = key.group(3).lower() == "minor"
    else:
        root_pc = _stable_int("key", text) % 12
        minor = "major" not in text and any(w in text for w in MINOR_WORDS)
    lead = next((timbre for word, timbre in LEADS if word in text), "keys")
    pad = "piano" if "piano" in text else ("strings" if lead == "strings" else "pad")
    drums = not any(w in text for w in ("no drums", "without drums", "a cappella", "drumless"))
    return Style(bpm=tempo, root_pc=root_pc, minor=minor, lead=lead, pad=pad, drums=drums)


# --- Composition (in beats) ----------------------------------------------------------


@dataclass
class Note:
    beat: float
    length: float  # beats
    midi: float
    velocity: float = 1.0
    syllable: str = ""


@dataclass
class Score:
    melody: list[Note]
    chords: list[Note]
    bass: list[Note]
    kicks: list[float]
    snares: list[float]
    hats: list[float]
    beats: int


VOWELS = "aeiou"


def _syllables(lyrics: str) -> list[str]:
    """One vowel per word: enough to make the sung line follow the words' colour."""
    out = []
    for word in re.findall(r"[a-zA-Z']+", lyrics.lower()):
        vowel = next((c for c in word if c in VOWELS), "i" if "y" in word else "a")
        out.append(vowel)
    return out


def compose(style: Style, *, beats: int, rng: np.random.Generator, lyrics: str = "") -> Score:
    scale = MINOR if style.minor else MAJOR
    progression = (0, 5, 2, 6) if style.minor else (0, 4, 5, 3)

    def degree_midi(degree: int, base: int) -> int:
        octave, step = divmod(degree, 7)
        return base + style.root_pc + 12 * octave + scale[step]

    # Keep the tune between about G3 and C#6 whatever the key.
    melody_base = 60 - 12 if style.root_pc >= 7 else 60

    chords, bass, melody = [], [], []
    bars = math.ceil(beats / 4)
    for bar in range(bars):
        root_degree = progression[bar % len(progression)]
        for offset in (0, 2, 4):
            chords.append(Note(beat=4 * bar, length=4, midi=degree_midi(root_degree + offset, 48), velocity=0.8))
        for beat in (0, 2):
            bass.append(Note(beat=4 * bar + beat, length=2, midi=degree_midi(root_degree, 36), velocity=1.0))

    syllables = _syllables(lyrics)
    degree, beat, index = 7 + progression[0], 0.0, 0
    while beat < beats:
        length = float(rng.choice([0.5, 1.0, 1.0, 1.5, 2.0]))
        chord_root = progression[int(beat // 4) % len(progression)]
        if beat % 1 == 0 and rng.random() < 0.6:
            # On the beat, land on a chord tone near the current pitch.
            targets = [chord_root + o + 7 * k for o in (0, 2, 4) for k in (0, 1, 2)]
            degree = min(targets, key=lambda t: abs(t - degree) + rng.random())
        else:
            degree += int(rng.choice([-2, -1, -1, 1, 1, 2]))
        degree = int(np.clip(degree, 2, 13))
        if rng.random() < 0.1 and melody:
            beat += length  # a rest: phrasing, not silence (chords keep sounding)
            continue
        syllable = syllables[index % len(syllables)] if syllables else ""
        melody.append(Note(beat=beat, length=length, midi=degree_midi(degree, melody_base), velocity=float(0.8 + 0.2 * rng.random()), syllable=syllable))
        beat += length
        index += 1

    kicks = [float(b) for b in range(beats) if b % 4 in (0, 2)] + [4 * bar + 2.5 for bar in range(bars) if bar % 2 == 1]
    snares = [float(b) for b in range(beats) if b % 4 in (1, 3)]
    hats = [b / 2 for b in range(2 * beats)]
    if not style.drums:
        kicks, snares, hats = [], [], []
    return Score(melody=melody, chords=chords, bass=bass, kicks=sorted(kicks), snares=snares, hats=hats, beats=beats)


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


@lru_cache(maxsize=8)
def _k_weighting(sample_rate: int) -> np.ndarray:
    """BS.1770 K-weighting as pyloudnorm designs it for this rate, as one SOS filter."""
    from pyloudnorm.iirfilter import IIRfilter

    stages = (IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, sample_rate, "high_shelf"), IIRfilter(0.0, 0.5, 38.0, sample_rate, "high_pass"))
    return np.stack([np.concatenate([np.asarray(f.b) / f.a[0], np.asarray(f.a) / f.a[0]]) for f in stages])


def loudness_lufs(audio: np.ndarray, sample_rate: int) -> float:
    """Integrated loudness (BS.1770-4 gating, the same blocks as pyloudnorm, vectorised: mastering measures it several times).

    Clips shorter than one 400 ms gating block fall back to RMS.
    """
    block = 0.4 * sample_rate
    n = len(audio)
    if n < int(block) + 1:
        rms = float(np.sqrt(np.mean(np.square(audio)))) if n else 0.0
        return -0.691 + 20.0 * math.log10(max(rms, 1e-9))
    weighted = sosfilt(_k_weighting(sample_rate), np.asarray(audio, dtype=np.float64))
    energy = np.concatenate([[0.0], np.cumsum(weighted * weighted)])
    blocks = int(round((n / sample_rate - 0.4) / 0.1)) + 1
    j = np.arange(blocks)
    lower = (0.4 * 0.25 * j * sample_rate).astype(int)
    upper = np.minimum((0.4 * (0.25 * j + 1) * sample_rate).astype(int), n)
    z = (energy[upper] - energy[lower]) / block
    with np.errstate(divide="ignore"):
        level = -0.691 + 10.0 * np.log10(z)
    gated = z[level >= -70.0]
    if len(gated) == 0:
        return float("-inf")
    relative = -0.691 + 10.0 * math.log10(gated.mean()) - 10.0
    kept = z[(level > relative) & (level > -70.0)]
    return -0.691 + 10.0 * math.log10(kept.mean()) if len(kept) else float("-inf")


_TP_OFFSETS = np.arange(-11, 13)
# Windowed-sinc kernels for the three points between samples (4x oversampling, BS.1770 Annex 2).
_TP_KERNELS = np.stack([np.sinc(frac - _TP_OFFSETS) * np.kaiser(len(_TP_OFFSETS), 6.0) for frac in (0.25, 0.5, 0.75)])


def _true_magnitude(x: np.ndarray, floor: float) -> np.ndarray:
    """|x| per sample, raised to the largest inter-sample value on either side (4x oversampled).

    Only samples above `floor` (and the gaps next to them) are interpolated: an inter-sample
    peak above the floor sits next to large samples, and this is far cheaper than
    oversampling the whole clip.
    """
    mag = np.abs(x)
    hot = mag >= floor
    hot[:-1] |= hot[1:]  # the gap before a large sample, as well as the one after it
    hot[-1] = False
    starts = np.flatnonzero(hot)
    if len(starts) == 0:
        return mag
    padded = np.pad(x, (11, 12))
    between = np.abs(padded[starts[:, None] + 11 + _TP_OFFSETS[None, :]] @ _TP_KERNELS.T).max(axis=1)
    out = mag.copy()
    np.maximum.at(out, starts, between)
    np.maximum.at(out, starts + 1, between)
    return out


def true_peak(x: np.ndarray) -> float:
    """Peak of the 4x oversampled signal: what a DAC will actually swing to."""
    peak = float(np.max(np.abs(x), initial=0.0))
    return float(_true_magnitude(x, 0.5 * peak).max(initial=0.0)) if peak > 0 else 0.0


def _limit(x: np.ndarray, magnitude: np.ndarray, ceiling: float, sample_rate: int, window_s: float = 0.01) -> np.ndarray:
    """Gain-riding limiter on the true (inter-sample) peak envelope `magnitude` of `x`.

    A waveshaper would leave flat tops that read as clipping; here the gain dips smoothly
    around loud peaks. The smoothed gain never exceeds the gain each sample needs (a moving
    average of a running minimum of the same width), so the waveform keeps its shape.
    """
    need = np.minimum(1.0, ceiling / np.maximum(magnitude, 1e-12))
    if need.min() >= 1.0:
        return x
    size = 2 * max(1, int(window_s * sample_rate / 2)) + 1
    gain = uniform_filter1d(minimum_filter1d(need, size, mode="nearest"), size, mode="nearest")
    return x * np.minimum(gain, need)


def master(audio: np.ndarray, sample_rate: int, *, target_lufs: float = TARGET_LUFS, ceiling: float = PEAK_CEILING) -> np.ndarray:
    """Bring to the loudness target with the true peak under the ceiling and no DC."""
    x = audio - audio.mean()
    level = loudness_lufs(x, sample_rate)
    if not math.isfinite(level):
        return x
    x = x * 10.0 ** ((target_lufs - level) / 20.0)
    aim = 0.99 * ceiling
    magnitude = _true_magnitude(x, 0.5 * aim)
    if magnitude.max() > aim:
        # Limit to a threshold such that, after making up the loudness the limiter took away,
        # the peaks land on the ceiling; the make-up gain moves slowly, so a few rounds settle it.
        unlimited, threshold = x, aim
        for _ in range(4):
            limited = _limit(unlimited, magnitude, threshold, sample_rate)
            makeup = 10.0 ** ((target_lufs - loudness_lufs(limited, sample_rate)) / 20.0)
            x = limited * makeup
            if abs(threshold * makeup - aim) < 0.003 * aim:
                break
            threshold = aim / makeup
    x = x - x.mean()
    over = true_peak(x)
    return x * (ceiling / over) if over > ceiling else x


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
    rng = np.random.default_rng([seed, _stable_int(prompt), _stable_int(system)])
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


# --- Seeding the database -------------------------------------------------------------------

DEMO_STUDY = "demo"
DEMO_SEED_SECONDS = 6.0
DEMO_SAMPLE_RATE = 22050

STUDY_INSTRUCTIONS = """\
Each task shows one request for a piece of music (a text description, and sometimes lyrics and a
reference recording) and two clips, A and B, made by two systems whose names stay hidden.

1. Read the request first. If there is a reference recording, listen to it: it shows the style
   wanted, it is not one of the answers.
2. Listen to both clips, at least 5 seconds each; switch between them as often as you like.
3. Instruction following: pick the clip that does what was asked (instruments, mood, genre,
   tempo, the lyrics, the reference's style), however good or bad it sounds.
4. Musicality: pick the clip that sounds more like finished, natural music, whatever was asked:
   melody, structure, steady rhythm, clean production without distortion, noise or dropouts,
   natural singing.
5. For each choice, say how sure you are: 5 = one clearly meets it and the other clearly fails,
   3 = a clear lean, 1 = you cannot tell them apart.
6. In one to three short sentences, say what you heard, with times where you can
   ("B drifts off the beat at 0:03", "A is noisy throughout").

The two choices are separate on purpose: a clip may follow the request better and still sound
worse. If a clip does not play or something else is wrong, skip the pair and say why.
"""

# Degraded-vs-degraded pairs, taken in turn so every system meets several others.
_DEGRADED_PAIRS = [
    ("hiss", "clipper"),
    ("detune", "draggy"),
    ("wobble", "hiss"),
    ("clipper", "detune"),
    ("draggy", "wobble"),
    ("hiss", "detune"),
    ("wobble", "clipper"),
    ("draggy", "hiss"),
]
# (condition key, degraded system): pairs with a known answer, aurora on both dimensions.
_GOLD = {("demo-01", "clipper"), ("demo-05", "hiss")}

USERS = (
    # username, password, superuser, groups
    ("admin", "admin", True, ("admin", "researcher")),
    ("researcher", "researcher", False, ("researcher",)),
)
ANNOTATORS = (("annotator1", "annotator"), ("annotator2", "annotator"), ("annotator3", "annotator"))


def _demo_pairs(index: int) -> list[tuple[str, str]]:
    """Screen order as stored (A, B) for condition `index`: aurora against each degraded system, plus a few others."""
    degraded = [s for s in SYSTEM_NAMES if s != CLEAN_SYSTEM]
    pairs = []
    for j, name in enumerate(degraded):
        # Alternate which side aurora is stored on, so nothing downstream can rely on "A is the good one".
        pairs.append((CLEAN_SYSTEM, name) if (index + j) % 2 == 0 else (name, CLEAN_SYSTEM))
    picks = [index % len(_DEGRADED_PAIRS), (index + 3) % len(_DEGRADED_PAIRS)]
    if index % 2 == 0:
        picks.append((index + 5) % len(_DEGRADED_PAIRS))
    for k in picks:
        a, b = _DEGRADED_PAIRS[k]
        pairs.append((a, b) if index % 2 == 0 else (b, a))
    return pairs


def _ensure_user(username: str, password: str, *, superuser: bool = False, groups=()):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        if superuser:
            user = User.objects.create_superuser(username=username, email="", password=password)
        else:
            user = User.objects.create_user(username=username, password=password)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def seed_demo(*, force: bool = False):
    """Fill an empty database with a ready-to-annotate demo study; returns it, or None if studies exist.

    Every object is looked up before it is made (clips by content hash, conditions by content,
    pairs by their clips), so running it again, with or without `force`, adds nothing.
    """
    from django.db import transaction

    from .models import Clip, Pair, Study, System
    from .services import clip_ingest_array, condition_get_or_create, pair_get_or_create, study_annotator_add

    if Study.objects.exists() and not force:
        return None

    with transaction.atomic():
        systems = {}
        for spec in DEMO_SYSTEMS:
            systems[spec.name], _ = System.objects.get_or_create(
                name=spec.name, defaults={"organisation": spec.organisation, "description": spec.description}
            )

        study, _ = Study.objects.get_or_create(
            name=DEMO_STUDY,
            defaults={
                "title": "Demo study",
                "instructions": STUDY_INSTRUCTIONS,
                "overlap_target": 3,
                "overlap_share": 0.5,
                "min_listen_seconds": 5,
                "rationale_min_length": 10,
                "gold_rate": 0.1,
            },
        )

        def demo_clip(*, original_name: str, make, system=None, kind=Clip.Kind.GENERATED) -> Clip:
            # A clip seeded before is found by its name, so a forced re-run renders nothing;
            # new audio is still deduplicated by content hash on ingest.
            found = Clip.objects.filter(original_name=original_name, system=system, kind=kind).order_by("id").first()
            if found is not None:
                return found
            return clip_ingest_array(audio=make(), sample_rate=DEMO_SAMPLE_RATE, system=system, kind=kind, original_name=original_name)[0]

        for index, spec in enumerate(DEMO_CONDITIONS):
            reference = None
            if spec.has_reference:
                reference = demo_clip(
                    original_name=f"demo/reference/{spec.key}.flac",
                    kind=Clip.Kind.REFERENCE,
                    make=lambda: render_reference(prompt=spec.prompt, seed=index, seconds=DEMO_SEED_SECONDS, sample_rate=DEMO_SAMPLE_RATE),
                )
            condition, _ = condition_get_or_create(prompt=spec.prompt, lyrics=spec.lyrics, reference=reference, external_id=spec.key)
            clips = {
                name: demo_clip(
                    original_name=f"demo/{name}/{spec.key}.flac",
                    system=systems[name],
                    make=lambda name=name: render(
                        name, prompt=spec.prompt, lyrics=spec.lyrics, seed=index, seconds=DEMO_SEED_SECONDS, sample_rate=DEMO_SAMPLE_RATE
                    ),
                )
                for name in SYSTEM_NAMES
            }
            for a, b in _demo_pairs(index):
                degraded = b if a == CLEAN_SYSTEM else a
                gold = CLEAN_SYSTEM in (a, b) and (spec.key, degraded) in _GOLD
                pair_get_or_create(
                    study=study,
                    condition=condition,
                    clip_a=clips[a],
                    clip_b=clips[b],
                    split=spec.split,
                    kind=Pair.Kind.GOLD if gold else Pair.Kind.REGULAR,
                    expected_alignment=clips[CLEAN_SYSTEM] if gold else None,
                    expected_musicality=clips[CLEAN_SYSTEM] if gold else None,
                )

        for username, password, superuser, groups in USERS:
            _ensure_user(username, password, superuser=superuser, groups=groups)
        for username, password in ANNOTATORS:
            # Consent is left for the annotator to give: the consent page is the first thing they see.
            study_annotator_add(study=study, user=_ensure_user(username, password))
    return study
