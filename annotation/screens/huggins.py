"""Headphone-screen trials (Huggins pitch, Milne et al. 2021), made on the server from a seed.

Each trial is three 1-second bursts of the same white noise, 0.4 s apart. In one burst
(the target) a narrow band around a centre frequency is phase-inverted in the right channel
only. Over headphones the two ears differ in that band and a faint pitch is heard in the
noise; over loudspeakers the channels mix in the air, the band largely cancels instead, and
the three bursts sound alike, so a loudspeaker listener answers at chance (one in three).

The other two bursts are not diotic either: each has a band of the same width phase-inverted
in the right channel, but high up (6-12 kHz), where the ears do not follow the phase of a
sound and no binaural pitch arises (Huggins and binaural edge pitches live below about
1.5 kHz). So all three bursts differ between the ears by the same expected energy, and a
script that sums |L - R| per burst picks the target only at chance. A script that looks at
*where* in the spectrum L - R lives still finds it: any dichotic screen can be solved by a
program that reads both channels, and this one does not pretend otherwise (docs/crowd.md).

The target interval and the centre frequency come from the attempt's seed, so the server
can rebuild any trial (to serve its audio, or to check an answer) and never has to send
or store the answer.
"""

from __future__ import annotations

import numpy as np

from . import trials

SAMPLE_RATE = 44_100
BURST_SECONDS = 1.0
GAP_SECONDS = 0.4
INTERVALS = 3
BANDWIDTH = 0.06  # +-6% around the centre frequency, as in Milne et al.
LEVEL = 0.1


# Where the other bursts carry their interaural difference: far above the range where interaural phase is heard.
DECOY_LOW_HZ, DECOY_HIGH_HZ = 6000.0, 12000.0


def trial_spec(seed: int, index: int) -> dict:
    """The target interval (1-3) and the centre frequency (Hz) of trial `index`, and the decoy bands of the other bursts."""
    rng = np.random.default_rng([int(seed) & (2**63 - 1), int(index)])
    spec = {"target": int(rng.integers(1, INTERVALS + 1)), "frequency": float(rng.uniform(600.0, 1200.0))}
    spec["decoys"] = [float(rng.uniform(DECOY_LOW_HZ, DECOY_HIGH_HZ)) for _ in range(INTERVALS)]
    return spec


def answers_for(seed: int, trials: int) -> list[int]:
    return [trial_spec(seed, i)["target"] for i in range(trials)]


def _huggins_burst(noise: np.ndarray, frequency: float, target: bool, decoy: float | None = None) -> np.ndarray:
    """(samples, 2): noise whose band around `frequency` is inverted in the right channel (the target), or
    (another burst) whose band of the same width in Hz around the high `decoy` frequency is."""
    spectrum = np.fft.rfft(noise)
    freqs = np.fft.rfftfreq(len(noise), 1.0 / SAMPLE_RATE)
    half_width = BANDWIDTH * frequency
    centre = frequency if target or decoy is None else decoy
    band = np.abs(freqs - centre) <= half_width
    spectrum[band] *= -1.0
    right = np.fft.irfft(spectrum, n=len(noise))
    return np.stack([noise, right], axis=1)


def trial_audio(seed: int, index: int) -> np.ndarray:
    """(samples, 2) float32 stereo for trial `index`: three bursts with gaps, faded in and out."""
    spec = trial_spec(seed, index)
    rng = np.random.default_rng([int(seed) & (2**63 - 1), int(index), 1])
    n = int(SAMPLE_RATE * BURST_SECONDS)
    ramp = int(0.02 * SAMPLE_RATE)
    envelope = np.ones(n)
    envelope[:ramp] = np.linspace(0.0, 1.0, ramp)
    envelope[-ramp:] = np.linspace(1.0, 0.0, ramp)
    bursts = []
    for interval in range(1, INTERVALS + 1):
        noise = rng.standard_normal(n)
        burst = _huggins_burst(noise, spec["frequency"], interval == spec["target"], spec["decoys"][interval - 1])
        bursts.append(LEVEL * burst / np.abs(burst).max() * envelope[:, None])
    return trials.sequence(bursts, gap_seconds=GAP_SECONDS, sample_rate=SAMPLE_RATE)


def trial_wav(seed: int, index: int) -> bytes:
    return trials.wav(trial_audio(seed, index), SAMPLE_RATE)


def score(seed: int, answers: list[int]) -> int:
    """How many answers name the target interval."""
    return trials.right(answers_for, seed, answers)
