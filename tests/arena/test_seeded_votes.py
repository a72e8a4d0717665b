"""Seeded demo votes: a fresh demo's board ranks its systems, the votes say they are demo data wherever they
appear, and the battle log, the release page and arena benchmarks leave them out unless asked."""

from __future__ import annotations

import io
import json
from itertools import combinations

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Clip
from arena.models import Battle, LeaderboardSnapshot, ReleaseBuild, Visitor, Vote
from arena.release import boards_from_release, release_export
from arena.seed_votes import ROUNDS, SEEDED_FEEDBACK, SEEDED_KEY, SEEDED_VISITORS
from arena.services import leaderboard_refresh
from tests.factories import UserFactory

from .conftest import ready_battle, visitor_with_terms

SYSTEMS = 6
PAIRS = SYSTEMS * (SYSTEMS - 1) // 2
SEEDED = PAIRS * (ROUNDS["instrumental"] + ROUNDS["vocal"])


@pytest.fixture
def demo_arena(db, settings):
    """What `./auditorium demo` runs, with short clips so rendering stays quick."""
    settings.ARENA_CLIP_SECONDS = 1.0
    settings.ARENA_LEADERBOARD_MIN_VOTES = 20
    out = io.StringIO()
    call_command("seed_arena", stdout=out)
    return out.getvalue()


def test_seed_arena_casts_labelled_votes_and_the_board_ranks_every_demo_system(demo_arena):
    assert f"{SEEDED} seeded demo votes ({SEEDED} new" in demo_arena and "leaderboard fitted" in demo_arena
    votes = Vote.objects.select_related("battle", "visitor")
    assert votes.count() == SEEDED
    assert {v.source for v in votes} == {Vote.Source.SEEDED}
    assert all(v.idempotency_key.startswith(SEEDED_KEY) and v.feedback == SEEDED_FEEDBACK for v in votes)
    assert {v.visitor.pseudonym for v in votes} == set(SEEDED_VISITORS)
    assert all(v.listen_seconds_a == 0.0 and v.listen_seconds_b == 0.0 and not v.battle.listen_events.exists() for v in votes)
    # Real clips, one per system and prompt, shared by the battles that use them.
    battles = Battle.objects.all()
    assert all(b.status == Battle.Status.VOTED and b.clip_a_id and b.clip_b_id and b.system_a_id != b.system_b_id for b in battles)
    assert Clip.objects.count() == SYSTEMS * 6
    # Every pair meets equally often on each board, A/B order mixed.
    for instrumental, rounds in ((True, ROUNDS["instrumental"]), (False, ROUNDS["vocal"])):
        on_board = battles.filter(is_instrumental=instrumental)
        assert on_board.count() == PAIRS * rounds
        assert not on_board.exclude(lyrics="").exists() if instrumental else not on_board.filter(lyrics="").exists()
        pairs = {frozenset((b.system_a_id, b.system_b_id)) for b in on_board}
        assert len(pairs) == PAIRS
    as_a, as_b = battles.filter(system_a__system__name="aurora").count(), battles.filter(system_b__system__name="aurora").count()
    assert 0.35 < as_a / (as_a + as_b) < 0.65

    board = LeaderboardSnapshot.objects.latest().payload["boards"]
    for name, rounds in (("instrumental", ROUNDS["instrumental"]), ("vocal", ROUNDS["vocal"])):
        rows = board[name]["rows"]
        assert len(rows) == SYSTEMS and all(r["votes"] == (SYSTEMS - 1) * rounds for r in rows), rows
        assert board[name]["seeded_votes"] == board[name]["votes"] == PAIRS * rounds
        # Quality follows the demo systems' known musicality ranks: the clean one on top, the clipped one last.
        by_rating = [r["system"] for r in sorted(rows, key=lambda r: -r["rating"])]
        assert by_rating[0] == "aurora" and by_rating[-1] == "clipper", by_rating
        assert rows[0]["rank"] == 1 and max(r["rank"] for r in rows) > 1, rows


def test_seeding_again_adds_nothing(demo_arena):
    before = (Vote.objects.count(), Battle.objects.count(), Clip.objects.count(), Visitor.objects.count(), LeaderboardSnapshot.objects.count())
    keys = sorted(Vote.objects.values_list("idempotency_key", "choice"))
    out = io.StringIO()
    call_command("seed_arena", stdout=out)
    assert f"{SEEDED} seeded demo votes (0 new" in out.getvalue() and "fitted" not in out.getvalue()
    assert (Vote.objects.count(), Battle.objects.count(), Clip.objects.count(), Visitor.objects.count(), LeaderboardSnapshot.objects.count()) == before
    # A lost vote comes back as it was (the draws do not depend on what is stored).
    Vote.objects.filter(idempotency_key=keys[0][0]).delete()
    call_command("seed_arena", stdout=io.StringIO())
    assert sorted(Vote.objects.values_list("idempotency_key", "choice")) == keys


def test_no_votes_flag_and_no_visitor_cookie_reaches_a_seeded_visitor(db, settings):
    from arena.services import visitor_for_cookie

    call_command("seed_arena", "--no-votes", stdout=io.StringIO())
    assert not Vote.objects.exists()
    settings.ARENA_CLIP_SECONDS = 1.0
    call_command("seed_arena", stdout=io.StringIO())
    for name in SEEDED_VISITORS:
        assert visitor_for_cookie(name) is None


def test_the_release_leaves_seeded_votes_out_unless_asked(demo_arena, tmp_path):
    visitor, _ = visitor_with_terms()
    battle = Battle.objects.filter(is_instrumental=True).first()
    mine = ready_battle(visitor, battle.system_a, battle.system_b)
    Vote.objects.create(battle=mine, visitor=visitor, choice="a", listen_seconds_a=6.0, listen_seconds_b=6.0)

    plain = release_export(out_dir=tmp_path / "plain", parquet=False)
    rows = [json.loads(line) for line in (tmp_path / "plain" / "battles.jsonl").read_text().splitlines()]
    assert (plain["battles"], plain["audio_files"], plain["seeded"], plain["seeded_left_out"]) == (1, 2, 0, SEEDED)
    assert [r["source"] for r in rows] == ["visitor"]
    assert f"{SEEDED} seeded demo votes (no one listened) are in the database and left out" in (tmp_path / "plain" / "README.md").read_text()

    full = release_export(out_dir=tmp_path / "full", include_seeded=True)
    rows = [json.loads(line) for line in (tmp_path / "full" / "battles.jsonl").read_text().splitlines()]
    assert (full["battles"], full["audio_files"], full["seeded"]) == (SEEDED + 1, 2 * (SEEDED + 1), SEEDED)
    assert sum(r["source"] == "seeded" for r in rows) == SEEDED and all(r["feedback"] == SEEDED_FEEDBACK for r in rows if r["source"] == "seeded")
    assert "seeded demo votes (`source` = seeded)" in (tmp_path / "full" / "README.md").read_text()
    # The board rebuilt from that release is the live one, seeded counts included.
    live = leaderboard_refresh(rounds=50).payload
    rebuilt = boards_from_release(tmp_path / "full" / "battles.parquet", rounds=50, seed=live["boards"]["vocal"]["seed"], min_votes=20, style=live["style_covariates"])
    assert rebuilt["boards"] == live["boards"]
    assert rebuilt["boards"]["instrumental"]["seeded_votes"] == PAIRS * ROUNDS["instrumental"]


def test_release_command_flag(demo_arena, tmp_path):
    out = io.StringIO()
    call_command("arena_release", str(tmp_path / "a"), "--no-audio", "--no-parquet", stdout=out)
    assert "0 battles" in out.getvalue() and f"{SEEDED} seeded demo votes left out (--include-seeded publishes them)" in out.getvalue()
    out = io.StringIO()
    call_command("arena_release", str(tmp_path / "b"), "--no-audio", "--no-parquet", "--include-seeded", stdout=out)
    assert f"{SEEDED} battles" in out.getvalue() and f"{SEEDED} of the battles are seeded demo votes" in out.getvalue()


def test_release_page_offers_the_seeded_votes_unticked(demo_arena, django_capture_on_commit_callbacks):
    UserFactory(username="res", roles=["researcher"])
    client = Client()
    assert client.login(username="res", password="pw")
    page = client.get("/arena/release/").content.decode()
    assert f"{SEEDED} seeded demo votes" in page and "(0 from visitors now)" in page
    assert '<input type="checkbox" name="include_seeded">' in page  # not ticked
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/arena/release/", {"parquet": "on"})
    build = ReleaseBuild.objects.get()
    assert (build.include_seeded, build.state, build.battles) == (False, "done", 0)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/arena/release/", {"parquet": "on", "include_seeded": "on"})
    build = ReleaseBuild.objects.order_by("-id").first()
    assert (build.include_seeded, build.state, build.battles) == (True, "done", SEEDED)
    assert client.get("/arena/release/status/").json()["builds"][0]["include_seeded"] is True
    assert "(with seeded demo votes)" in client.get("/arena/release/").content.decode()


def test_leaderboard_payload_counts_only_seeded_votes_it_fitted(db, settings):
    """A visitor's vote is not counted as seeded; both-bad votes, left out of the fit, are not counted either."""
    from .conftest import arena_system

    settings.ARENA_LEADERBOARD_MIN_VOTES = 0
    a, b = arena_system("one"), arena_system("two")
    visitor, _ = visitor_with_terms()
    for choice, source in (("a", "visitor"), ("b", "seeded"), ("both_bad", "seeded"), ("tie", "seeded")):
        battle = ready_battle(visitor, a, b)
        Vote.objects.create(battle=battle, visitor=visitor, choice=choice, source=source, listen_seconds_a=6.0, listen_seconds_b=6.0)
    board = leaderboard_refresh(rounds=10).payload["boards"]
    assert (board["instrumental"]["votes"], board["instrumental"]["seeded_votes"], board["vocal"]["seeded_votes"]) == (3, 2, 0)
    music_arena = leaderboard_refresh(rounds=10, method="music-arena").payload["boards"]
    # Music Arena splits by capability: two vocal-capable systems are only ever on its vocal board.
    assert (music_arena["instrumental"]["seeded_votes"], music_arena["vocal"]["seeded_votes"]) == (0, 0)


def test_arena_benchmarks_never_take_seeded_votes_as_labels(demo_arena):
    from scoring.benchmarks.services import _arena_candidates

    assert _arena_candidates() == []
    visitor, _ = visitor_with_terms()
    battle = Battle.objects.first()
    mine = ready_battle(visitor, battle.system_a, battle.system_b)
    Vote.objects.create(battle=mine, visitor=visitor, choice="b", listen_seconds_a=6.0, listen_seconds_b=6.0)
    Battle.objects.filter(pk=mine.pk).update(status=Battle.Status.VOTED)
    assert [c["battle"].pk for c in _arena_candidates()] == [mine.pk]


def test_every_pair_is_planned_once_per_round():
    from arena.seed_votes import _plan

    class S:
        def __init__(self, name):
            self.name = name

    systems = [S(n) for n in ("aurora", "clipper", "detune", "draggy", "hiss", "wobble")]
    ranks = {"aurora": 1, "draggy": 2, "hiss": 3, "detune": 4, "wobble": 5, "clipper": 6}
    plan = _plan(systems, ranks)
    assert len({p["key"] for p in plan}) == len(plan) == SEEDED
    assert plan == _plan(systems, ranks)  # the same draws every time
    wins = {pair: 0 for pair in combinations(sorted(ranks, key=ranks.get), 2)}
    for p in plan:
        if p["choice"] != "tie":
            winner = p["a"].name if p["choice"] == "a" else p["b"].name
            better, worse = sorted((p["a"].name, p["b"].name), key=ranks.get)
            wins[(better, worse)] += winner == better
    # The better-ranked system wins most of its meetings overall.
    assert sum(wins.values()) > 0.7 * len(plan)
