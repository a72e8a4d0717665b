"""The headphone screens, by the kind a study stores (`Study.screening`) and each attempt keeps (`ScreeningAttempt.kind`).

A screen is a trial maker (seed, trial index -> WAV bytes), a checker (seed, answers -> how many are right), the
answers a trial takes and what its page says (templates/annotation/screening.html renders all of it, so a new screen
needs no template of its own). A new screen is a module here, one entry in SCREENS and its choice in
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
    # The page's paragraph above the sounds ("{choices}" becomes the answers in a sentence) and the question each
    # sound's answers are grouped under, for a screen reader.
    instructions: str = "Play each sound and choose your answer: {choices}."
    question: str = "Your answer"

    def choices_text(self) -> str:
        """The answers in a sentence: "1, 2 or 3"."""
        *first, last = (str(c) for c in self.choices)
        return f"{', '.join(first)} or {last}" if first else last

    def instructions_text(self) -> str:
        return self.instructions.format(choices=self.choices_text())


SCREENS: dict[str, Screen] = {
    "huggins": Screen(
        trial_wav=huggins.trial_wav,
        score=huggins.score,
        choices=tuple(range(1, huggins.INTERVALS + 1)),
        instructions=(
            f"Each sound below has {huggins.INTERVALS} noises; in one of them a faint tone hides in the noise, which can only be "
            "heard through headphones. Play each sound and choose the noise with the tone: {choices}."
        ),
        question="Which noise had the tone?",
    ),
    "antiphase": Screen(
        trial_wav=antiphase.trial_wav,
        score=antiphase.score,
        choices=tuple(range(1, antiphase.INTERVALS + 1)),
        instructions=f"Each sound below has {antiphase.INTERVALS} low tones. Play each sound and choose the quietest tone: {{choices}}.",
        question="Which tone was the quietest?",
    ),
}


def screen_for(kind: str) -> Screen:
    """The screen a stored kind names; a kind no screen has is a LookupError (the data names a screen the code lacks)."""
    try:
        return SCREENS[kind]
    except KeyError:
        raise LookupError(f"no headphone screen of kind {str(kind)!r}; known: {', '.join(sorted(SCREENS))}") from None
