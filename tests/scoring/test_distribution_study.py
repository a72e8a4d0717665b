"""FAD and KAD of a study's systems on a tiny random CLAP's embeddings: in the report (API and page) and in compare_judges --distribution."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Clip
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import distribution as dist
from scoring import services
from scoring.models import ClipScore, Judge
from tests.audio import write_tone
from tests.factories import StudyFactory, SystemFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SR = 16000
CONDITIONS = 6


def _wave(rng, freq: float, noise: float) -> np.ndarray:
    t = np.arange(SR) / SR
    return (0.3 * np.sin(2 * np.pi * freq * t) + noise * rng.standard_normal(SR)).astype(np.float32)


def _study(tiny_clap_dir, *, run: bool = True):
    """Per condition a reference tone, system `near` a tone close to it and system `far` mostly noise; a tiny CLAP run over the pairs."""
    rng = np.random.default_rng(0)
    study = StudyFactory(name="fad-study")
    near, far = SystemFactory(name="near"), SystemFactory(name="far")
    for i in range(CONDITIONS):
        freq = 200.0 + 60 * i
        reference, _ = clip_ingest_array(audio=_wave(rng, freq, 0.01), sample_rate=SR, kind=Clip.Kind.REFERENCE, fmt="WAV")
        condition, _ = condition_get_or_create(prompt=f"a calm piano piece {i}", reference=reference)
        a, _ = clip_ingest_array(audio=_wave(rng, freq * 1.02, 0.02), sample_rate=SR, system=near, fmt="WAV")
        b, _ = clip_ingest_array(audio=_wave(rng, freq, 0.3), sample_rate=SR, system=far, fmt="WAV")
        pair_get_or_create(study=study, condition=condition, clip_a=a, clip_b=b)
    judge = Judge.objects.create(key="clap-tiny", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), queue=Judge.Queue.CPU)
    if run:
        from scoring.tasks import run_start

        run_start.apply(args=(services.run_create(judge=judge, study=study).pk,))
    return study, judge


def _embeddings(judge, clips) -> np.ndarray:
    stored = dict(ClipScore.objects.filter(judge=judge, context_key="", clip_sha256__in=[c.sha256 for c in clips]).values_list("clip_sha256", "scores"))
    return np.array([stored[c.sha256]["embedding"] for c in clips])


def _command(*args) -> str:
    out = io.StringIO()
    call_command("compare_judges", *args, stdout=out)
    return out.getvalue()


def test_the_report_gives_each_systems_fad_and_kad_against_the_studys_references(tiny_clap_dir, no_network):
    study, judge = _study(tiny_clap_dir)
    user = UserFactory(username="fad-reader", roles=["researcher"])
    study.collaborators.add(user)
    client = Client()
    client.force_login(user)
    block = client.get(f"/api/studies/{study.name}/report/", {"bootstrap": 100}).json()["systems"]["distribution"]
    assert block["reference_clips"] == CONDITIONS and block["rounds"] == 100
    [entry] = block["judges"]
    assert entry["judge"] == "clap-tiny" and entry["embedded_clips"] == 3 * CONDITIONS
    references = _embeddings(judge, [p.condition.reference for p in study.pairs.order_by("pk")])
    rows = {r["system"]: r for r in entry["rows"]}
    for name, side in (("near", "clip_a"), ("far", "clip_b")):
        own = _embeddings(judge, [getattr(p, side) for p in study.pairs.order_by("pk")])
        row = rows[name]
        assert (row["clips"], row["reference_clips"]) == (CONDITIONS, CONDITIONS)
        # The figures are those of the cached embeddings, whichever order the clips come in.
        assert row["fad"] == pytest.approx(dist.frechet_distance(own, references), abs=1e-6)
        assert row["kad"] == pytest.approx(dist.kernel_distance(references, own), abs=1e-6)
        assert 0 <= row["fad_lower"] <= row["fad_upper"] and 0 <= row["kad_lower"] <= row["kad_upper"]
        assert row["fad_inf"] is not None and row["fad_bias"] is not None
        assert row["few_clips"]  # 6 clips in the tiny CLAP's 16 dimensions
    table = client.get(f"/api/studies/{study.name}/report/system_distribution.csv", {"bootstrap": 100}).content.decode().splitlines()
    assert table[0].startswith("judge,kind,version,reference,system,") and len(table) == 3 and "fad_inf" in table[0]
    page = client.get(f"/scoring/studies/{study.name}/report/?bootstrap=100").content.decode()
    assert 'id="results-distribution"' in page and 'id="distribution-clap-tiny"' in page and 'id="forest-fad-clap-tiny"' in page
    assert f"{rows['far']['fad']:.3f}" in page and 'id="distribution-few-clips"' in page


def test_compare_judges_scores_systems_against_another_system_or_a_folder(tiny_clap_dir, no_network, tmp_path):
    study, judge = _study(tiny_clap_dir, run=False)
    # Nothing cached yet: without --compute no system has embeddings to measure.
    cold = json.loads(_command("--distribution", study.name, "--judge", judge.key, "--rounds", "20", "--json"))
    assert cold["version"] == "" and all(r["clips"] == 0 and "fad" not in r for r in cold["rows"])
    text = _command("--distribution", study.name, "--judge", judge.key, "--compute", "--rounds", "50")
    assert "against the study's reference clips (6 clips)" in text and "near" in text and "FAD∞" in text
    assert ClipScore.objects.filter(judge=judge, context_key="").count() == 3 * CONDITIONS
    against_far = json.loads(_command("--distribution", study.name, "--judge", judge.key, "--reference-system", "far", "--rounds", "50", "--json"))
    assert against_far["reference"] == "system far" and [r["system"] for r in against_far["rows"]] == ["near"]
    near = _embeddings(judge, [p.clip_a for p in study.pairs.order_by("pk")])
    far = _embeddings(judge, [p.clip_b for p in study.pairs.order_by("pk")])
    assert against_far["rows"][0]["fad"] == pytest.approx(dist.frechet_distance(near, far), abs=1e-6)

    folder = tmp_path / "reference"
    for i in range(5):
        write_tone(folder / f"tone{i}.wav", freq=300.0 + 50 * i, sr=SR)
    (folder / "notes.txt").write_text("not audio")
    result = json.loads(_command("--distribution", study.name, "--judge", judge.key, "--reference-dir", str(folder), "--compute", "--rounds", "50", "--json"))
    assert result["reference_clips"] == 5 and result["computed"] and {r["system"] for r in result["rows"]} == {"near", "far"}
    # The folder's files were embedded once and cached; the study's clips came from the cache.
    assert ClipScore.objects.filter(judge=judge, context_key="").count() == 3 * CONDITIONS + 5
    again = json.loads(_command("--distribution", study.name, "--judge", judge.key, "--reference-dir", str(folder), "--rounds", "50", "--json"))
    assert [r["fad"] for r in again["rows"]] == pytest.approx([r["fad"] for r in result["rows"]], abs=1e-9)


def test_compare_judges_refuses_bad_distribution_requests_with_the_reason(tiny_clap_dir, tmp_path):
    study, judge = _study(tiny_clap_dir, run=False)
    Judge.objects.create(key="signal", kind=Judge.Kind.SIGNAL)
    (tmp_path / "two").mkdir()
    for i in range(2):
        write_tone(tmp_path / "two" / f"t{i}.wav")
    cases = [
        (("--judge", "nobody"), "No judge 'nobody'; embedding judges: clap-tiny"),
        (("--judge", "signal"), "keeps no audio embeddings"),
        ((), "needs --judge KEY"),
        (("--judge", judge.key, "--reference-system", "ghost"), "No system 'ghost'"),
        (("--judge", judge.key, "--reference-system", "far", "--reference-dir", str(tmp_path)), "not both"),
        (("--judge", judge.key, "--reference-dir", str(tmp_path / "missing")), "does not exist"),
        (("--judge", judge.key, "--reference-dir", str(tmp_path / "two")), "holds 2 audio file(s)"),
    ]
    for args, words in cases:
        with pytest.raises(CommandError) as caught:
            _command("--distribution", study.name, *args)
        assert words in str(caught.value)
    with pytest.raises(CommandError, match="No study named 'ghost'"):
        _command("--distribution", "ghost", "--judge", judge.key)
