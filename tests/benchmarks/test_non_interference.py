"""Non-interference: what a team member reads (every route of the URL conf, uploads, error messages) does not depend
on the private part. Two worlds that differ only in the private labels, or only in which items are private, must
answer byte for byte the same once times and per-request tokens are normalised (tests/benchmarks/worlds.py).

The partition pair needs figures on the public part that are the same in both worlds, or they would differ by
design: items come in twins (positions 2m and 2m+1 share labels, modality and, in every file, the prediction), one of
each twin private, and the second world swaps which twin is private in some pairs. Public figures then see the same
values in the same order, and any difference left is a route telling which item is private.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from django.test import Client

from scoring.benchmarks import audio, services
from scoring.benchmarks.models import Benchmark, BenchmarkItem, JudgeEndpoint, Submission, Team
from tests.benchmarks.helpers import jsonl, known_study, rated_study
from tests.benchmarks.worlds import differences, in_world, read_everything, upload
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

N_ITEMS = 40
NAME = "twins"


def _flipped(labels: dict) -> dict:
    swap = {0: 1, 1: 0}
    out = copy.deepcopy(labels)
    for block in out.values():
        block["truth"] = swap.get(block.get("truth"), block.get("truth"))
        block["votes"] = [swap.get(v, v) for v in block.get("votes", [])]
    return out


def _teams(bench) -> tuple:
    """Two teams made for the benchmark, with one member each: ours (alice) and theirs (bob)."""
    ours, theirs = Team.objects.create(name="ours", benchmark=bench), Team.objects.create(name="theirs", benchmark=bench)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    ours.members.add(alice)
    theirs.members.add(bob)
    return ours, theirs, alice, bob


def _read_as_both(world: dict, alice: Client, seen: dict) -> dict:
    """Every route read by alice (after her uploads) and by the other team's member."""
    world["submission_ids"] = list(Submission.objects.filter(benchmark=world["bench"]).order_by("id").values_list("id", flat=True))
    seen["alice"] = read_everything(alice, world)
    bob = Client()
    bob.force_login(world["bob"])
    seen["bob"] = read_everything(bob, world)
    return seen


def build(*, flip_private: bool = False, swap: frozenset = frozenset()) -> dict:
    study, _ = known_study(n_pairs=N_ITEMS, name="twins-study")
    bench = services.benchmark_create(name=NAME, study=study, seed=3, bootstrap_rounds=200)
    items = list(bench.items.order_by("position"))
    original = {item.position: copy.deepcopy(item.labels) for item in items}
    for item in items:
        m = item.position // 2
        if item.position % 2:
            twin = items[item.position - 1]
            item.labels, item.modality = copy.deepcopy(original[twin.position]), twin.modality
        item.cluster = f"c{item.position:03d}"
        first_private = (m % 2 == 0) != (m in swap)
        item.is_private = (item.position % 2 == 0) == first_private
        if flip_private and item.is_private:
            item.labels = _flipped(item.labels)
    BenchmarkItem.objects.bulk_update(items, ["labels", "modality", "cluster", "is_private"])
    # The export's MANIFEST holds a checksum of benchmark.json, which holds the creation time.
    Benchmark.objects.filter(pk=bench.pk).update(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    bench.refresh_from_db()
    ours, theirs, alice, bob = _teams(bench)
    JudgeEndpoint.objects.create(team=ours, name="judge", url="http://judge.example.org/", secret="0" * 64)
    ids = [i.item_id for i in items]
    # The other team's file: a stated probability per twin pair, so its page has bins.
    services.submission_from_file(benchmark=bench, team=theirs, data=jsonl([{"id": i, "probability_a": round((n // 2 + 0.5) / (N_ITEMS // 2), 4)} for n, i in enumerate(ids)]), label="theirs")
    return {"bench": bench, "study": study, "ids": ids, "alice": alice, "bob": bob, "team_names": ["ours", "theirs"], "audio_token": audio.token(bench, items[0].clip_a)}


def act(world: dict) -> dict:
    """A member's uploads (good and bad, API and form, a run), then every route read by both teams' members."""
    ids, bench = world["ids"], world["bench"]
    alice = Client()
    alice.force_login(world["alice"])
    seen = {}
    # One probability per twin pair, each its own: the old one-upload decoding attack.
    attack = jsonl([{"id": i, "preferred": "A" if n % 4 < 2 else "B", "probability_a": round(1 - (n // 2 + 0.5) / (N_ITEMS // 2), 4)} for n, i in enumerate(ids)])
    response = upload(alice, f"/api/benchmarks/{bench.name}/submissions/", {"team": "ours", "label": "attack"}, attack)
    seen["upload api"] = (response.status_code, response.content)
    per_dim = jsonl([{"id": i, "preferred_musicality": "B", "preferred_alignment": "A" if (n // 2) % 3 else "B"} for n, i in enumerate(ids)])
    response = upload(alice, f"/benchmarks/{bench.name}/submit/", {"team": "ours", "label": "form"}, per_dim, follow=True)
    seen["upload form"] = (response.status_code, response.redirect_chain, read_body(response))
    bad = jsonl([{"id": ids[0], "preferred": "A"}, {"id": ids[0], "preferred": "B"}, {"id": "nope", "preferred": "A"}, {"id": ids[1], "probability_a": 2}])
    response = upload(alice, f"/api/benchmarks/{bench.name}/submissions/", {"team": "ours"}, bad)
    seen["bad api"] = (response.status_code, response.content)
    response = upload(alice, f"/benchmarks/{bench.name}/submit/", {"team": "ours"}, bad, follow=True)
    seen["bad form"] = (response.status_code, response.redirect_chain, read_body(response))
    response = alice.post(f"/api/benchmarks/{bench.name}/runs/", {"team": "ours", "endpoint": "judge"}, content_type="application/json")
    seen["run api"] = (response.status_code, response.content)
    return _read_as_both(world, alice, seen)


def read_body(response) -> bytes:
    from tests.benchmarks.worlds import normalise

    return normalise(response.content)


def _compare(first: dict, second: dict) -> None:
    problems = []
    for key in first:
        if key in ("alice", "bob", "stranger"):
            problems += [f"{key} {d}" for d in differences(first[key], second[key])]
        elif first[key] != second[key]:
            problems.append(f"{key}: {first[key]!r:.300} vs {second[key]!r:.300}")
    assert not problems, "a team can tell the two worlds apart:\n" + "\n".join(problems[:20])


def test_private_labels_do_not_reach_a_team():
    first = in_world(build, act)
    second = in_world(lambda: build(flip_private=True), act)
    assert len(first["alice"]) > 100  # every route, with the filters, was read
    assert first["upload api"][0] == 201 and first["bad api"][0] == 400
    _compare(first, second)


def test_which_items_are_private_does_not_reach_a_team():
    first = in_world(build, act)
    second = in_world(lambda: build(swap=frozenset({0, 3, 4, 7, 9})), act)
    _compare(first, second)


def act_stranger(world: dict) -> dict:
    """A researcher who neither owns the study nor collaborates on it, with a team she made herself for the
    benchmark: her one-upload decoding file, then every route of the URL conf as her."""
    stranger = UserFactory(username="stranger", roles=["researcher"])
    Team.objects.create(name="hers", benchmark=world["bench"]).members.add(stranger)
    world["team_names"] = [*world["team_names"], "hers"]
    client = Client()
    client.force_login(stranger)
    ids = world["ids"]
    attack = jsonl([{"id": i, "preferred": "A" if n % 4 < 2 else "B", "probability_a": round(1 - (n // 2 + 0.5) / (N_ITEMS // 2), 4)} for n, i in enumerate(ids)])
    response = upload(client, f"/api/benchmarks/{world['bench'].name}/submissions/", {"team": "hers", "label": "attack"}, attack)
    seen = {"upload api": (response.status_code, response.content)}
    world["submission_ids"] = list(Submission.objects.filter(benchmark=world["bench"]).order_by("id").values_list("id", flat=True))
    seen["stranger"] = read_everything(client, world)
    return seen


def test_private_labels_do_not_reach_a_stranger_researcher():
    """Being a researcher is not enough to read a benchmark's private part: the study rule decides (annotation.access)."""
    first = in_world(build, act_stranger)
    second = in_world(lambda: build(flip_private=True), act_stranger)
    assert first["upload api"][0] == 201 and len(first["stranger"]) > 100
    _compare(first, second)


def test_the_worlds_do_differ_where_a_researcher_looks():
    """The comparison is not blind: a collaborator of the study, who may see the private part, does see the flip."""

    def researcher_view(world):
        client = Client()
        researcher = UserFactory(username="res", roles=["researcher"])
        world["study"].collaborators.add(researcher)
        client.force_login(researcher)
        world["submission_ids"] = list(Submission.objects.filter(benchmark=world["bench"]).values_list("id", flat=True))
        return {"r": client.get(f"/api/benchmarks/submissions/{world['submission_ids'][0]}/").content}

    assert in_world(build, researcher_view) != in_world(lambda: build(flip_private=True), researcher_view)
    assert Benchmark.objects.filter(name=NAME).count() == 0  # rolled back


# --- MOS benchmarks: worlds that differ only in the private clips' MOS --------------------------------------------

MOS_CLIPS = 30


def _reversed(labels: dict) -> dict:
    """The same clip rated the other way round on the 1-5 scale: MOS and every rating mirrored."""
    out = copy.deepcopy(labels)
    for block in out.values():
        block["mos"] = 6.0 - block["mos"]
        block["ratings"] = [[rater, 6.0 - value] for rater, value in block["ratings"]]
    return out


def build_mos(*, reverse_private: bool = False) -> dict:
    study, _ = rated_study(n_clips=MOS_CLIPS, name="twins-rated")
    bench = services.benchmark_create(name=NAME, study=study, kind="mos", seed=3, bootstrap_rounds=200)
    items = list(bench.items.order_by("position"))
    if reverse_private:
        for item in items:
            if item.is_private:
                item.labels = _reversed(item.labels)
        BenchmarkItem.objects.bulk_update(items, ["labels"])
    Benchmark.objects.filter(pk=bench.pk).update(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    bench.refresh_from_db()
    _, theirs, alice, bob = _teams(bench)
    ids = [i.item_id for i in items]
    services.submission_from_file(benchmark=bench, team=theirs, data=jsonl([{"id": i, "score": (n * 7) % 11} for n, i in enumerate(ids)]), label="theirs")
    return {"bench": bench, "study": study, "ids": ids, "alice": alice, "bob": bob, "team_names": ["ours", "theirs"], "audio_token": audio.token(bench, items[0].clip_a)}


def act_mos(world: dict) -> dict:
    """A member's score files (API and form, a refused one, a judge run the benchmark refuses), then every route."""
    ids, bench = world["ids"], world["bench"]
    alice = Client()
    alice.force_login(world["alice"])
    seen = {}
    # One distinct score per clip: the file that would read a clip's rank if any figure used the private part.
    ladder = jsonl([{"id": i, "score_musicality": n, "score_alignment": -n} for n, i in enumerate(ids)])
    response = upload(alice, f"/api/benchmarks/{bench.name}/submissions/", {"team": "ours", "label": "ladder"}, ladder)
    seen["upload api"] = (response.status_code, response.content)
    partial = jsonl([{"id": i, "score": n % 5} for n, i in enumerate(ids[::2])])
    response = upload(alice, f"/benchmarks/{bench.name}/submit/", {"team": "ours", "label": "form"}, partial, follow=True)
    seen["upload form"] = (response.status_code, response.redirect_chain, read_body(response))
    bad = jsonl([{"id": ids[0], "score": 1}, {"id": ids[0], "score": 2}, {"id": "nope", "score": 1}, {"id": ids[1], "preferred": "A"}])
    response = upload(alice, f"/api/benchmarks/{bench.name}/submissions/", {"team": "ours"}, bad)
    seen["bad api"] = (response.status_code, response.content)
    response = alice.post(f"/api/benchmarks/{bench.name}/runs/", {"team": "ours", "endpoint": "judge"}, content_type="application/json")
    seen["run api"] = (response.status_code, response.content)
    return _read_as_both(world, alice, seen)


def test_private_mos_values_do_not_reach_a_team():
    first = in_world(build_mos, act_mos)
    second = in_world(lambda: build_mos(reverse_private=True), act_mos)
    assert len(first["alice"]) > 100
    assert first["upload api"][0] == 201 and first["bad api"][0] == 400 and first["run api"][0] == 400
    assert b"SRCC" in first["alice"][f"/benchmarks/{NAME}/"][-1]
    _compare(first, second)


def test_the_mos_worlds_do_differ_where_a_researcher_looks():
    def researcher_view(world):
        client = Client()
        researcher = UserFactory(username="res", roles=["researcher"])
        world["study"].collaborators.add(researcher)
        client.force_login(researcher)
        return {"r": client.get(f"/api/benchmarks/{NAME}/leaderboard/?dim=musicality").content}

    assert in_world(build_mos, researcher_view) != in_world(lambda: build_mos(reverse_private=True), researcher_view)
