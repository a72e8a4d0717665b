"""The default moderation hook: profanity refused in its common disguises, music words left alone."""

from __future__ import annotations

import pytest

from arena.models import Battle
from arena.moderation import REASON_TEXT, has_profanity, rule_based
from tests.arena.conftest import arena_system, visitor_client, visitor_with_terms

REFUSED = [
    "fucking loud punk",
    "a FUCKING loud punk song",
    "f*cking loud punk",
    "fuuuuuck this beat",
    "sh1t beat with a drop",
    "a shitty lo-fi beat",
    "motherfucker rap",
    "b1tch anthem",
    "a retarded groove",
]
ALLOWED = [
    "Scunthorpe brass band anthem",
    "classic rock with a heavy bass line",
    "massive bass and a church organ",
    "punky garage riff",
    "cocktail jazz piano",
    "Sussex folk song about the sea",
    "analog synth arpeggios",
    "a god-like choir over a hellish metal riff",
    "assassin theme for a spy film",
    "Mississippi delta blues",
]


@pytest.mark.parametrize("prompt", REFUSED)
def test_profanity_is_refused_in_its_disguises(prompt):
    assert has_profanity(prompt)
    assert rule_based(prompt) == {"allowed": False, "reasons": ["profanity"]}


@pytest.mark.parametrize("prompt", ALLOWED)
def test_music_words_that_contain_or_resemble_swear_words_pass(prompt):
    assert not has_profanity(prompt)
    assert rule_based(prompt) == {"allowed": True, "reasons": []}


def test_profane_lyrics_are_refused_too():
    assert rule_based("a calm ballad", "we sing all night\nwhat the fuck") == {"allowed": False, "reasons": ["profanity"]}


def test_the_refusal_reaches_the_visitor_in_words_and_creates_no_battle(db):
    arena_system("s1")
    arena_system("s2")
    _, cookie = visitor_with_terms()
    response = visitor_client(cookie).post("/arena/api/battles/", {"prompt": "fucking loud punk"}, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["reasons"] == ["profanity"]
    assert "profanity" in REASON_TEXT["profanity"]
    assert not Battle.objects.exists()
