"""Dev benchmarks never hold test items (they ship their labels), and a team downloads only its own benchmarks' exports."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from annotation.models import Judgment
from common.errors import ServiceError
from scoring.benchmarks import audio, services
from scoring.benchmarks.models import Team
from tests.benchmarks.helpers import known_study
from tests.benchmarks.worlds import differences, in_world, read_everything
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_dev_benchmark_draws_from_the_train_split_only():
    study, _ = known_study(n_pairs=10, name="splits")
    known_study(n_pairs=6, study=study, split="train")
    test = services.benchmark_create(name="splits-test", study=study, bootstrap_rounds=100)
    dev = services.benchmark_create(name="splits-dev", study=study, is_dev=True, bootstrap_rounds=100)
    assert set(test.items.values_list("pair__split", flat=True)) == {"test"} and test.n_items == 10
    assert set(dev.items.values_list("pair__split", flat=True)) == {"train"} and dev.n_items == 6


def test_an_overlap_with_a_test_benchmark_is_refused_both_ways():
    study, _ = known_study(n_pairs=8, name="clash")
    clips = list({p.clip_a for p in study.pairs.all()} | {p.clip_b for p in study.pairs.all()})
    # The same clips under train-split pairs: the same listening tasks, matched by audio.
    known_study(n_pairs=8, study=study, split="train", clips=sorted(clips, key=lambda c: c.pk))
    services.benchmark_create(name="clash-test", study=study, bootstrap_rounds=100)
    with pytest.raises(ServiceError, match="items of the test benchmark\\(s\\) clash-test") as refused:
        services.benchmark_create(name="clash-dev", study=study, is_dev=True, bootstrap_rounds=100)
    assert refused.value.code == "overlap"
    other, _ = known_study(n_pairs=8, name="clash2", split="train")
    services.benchmark_create(name="clash2-dev", study=other, is_dev=True, bootstrap_rounds=100)
    known_study(n_pairs=4, study=other, split="test", clips=sorted({p.clip_a for p in other.pairs.all()} | {p.clip_b for p in other.pairs.all()}, key=lambda c: c.pk))
    with pytest.raises(ServiceError, match="shipped with their labels by the dev benchmark\\(s\\) clash2-dev"):
        services.benchmark_create(name="clash2-test", study=other, bootstrap_rounds=100)


def test_the_create_page_names_the_overlap():
    study, _ = known_study(n_pairs=6, name="clashpage")
    known_study(n_pairs=6, study=study, split="train", clips=sorted({p.clip_a for p in study.pairs.all()} | {p.clip_b for p in study.pairs.all()}, key=lambda c: c.pk))
    services.benchmark_create(name="clashpage-test", study=study, bootstrap_rounds=100)
    client = Client()
    client.force_login(UserFactory(username="clash-res", roles=["researcher"], is_superuser=True))
    response = client.post("/benchmarks/new/", {"name": "clashpage-dev", "study": study.name, "dev": "on", "seed": "0", "public_share": "0.5", "rounds": "100"})
    assert response.status_code == 409
    assert "clashpage-test" in response.content.decode()


def test_a_team_downloads_only_the_exports_of_its_benchmarks():
    study, _ = known_study(n_pairs=6, name="gate", split="train")
    dev = services.benchmark_create(name="gate-dev", study=study, is_dev=True, bootstrap_rounds=100)
    other_study, _ = known_study(n_pairs=6, name="gate-other")
    other = services.benchmark_create(name="gate-other", study=other_study, bootstrap_rounds=100)
    inside, outside = UserFactory(username="gate-in"), UserFactory(username="gate-out")
    Team.objects.create(name="gate-dev-team", benchmark=dev).members.add(inside)
    Team.objects.create(name="gate-other-team", benchmark=other).members.add(outside)
    member, stranger = Client(), Client()
    member.force_login(inside)
    stranger.force_login(outside)
    assert member.get(f"/benchmarks/{dev.name}/export.zip").status_code == 200
    assert stranger.get(f"/benchmarks/{dev.name}/export.zip").status_code == 404
    assert 'id="export-link"' not in stranger.get(f"/benchmarks/{dev.name}/").content.decode()
    assert stranger.get(f"/benchmarks/{other.name}/export.zip").status_code == 200


def _dev_world(*, flip: bool) -> dict:
    """A test benchmark and a dev benchmark on one study; `flip` turns every human vote on the test benchmark's private
    pairs (before anything is frozen), the secret that must not reach the dev benchmark's team."""
    study, _ = known_study(n_pairs=16, name="devworld")
    known_study(n_pairs=8, study=study, split="train")
    if flip:
        from scoring.benchmarks.models import Benchmark

        probe = services.benchmark_create(name="probe", study=study, seed=9, bootstrap_rounds=100)
        private = list(probe.items.filter(is_private=True).values_list("pair_id", flat=True))
        Benchmark.objects.filter(pk=probe.pk).delete()
        for j in Judgment.objects.filter(pair_id__in=private).select_related("pair"):
            other = {j.pair.clip_a_id: j.pair.clip_b_id, j.pair.clip_b_id: j.pair.clip_a_id}
            j.alignment_choice_id, j.musicality_choice_id = other[j.alignment_choice_id], other[j.musicality_choice_id]
            j.save(update_fields=["alignment_choice", "musicality_choice"])
    services.benchmark_create(name="devworld-test", study=study, seed=9, bootstrap_rounds=100)
    dev = services.benchmark_create(name="devworld-dev", study=study, is_dev=True, seed=1, bootstrap_rounds=100)
    from datetime import UTC, datetime

    from scoring.benchmarks.models import Benchmark

    Benchmark.objects.filter(pk=dev.pk).update(created_at=datetime(2026, 1, 1, tzinfo=UTC))
    dev.refresh_from_db()
    member = UserFactory(username="dev-member")
    Team.objects.create(name="dev-team", benchmark=dev).members.add(member)
    return {"bench": dev, "study": study, "member": member, "team_names": ["dev-team"], "submission_ids": [], "audio_token": audio.token(dev, dev.items.first().clip_a)}


def _dev_team_reads(world: dict) -> dict:
    client = Client()
    client.force_login(world["member"])
    seen = read_everything(client, world)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/benchmarks/{world['bench'].name}/export.zip").content))
    seen["labels"] = archive.read("devworld-dev-v1/items.jsonl")
    return seen


def test_test_labels_do_not_reach_a_dev_benchmarks_team():
    first = in_world(lambda: _dev_world(flip=False), _dev_team_reads)
    second = in_world(lambda: _dev_world(flip=True), _dev_team_reads)
    assert b"preference-musicality" in first["labels"]  # the dev export does carry labels: its own
    problems = differences({k: v for k, v in first.items() if k != "labels"}, {k: v for k, v in second.items() if k != "labels"})
    assert first["labels"] == second["labels"], "the dev export carries test labels"
    assert not problems, "\n".join(problems[:10])
