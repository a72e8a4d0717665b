"""The demo's six systems (their ranks are true by construction) and its eight conditions (all four modalities)."""

from __future__ import annotations

from dataclasses import dataclass, field

ORGANISATION = "Auditorium demo"


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

