"""From a prompt to a score: key, mode, tempo and instruments read from plain keywords, then a tune in beats."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

import numpy as np

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


def stable_int(*parts: object) -> int:
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
        root_pc = stable_int("key", text) % 12
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

