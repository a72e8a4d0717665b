"""Rating exports: CMI-RewardBench's MOS layout, raw rows, implied pairs; export -> import -> export gives the same bytes."""

import json
from pathlib import Path

import pytest

from annotation.models import Study
from annotation.ratings import exports, services
from annotation.ratings.models import RatingItem
from common.errors import ServiceError
from scoring import compare
from tests.factories import ClipFactory, ConditionFactory
from tests.ratings_helpers import listen_all, member, rating_study

pytestmark = pytest.mark.django_db


def _rate_all(study, values_by_user):
    for values in values_by_user:
        user = member(study)
        while (a := services.rating_next(study=study, annotator=user)) is not None:
            dims = study.rating_task.dimensions
            ratings = {label: {d: values(a, label, d) for d in dims} for label in a.labels}
            listen_all(a)
            services.rating_submit(assignment_id=a.pk, annotator=user, ratings=ratings, idempotency_key=f"{user.pk}-{a.pk}", rationale=f"heard {a.pk}")


def test_mos_rows_carry_cmi_keys_and_compare_reads_them():
    study = rating_study(task="acr", items=3, overlap_target=2)
    _rate_all(study, [lambda a, label, d: 4 if d == "musicality" else 2, lambda a, label, d: 5 if d == "musicality" else 3])
    files = exports.ratings_export(study=study)
    rows = [json.loads(line) for line in files["mos.jsonl"].decode().splitlines()]
    assert len(rows) == 3
    for row in rows:
        assert row["musicality"] == row["musicality_mos"] == 4.5 and row["text-music alignment"] == row["alignment_mos"] == 2.5
        assert row["musicality_n"] == 2 and "PAM" in row["source"] and row["split"] == "test"
        assert compare.subset_of(row["source"]) == "PAM"
    sheet = json.loads(files["datasheet.json"])
    assert sheet["ratings"] == 12 and sheet["annotators"] == 2 and sheet["task"] == "acr"


def test_implied_pairs_follow_the_documented_rule():
    study = rating_study(task="multi", items=1, clips_per_item=3, reference=True, dimensions=("musicality",), overlap_target=1)
    item = RatingItem.objects.get(study=study)
    tests = list(item.item_clips.filter(role="test").order_by("id").values_list("clip_id", flat=True))
    scores = dict(zip(tests, [80, 68, 68]))
    _rate_all(study, [lambda a, label, d: scores.get(a.labels[label], 100)])
    rows = [json.loads(line) for line in exports.ratings_export(study=study)["implied_pairs.jsonl"].decode().splitlines()]
    assert len(rows) == 3  # three rated clips, the hidden reference left out
    by_models = {}
    from annotation.models import Clip

    for row in rows:
        a = Clip.objects.get(sha256=row["audio-path"].split("/")[1].split(".")[0]).pk
        b = Clip.objects.get(sha256=row["audio2"].split("/")[1].split(".")[0]).pk
        by_models[frozenset((a, b))] = (a, b, row)
    a, b, row = by_models[frozenset(tests[:2])]
    winner = "model_a" if a == tests[0] else "model_b"
    assert row["preference-musicality"] == winner and row["confidence_preference-musicality"] == "2.0"  # 12 points: 1.0 + 0.5 * 2
    assert by_models[frozenset(tests[1:])][2]["preference-musicality"] == "both"
    assert exports.implied_confidence(40) == exports.implied_confidence(95) == 5.0 and exports.implied_confidence(4.9) == 1.0


@pytest.mark.parametrize("task", ["acr", "multi"])
def test_export_import_export_gives_the_same_bytes(task):
    study = rating_study(task=task, items=2, clips_per_item=2, reference=(task == "multi"), anchor=(task == "multi"), overlap_target=2)
    clip = ClipFactory()
    if task == "acr":
        services.rating_item_add(study=study, condition=ConditionFactory(), clips=[clip], kind="trap", expected={clip.pk: {"musicality": [1, 1]}})
    low, high = (1, 5) if task == "acr" else (0, 100)
    _rate_all(study, [lambda a, label, d: low + (a.pk + ord(label)) % (high - low + 1), lambda a, label, d: high - (a.pk * 3 + ord(label)) % (high - low + 1)])
    first = exports.ratings_export(study=study)
    name = study.name
    Study.objects.filter(pk=study.pk).delete()
    imported = exports.ratings_import(files=first, name=name)
    second = exports.ratings_export(study=imported)
    assert set(first) == set(second)
    for key in first:
        assert first[key] == second[key], key
    assert len(first["ratings.jsonl"].splitlines()) > 10


def test_import_refuses_unknown_clips_and_bad_lines_without_changing_anything():
    study = rating_study(task="acr", items=1, overlap_target=1)
    _rate_all(study, [lambda a, label, d: 3])
    files = exports.ratings_export(study=study)
    broken = dict(files, **{"ratings.jsonl": files["ratings.jsonl"].replace(b"audio/", b"audio/0000", 1)})
    with pytest.raises(ServiceError, match="line 1: no clip audio/0000"):
        exports.ratings_import(files=broken, name="copy-a")
    with pytest.raises(ServiceError, match="line 1: not JSON"):
        exports.ratings_import(files=dict(files, **{"ratings.jsonl": b"{oops\n"}), name="copy-b")
    assert not Study.objects.filter(name__startswith="copy-").exists()


def test_command_writes_the_files_and_imports_them_back(tmp_path):
    import io

    from django.core.management import call_command

    study = rating_study(task="acr", items=1, overlap_target=1)
    _rate_all(study, [lambda a, label, d: 4])
    call_command("ratings_export", study.name, "--out", str(tmp_path), stdout=io.StringIO())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasheet.json", "loudness.csv", "mos.jsonl", "ratings.jsonl"]
    call_command("ratings_export", "--import", str(tmp_path), "--name", "copy", stdout=io.StringIO())
    assert exports.ratings_export(study=Study.objects.get(name="copy"))["ratings.jsonl"] == (tmp_path / "ratings.jsonl").read_bytes()


def _forget_clips(study) -> list[str]:
    """Delete the study and its clips (rows and stored files), as on a server that never had them."""
    from annotation.models import AudioFetch, Clip

    paths = exports.ratings_export_audio(study=study)
    clip_ids = [c.pk for c in paths.values()]
    Study.objects.filter(pk=study.pk).delete()
    AudioFetch.objects.filter(clip_id__in=clip_ids).delete()
    for clip in Clip.objects.filter(pk__in=clip_ids):
        clip.file.delete(save=False)
        clip.delete()
    return sorted(paths)


def test_an_import_brings_the_audio_of_an_export_made_with_it(tmp_path):
    import io

    from django.core.management import call_command

    from annotation.models import Clip

    study = rating_study(task="multi", items=2, clips_per_item=2, overlap_target=1)
    _rate_all(study, [lambda a, label, d: ord(label) - 20])
    call_command("ratings_export", study.name, "--out", str(tmp_path), "--audio", stdout=io.StringIO())
    systems = {exports.audio_path(c): c.system.name for c in exports.ratings_export_audio(study=study).values()}
    before = {name: (tmp_path / name).read_bytes() for name in ("ratings.jsonl", "mos.jsonl", "implied_pairs.jsonl")}
    paths = _forget_clips(study)
    assert len(paths) == 4 and not Clip.objects.exists()
    call_command("ratings_export", "--import", str(tmp_path), "--name", "brought", stdout=io.StringIO())
    brought = Study.objects.get(name="brought")
    clips = exports.ratings_export_audio(study=brought)
    assert sorted(clips) == paths
    for path, clip in clips.items():
        with clip.file.open("rb") as handle:
            assert handle.read() == (tmp_path / path).read_bytes()
        assert clip.system.name == systems[path]
    after = exports.ratings_export(study=brought)
    assert all(after[name] == data for name, data in before.items())


def test_an_import_refuses_audio_that_is_not_the_clip_it_names_and_keeps_nothing(tmp_path, settings):
    import io

    # A storage of its own: other tests leave content-addressed files whose names this one checks for.
    settings.MEDIA_ROOT = str(tmp_path / "media")

    from django.core.management import call_command

    from annotation.models import Clip
    from tests.factories import wav_bytes

    study = rating_study(task="acr", items=2, overlap_target=1)
    _rate_all(study, [lambda a, label, d: 2])
    call_command("ratings_export", study.name, "--out", str(tmp_path), "--audio", stdout=io.StringIO())
    paths = _forget_clips(study)
    files = {n: (tmp_path / n).read_bytes() for n in ("datasheet.json", "ratings.jsonl")}
    (tmp_path / paths[-1]).write_bytes(wav_bytes(freq=1234.0))
    from django.conf import settings

    def stored():
        return sorted(p.name for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file())

    stored_before = stored()
    assert paths[0].split("/")[1] not in stored_before  # the first clip is brought, and must go again
    with pytest.raises(ServiceError, match="is not the clip its name says"):
        exports.ratings_import(files=files, name="swapped", audio_root=tmp_path)
    assert not Study.objects.filter(name="swapped").exists() and not Clip.objects.exists()
    assert stored() == stored_before
    escaping = dict(files, **{"ratings.jsonl": files["ratings.jsonl"].replace(b'"audio/', b'"../audio/', 1)})
    with pytest.raises(ServiceError, match="is not an export's audio/<sha256> path"):
        exports.ratings_import(files=escaping, name="escaping", audio_root=tmp_path)
    (tmp_path / paths[0]).unlink()
    with pytest.raises(ServiceError, match="neither a clip here nor a file under the audio root"):
        exports.ratings_import(files=files, name="missing", audio_root=tmp_path)
    assert not Study.objects.exists() and not Clip.objects.exists()
