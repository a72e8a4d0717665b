"""Category boards: the keyword rule, the language rule studies use, too-few boards, a plugged-in tagger, and the
same boards (categories and screen) from the database and from a release."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from arena.boards import category_boards, keyword_tags
from arena.leaderboard import VoteRow, board_with_style
from arena.models import Battle
from arena.release import release_export
from arena.selectors import vote_rows
from arena.services import leaderboard_refresh
from scoring.results_section import script_of

from .helpers import simulated, styled_arena


@pytest.mark.parametrize(
    ("prompt", "genre", "mood"),
    [
        ("Dark synthwave with driving drums", ["electronic"], ["energetic", "dark"]),
        ("lo-fi hip hop beat to study to", ["hip-hop", "lo-fi"], []),
        ("a song about a rocket and popcorn", [], []),
        ("Melancholic string quartet, slow", ["classical"], ["sad", "calm"]),
        ("upbeat R&B groove", ["r&b"], ["happy"]),
    ],
)
def test_the_keyword_rule_matches_whole_words_and_phrases(prompt, genre, mood):
    tags = keyword_tags(prompt, "")
    assert tags == {"genre": genre, "mood": mood}


def rows_with_prompts():
    rows = simulated(1, 900)
    prompts = ["calm piano", "静かなピアノの曲", "тёмный техно", "upbeat pop song"]
    out = []
    for k, r in enumerate(rows):
        prompt = prompts[k % 4] if k % 20 else "energetic rock"  # 45 rock battles: too few
        out.append(VoteRow(r.system_a, r.system_b, r.vote, r.is_instrumental, covariates=r.covariates, prompt=prompt, is_prebaked=k % 3 == 0, visitor=f"v{k % 9}"))
    return out


def test_category_boards_are_the_boards_of_their_battles_and_a_small_one_says_so():
    rows = rows_with_prompts()
    options = {"rounds": 40, "seed": 1, "min_votes": 0, "style": ("loudness",)}
    result = category_boards(rows, tagger=keyword_tags, min_votes_board=50, **options)
    language = result["families"]["language"]["values"]
    assert set(language) == {"latin", "japanese", "cyrillic"}
    japanese = [r for r in rows if script_of(r.prompt) == "japanese"]
    assert len(japanese) == 225
    expected = board_with_style(japanese, **options)
    assert language["japanese"]["rows"] == expected["rows"] and language["japanese"]["style"] == expected["style"]
    prompt = result["families"]["prompt"]["values"]
    assert prompt["prebaked"]["votes"] == 300 and prompt["typed"]["votes"] == 600
    genre = result["families"]["genre"]["values"]
    assert genre["rock"] == {"votes": 45, "too_few": True, "rows": [], "preliminary": []}
    assert genre["pop"]["too_few"] is False and genre["untagged"]["votes"] == sum(1 for r in rows if r.prompt != "upbeat pop song" and r.prompt != "energetic rock")
    # The keyword tables are English: the Japanese and Russian prompts carry no genre.
    assert result["families"]["mood"]["values"]["energetic"]["too_few"] is True


def tag_everything_as_test(prompt, lyrics):
    return {"genre": ["plugged"], "mood": []}


def test_a_tagger_plugs_in_through_the_setting(db, settings):
    styled_arena(n_battles=120)
    settings.ARENA_PROMPT_TAGGER = "tests.arena.test_categories.tag_everything_as_test"
    settings.ARENA_CATEGORY_MIN_VOTES = 20
    payload = leaderboard_refresh().payload
    genre = payload["categories"]["families"]["genre"]["values"]
    assert list(genre) == ["plugged"] and genre["plugged"]["votes"] == payload["boards"]["instrumental"]["votes"] + payload["boards"]["vocal"]["votes"]
    assert payload["screen"]["fp_rate"] == settings.ARENA_OUTLIER_FP_RATE and "boards" in payload["screen"]


def test_categories_and_screen_are_the_same_from_the_database_and_from_the_release(db, tmp_path):
    styled_arena(n_battles=400)
    # A few prompts in other scripts and a prebaked share, so the families have more than one board.
    for k, battle in enumerate(Battle.objects.order_by("id")):
        if k % 5 == 0:
            battle.prompt = "静かなピアノ"
        battle.is_prebaked = k % 2 == 0
        battle.save(update_fields=["prompt", "is_prebaked"])
    release_export(out_dir=tmp_path, audio=False)
    args = ["--json", "--categories", "--screen", "--style-control", "--rounds", "40", "--seed", "3", "--min-votes", "5"]
    live = io.StringIO()
    call_command("leaderboard", *args, stdout=live)
    for name in ("battles.jsonl", "battles.parquet"):
        rebuilt = io.StringIO()
        call_command("leaderboard", *args, "--from-release", str(tmp_path / name), stdout=rebuilt)
        assert live.getvalue() == rebuilt.getvalue(), name
    result = json.loads(live.getvalue())
    assert set(result["categories"]["families"]["language"]["values"]) == {"latin", "japanese"}
    assert result["screen"]["tested"] == 5 and len(vote_rows()[0]) == 400
