"""The headphone screens, by the kind a study stores (`Study.screening`) and each attempt keeps (`ScreeningAttempt.kind`).

A screen is a trial maker (seed, trial index -> WAV bytes), a checker (seed, answers -> how many are right) and
the answers a trial takes. A new screen is a module here, one entry in SCREENS and its choice in
annotation.models.ScreeningKind (tests/annotation/test_registries.py fails while the two differ).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import antiphase, huggins


@dataclass(frozen=True)
class Screen:
    trial_wav: Callable[[int, int], bytes]
    score: Callable[[int, list[int]], int]
    choices: tuple[int, ...]
    # What the page tells the listener to do, and the question each trial's answers are labelled with.
    instructions: str
    question: str

    def choices_text(self) -> str:
        """The answers in a sentence: "1, 2 or 3"."""
        *first, last = (str(c) for c in self.choices)
        return f"{', '.join(first)} or {last}" if first else last


SCREENS: dict[str, Screen] = {
    "huggins": Screen(
        trial_wav=huggins.trial_wav,
        score=huggins.score,
        choices=tuple(range(1, huggins.INTERVALS + 1)),
        instructions=(
            "Each sound below has three noises; in one of them a faint tone hides in the noise, which can only be heard "
            "through headphones. Play each sound and choose the noise with the tone."
        ),
        question="Which noise had the tone?",
    ),
    "antiphase": Screen(
        trial_wav=antiphase.trial_wav,
        score=antiphase.score,
        choices=tuple(range(1, antiphase.INTERVALS + 1)),
        instructions="Each sound below has three low tones. Play each sound and choose the quietest tone.",
        question="Which tone was the quietest?",
    ),
}


def screen_for(kind: str) -> Screen:
    """The screen a stored kind names; a kind no screen has is a LookupError (the data names a screen the code lacks)."""
    try:
        return SCREENS[kind]
    except KeyError:
        raise LookupError(f"no headphone screen of kind {str(kind)!r}; known: {', '.join(sorted(SCREENS))}") from None
