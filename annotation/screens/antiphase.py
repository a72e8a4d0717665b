"""Headphone-screen trials (antiphase loudness, Woods et al. 2017), made on the server from a seed.

Each trial is three 200 Hz tones of 1 s with 100 ms ramps, 0.5 s apart. One tone is 6 dB quieter
than the others; one is at full level but in antiphase (the right channel is the left inverted);
the third is the plain full-level tone. The listener picks the quietest. Over headphones each ear
gets the full antiphase tone and the -6 dB tone is the quietest; over loudspeakers the antiphase
tone largely cancels in the air and sounds the quietest instead, so a loudspeaker listener tends to
answer wrong rather than at chance.

It is the older, cheaper screen: Milne et al. (2021) found it passes more loudspeaker listeners
than the Huggins-pitch screen, which a study should prefer; a study can ask for this one when its
listeners' devices play low tones better than noise. A script that reads both channels solves it
(the quietest tone has the lowest RMS in each channel), as any dichotic screen can be (docs/crowd.md).

The order of the three tones comes from the attempt's seed, so the server can rebuild any trial to
serve it or check it and never sends or stores the answer.
"""

from __future__ import annotations

import numpy as np

from . import trials

SAMPLE_RATE = 44_100
TONE_HZ = 200.0
TONE_SECONDS = 1.0
RAMP_SECONDS = 0.1
GAP_SECONDS = 0.5
INTERVALS = 3
LEVEL = 0.2
QUIET_DB = -6.0


def trial_spec(seed: int, index: int) -> dict:
    """Which interval (1-3) holds the quiet tone (the answer) and which the antiphase tone."""
    rng = np.random.default_rng([int(seed) & (2**63 - 1), int(index), 2])
    quiet, antiphase, _ = (int(i) + 1 for i in rng.permutation(INTERVALS))
    return {"target": quiet, "antiphase": antiphase}


def answers_for(seed: int, trials: int) -> list[int]:
    return [trial_spec(seed, i)["target"] for i in range(trials)]


def trial_audio(seed: int, index: int) -> np.ndarray:
    """(samples, 2) float32 stereo for trial `index`: three tones with gaps."""
    spec = trial_spec(seed, index)
    n = int(SAMPLE_RATE * TONE_SECONDS)
    ramp = int(RAMP_SECONDS * SAMPLE_RATE)
    envelope = np.ones(n)
    # Raised-cosine ramps: no click at the onsets, which would be a cue of its own.
    envelope[:ramp] = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, ramp))
    envelope[-ramp:] = envelope[:ramp][::-1]
    tone = np.sin(2 * np.pi * TONE_HZ * np.arange(n) / SAMPLE_RATE) * envelope * LEVEL
    tones = []
    for interval in range(1, INTERVALS + 1):
        if interval == spec["target"]:
            left = right = tone * 10 ** (QUIET_DB / 20)
        elif interval == spec["antiphase"]:
            left, right = tone, -tone
        else:
            left = right = tone
        tones.append(np.stack([left, right], axis=1))
    return trials.sequence(tones, gap_seconds=GAP_SECONDS, sample_rate=SAMPLE_RATE)


def trial_wav(seed: int, index: int) -> bytes:
    return trials.wav(trial_audio(seed, index), SAMPLE_RATE)


def score(seed: int, answers: list[int]) -> int:
    """How many answers name the quiet tone."""
    return trials.right(answers_for, seed, answers)
