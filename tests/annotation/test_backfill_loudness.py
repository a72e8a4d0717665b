"""manage.py backfill_loudness: measures clips stored before ingest measured them, once; a bad file is reported, not fatal."""

from __future__ import annotations

import io

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Clip, Pair
from annotation.selectors import study_loudness
from tests.factories import ClipFactory, ConditionFactory, StudyFactory

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("backfill_loudness", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _corrupt(clip: Clip) -> None:
    # A WAV header followed by garbage: libsndfile refuses it.
    clip.file.save(clip.file.name.rsplit("/", 1)[-1], ContentFile(b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x07" * 60), save=True)


def test_backfill_measures_old_clips_once_and_reports_a_corrupt_file():
    old = [ClipFactory(duration=2.0) for _ in range(5)]
    corrupt, missing = ClipFactory(), ClipFactory()
    _corrupt(corrupt)
    missing.file.storage.delete(missing.file.name)
    assert Clip.objects.filter(loudness_measured_at__isnull=True).count() == 7

    out, err = run("--batch-size", "2")
    assert "measured 5 clips: 5 with a loudness, 0 silent or under 400 ms" in out
    assert "2 could not be read" in out and f"clip {corrupt.pk} ({corrupt.sha256[:12]}...)" in out and f"clip {missing.pk}" in out
    assert "is missing" in out and "cannot be decoded" in out
    assert "2 clip(s) could not be read" in err
    # Batches of 2: 7 clips take four batches.
    assert out.count("clips read") == 4
    for clip in old:
        clip.refresh_from_db()
        with clip.file.open("rb") as handle:
            audio, rate = sf.read(handle, dtype="float64")
        assert clip.loudness_lufs == pytest.approx(pyloudnorm.Meter(rate).integrated_loudness(audio), abs=1e-6)
        assert clip.true_peak_dbtp is not None and clip.loudness_measured_at is not None
    for bad in (corrupt, missing):
        bad.refresh_from_db()
        assert bad.loudness_measured_at is None and bad.loudness_lufs is None

    # Idempotent: what was measured is not read again; the bad files are tried again and reported again.
    stamps = dict(Clip.objects.values_list("pk", "loudness_measured_at"))
    again, _ = run()
    assert "measured 0 clips" in again and "5 clips were measured already" in again and "2 could not be read" in again
    assert dict(Clip.objects.values_list("pk", "loudness_measured_at")) == stamps


def test_backfill_marks_silence_measured_so_the_study_page_stops_asking():
    silent = ClipFactory()
    buffer = io.BytesIO()
    sf.write(buffer, np.zeros(16000, dtype=np.float32), 16000, format="WAV", subtype="PCM_16")
    silent.file.save(silent.file.name.rsplit("/", 1)[-1], ContentFile(buffer.getvalue()), save=True)
    tone = ClipFactory()
    study = StudyFactory()
    Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=silent, clip_b=tone, clip_key=Pair.key_for(silent.pk, tone.pk))
    assert study_loudness(study=study)["unmeasured"] == 2
    assert study.clip_gain_db(tone) == 0.0

    out, _ = run("--study", study.name)
    assert "measured 2 clips: 1 with a loudness, 1 silent or under 400 ms" in out
    summary = study_loudness(study=study)
    assert (summary["unmeasured"], summary["unmeasurable"]) == (0, 1)
    tone.refresh_from_db()
    # Measured now: the page levels it (the factory's tone is far above -23 LUFS).
    assert study.clip_gain_db(tone) < 0.0


def test_backfill_limited_to_a_study_leaves_other_clips_and_refuses_unknown_names():
    study = StudyFactory()
    a, b, other = ClipFactory(), ClipFactory(), ClipFactory()
    Pair.objects.create(study=study, condition=ConditionFactory(), clip_a=a, clip_b=b, clip_key=Pair.key_for(a.pk, b.pk))
    out, _ = run("--study", study.name)
    assert "measured 2 clips" in out
    other.refresh_from_db()
    assert other.loudness_measured_at is None
    with pytest.raises(CommandError, match="No study named 'nope'"):
        run("--study", "nope")
    with pytest.raises(CommandError, match="batch size"):
        run("--batch-size", "0")
