"""Semantic hard negatives: a clip that is fine music but answers another prompt (AnyAudio-Judge style).

A signal fault (scoring/hardneg.py) tests whether a judge hears damage; a semantic negative tests
whether it hears what was asked. From a condition, one attribute the prompt asks for is changed
(the instrument, genre, tempo, mood, vocals or instrumental; a lyric line; the reference), and the
wrong answer is either

- generated: the prompt is rewritten (`rewrite`) and the original clip's system makes the variant
  through its arena adapter, or
- swapped: a clip of another condition in the study whose prompt differs in that attribute (and
  agrees on the others where it can, `swap_candidates`).

The catch pair expects the original on alignment only: the variant may be as good music.

Attributes are read from plain words (word boundaries, case-insensitive). The lists are for
finding what to change, not for judging: a prompt with none of the words has nothing to rewrite
for that attribute, and the caller is told so.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# Each attribute is a list of values; each value a list of phrasings, the first is what a rewrite writes.
VALUES: dict[str, list[list[str]]] = {
    "instrument": [
        ["piano"],
        ["acoustic guitar", "guitar", "guitars"],
        ["electric guitar"],
        ["violin", "violins"],
        ["cello"],
        ["strings", "string quartet", "orchestra"],
        ["saxophone", "sax"],
        ["trumpet", "brass"],
        ["flute"],
        ["synthesizer", "synth", "synths"],
        ["organ"],
        ["harp"],
        ["drums", "percussion"],
    ],
    "genre": [
        ["jazz"],
        ["rock"],
        ["heavy metal", "metal"],
        ["classical"],
        ["hip hop", "hip-hop", "rap"],
        ["electronic", "edm", "techno", "house"],
        ["folk"],
        ["pop"],
        ["reggae"],
        ["blues"],
        ["country"],
        ["ambient"],
        ["funk"],
        ["lo-fi", "lofi"],
    ],
    "tempo": [
        ["fast", "upbeat", "uptempo", "up-tempo", "energetic", "driving", "quick"],
        ["slow", "downtempo", "laid-back", "relaxed", "calm", "gentle"],
    ],
    "mood": [
        ["happy", "cheerful", "joyful", "uplifting", "bright", "playful"],
        ["sad", "melancholic", "melancholy", "somber", "gloomy", "dark", "mournful"],
    ],
    "vocals": [
        ["with vocals", "vocals", "vocal", "singing", "singer", "sung", "choir", "voice"],
        ["instrumental", "no vocals", "without vocals"],
    ],
}
TEXT_ATTRIBUTES = tuple(VALUES)
ATTRIBUTES = (*TEXT_ATTRIBUTES, "lyrics", "reference")


class SemanticError(ValueError):
    """The condition has nothing to change for this attribute; the message says what is missing."""


@dataclass(frozen=True)
class Rewrite:
    prompt: str
    lyrics: str
    change: dict  # {"attribute", "from", "to"}: stored with the variant and its catch pair


def _pattern(phrase: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", re.IGNORECASE)


def _found(text: str, attribute: str) -> tuple[int, str, re.Match] | None:
    """(value index, phrase, match) of the earliest phrasing of the attribute in text; longer phrasings win ties."""
    best = None
    for index, phrasings in enumerate(VALUES[attribute]):
        for phrase in phrasings:
            match = _pattern(phrase).search(text)
            if match and (best is None or (match.start(), -len(phrase)) < (best[2].start(), -len(best[1]))):
                best = (index, phrase, match)
    return best


def prompt_attributes(prompt: str) -> dict[str, int]:
    """{attribute: value index} for each attribute the prompt states."""
    out = {}
    for attribute in TEXT_ATTRIBUTES:
        found = _found(prompt or "", attribute)
        if found is not None:
            out[attribute] = found[0]
    return out


def value_name(attribute: str, index: int) -> str:
    return VALUES[attribute][index][0]


def rewrite(*, prompt: str, lyrics: str, attribute: str, seed: int = 0, other_lyrics: list[str] = ()) -> Rewrite:
    """The condition with one attribute changed. Two-valued attributes flip; others take another value, by seed."""
    if attribute not in ATTRIBUTES:
        raise SemanticError(f"attribute must be one of {', '.join(ATTRIBUTES)} (got {attribute!r})")
    rng = random.Random(seed)
    if attribute == "reference":
        raise SemanticError("a reference cannot be rewritten into a prompt: use the swap mode, which takes another condition's reference")
    if attribute == "lyrics":
        lines = [line for line in (lyrics or "").splitlines() if line.strip()]
        if not lines:
            raise SemanticError("the condition has no lyrics to change")
        at = rng.randrange(len(lines))
        donors = [line for text in other_lyrics for line in text.splitlines() if line.strip() and line.strip() not in {x.strip() for x in lines}]
        if donors:
            new_line = rng.choice(donors)
        else:
            words = lines[at].split()
            if len(set(words)) < 2:
                raise SemanticError("the lyric line has one word and no other condition gives a line to swap in")
            new_line = " ".join(reversed(words))
        changed = list(lines)
        changed[at] = new_line
        return Rewrite(prompt=prompt, lyrics="\n".join(changed), change={"attribute": "lyrics", "from": lines[at], "to": new_line, "line": at + 1})
    found = _found(prompt or "", attribute)
    if found is None:
        said = ", ".join(v[0] for v in VALUES[attribute])
        raise SemanticError(f"the prompt states no {attribute} to change (looked for: {said})")
    index, phrase, match = found
    choices = [i for i in range(len(VALUES[attribute])) if i != index]
    if attribute == "instrument":
        # Not an instrument the prompt already names: "piano and violin" -> "violin and violin" changes nothing.
        present = set(prompt_instruments(prompt))
        choices = [i for i in choices if i not in present] or choices
    target = choices[0] if len(choices) == 1 else rng.choice(choices)
    replacement = VALUES[attribute][target][0]
    if match.group(0)[:1].isupper():
        replacement = replacement[:1].upper() + replacement[1:]
    new_prompt = prompt[: match.start()] + replacement + prompt[match.end() :]
    return Rewrite(prompt=new_prompt, lyrics=lyrics, change={"attribute": attribute, "from": value_name(attribute, index), "to": value_name(attribute, target)})


def prompt_instruments(prompt: str) -> list[int]:
    return [i for i, phrasings in enumerate(VALUES["instrument"]) if any(_pattern(p).search(prompt or "") for p in phrasings)]


def swap_candidates(*, attribute: str, condition, others: list) -> list:
    """Other conditions that differ from `condition` in `attribute`, those agreeing on the most other attributes first.

    Conditions are objects with prompt, lyrics and reference_id (annotation.models.Condition).
    """
    if attribute not in ATTRIBUTES:
        raise SemanticError(f"attribute must be one of {', '.join(ATTRIBUTES)} (got {attribute!r})")
    if attribute == "lyrics":
        if not (condition.lyrics or "").strip():
            raise SemanticError("the condition has no lyrics to change")
        differ = [c for c in others if (c.lyrics or "").strip() and c.lyrics.strip() != condition.lyrics.strip()]
        return sorted(differ, key=lambda c: (c.prompt != condition.prompt, c.pk))
    if attribute == "reference":
        if condition.reference_id is None:
            raise SemanticError("the condition has no reference audio to change")
        differ = [c for c in others if c.reference_id is not None and c.reference_id != condition.reference_id]
        return sorted(differ, key=lambda c: (c.prompt != condition.prompt, c.pk))
    mine = prompt_attributes(condition.prompt)
    if attribute not in mine:
        said = ", ".join(v[0] for v in VALUES[attribute])
        raise SemanticError(f"the prompt states no {attribute} to change (looked for: {said})")
    scored = []
    for other in others:
        theirs = prompt_attributes(other.prompt)
        if attribute not in theirs or theirs[attribute] == mine[attribute]:
            continue
        agree = sum(1 for a, v in mine.items() if a != attribute and theirs.get(a) == v)
        clash = sum(1 for a, v in mine.items() if a != attribute and a in theirs and theirs[a] != v)
        scored.append((clash, -agree, other.pk, other))
    return [entry[-1] for entry in sorted(scored, key=lambda e: e[:3])]
