"""Demo systems: each one's fault is measured from the audio, not taken from its description."""

from __future__ import annotations

import io

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase
from scipy.signal import resample_poly

from annotation import demo
from annotation.models import AnnotatorProfile, Clip, Condition, Modality, Pair, Study, StudyAnnotator, System

SR = 22050
SECONDS = 6.0
DEGRADED = [name for name in demo.SYSTEM_NAMES if name != demo.CLEAN_SYSTEM]
TEXT_ONLY = [c for c in demo.DEMO_CONDITIONS if not c.lyrics]


def rendered(system: str, condition=demo.DEMO_CONDITIONS[0], seed: int = 0) -> np.ndarray:
    return demo.render(system, prompt=condition.prompt, lyrics=condition.lyrics, seed=seed, seconds=SECONDS, sample_rate=SR)


def lufs(x: np.ndarray) -> float:
    return pyloudnorm.Meter(SR).integrated_loudness(x.astype(np.float64))


def frames(x: np.ndarray, size: int, hop: int | None = None) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(x, size)[:: hop or size]


def silence_ratio(x: np.ndarray) -> float:
    """Share of 50 ms frames below -60 dBFS RMS."""
    rms = np.sqrt(np.mean(frames(x, int(0.05 * SR)) ** 2, axis=1))
    return float(np.mean(rms < 10 ** (-60 / 20)))


def clipping_ratio(x: np.ndarray) -> float:
    return float(np.mean(np.abs(x) >= 0.999))


def median_flatness(x: np.ndarray) -> float:
    spec = np.abs(np.fft.rfft(frames(x, 2048, 512) * np.hanning(2048), axis=1)) ** 2 + 1e-20
    return float(np.median(np.exp(np.mean(np.log(spec), axis=1)) / np.mean(spec, axis=1)))


def snr_db(x: np.ndarray) -> float:
    """Treat the 7-10 kHz floor as white noise (the music has almost nothing there) and compare powers."""
    spec = np.abs(np.fft.rfft(frames(x, 2048, 512) * np.hanning(2048), axis=1)) ** 2
    freqs = np.fft.rfftfreq(2048, 1 / SR)
    band = (freqs >= 7000) & (freqs <= 10000)
    floor = np.median(spec[:, band])
    noise_share = floor / np.mean(spec)  # white noise is flat: its mean power equals its floor
    return float(10 * np.log10(max(1 - noise_share, 1e-12) / noise_share))


def onset_period(x: np.ndarray, hop: int = 256) -> float:
    """Seconds between onsets at the fastest regular level: first strong peak of the onset autocorrelation."""
    spec = np.log1p(100 * np.abs(np.fft.rfft(frames(x, 1024, hop) * np.hanning(1024), axis=1)))
    flux = np.maximum(np.diff(spec, axis=0), 0).sum(axis=1)
    flux -= flux.mean()
    ac = np.correlate(flux, flux, "full")[len(flux) - 1 :]
    lags = np.arange(len(ac)) * hop / SR
    idx = np.flatnonzero((lags >= 0.15) & (lags <= 2.5))
    values = ac[idx]
    top = values.max()
    for i in range(1, len(values) - 1):
        if values[i] >= values[i - 1] and values[i] >= values[i + 1] and values[i] > 0.5 * top:
            return float(lags[idx[i]])
    raise AssertionError("no periodic onsets found")


def pitch_deviation_cents(x: np.ndarray) -> float:
    """Mean distance, in cents, of each frame's strongest 180-1400 Hz partial from the equal-tempered grid."""
    spec = np.abs(np.fft.rfft(frames(x, 4096, 1024) * np.hanning(4096), axis=1))
    freqs = np.fft.rfftfreq(4096, 1 / SR)
    band = np.flatnonzero((freqs >= 180) & (freqs <= 1400))
    deviations = []
    for row in spec:
        k = band[np.argmax(row[band])]
        a, b, c = np.log(row[k - 1 : k + 2] + 1e-12)
        peak_hz = (k + 0.5 * (a - c) / (a - 2 * b + c)) * SR / 4096  # parabolic interpolation
        midi = 69 + 12 * np.log2(peak_hz / 440)
        deviations.append(abs(100 * (midi - np.round(midi))))
    return float(np.mean(deviations))


# --- render ------------------------------------------------------------------------------


@pytest.mark.parametrize("system", demo.SYSTEM_NAMES)
def test_render_is_deterministic_float32_mono_in_range_and_the_right_length(system):
    first, second = rendered(system), rendered(system)
    assert first.dtype == np.float32 and first.ndim == 1
    assert len(first) == round(SECONDS * SR)
    assert np.isfinite(first).all() and np.abs(first).max() <= 1.0
    assert np.array_equal(first, second)
    assert not np.array_equal(first, rendered(system, seed=1))


def test_render_follows_length_and_rate_and_refuses_bad_arguments():
    assert len(demo.render("aurora", prompt="calm piano", seconds=2.5, sample_rate=16000)) == 40000
    with pytest.raises(ValueError, match="unknown demo system"):
        demo.render("nonesuch", prompt="x")
    with pytest.raises(ValueError, match="sample_rate"):
        demo.render("aurora", prompt="x", sample_rate=100)
    with pytest.raises(ValueError, match="seconds"):
        demo.render("aurora", prompt="x", seconds=0)


def test_systems_differ_and_lyrics_add_a_voice_whose_vowels_follow_the_words():
    audio = {name: rendered(name) for name in demo.SYSTEM_NAMES}
    assert len({a.tobytes() for a in audio.values()}) == len(audio)
    prompt = demo.DEMO_CONDITIONS[0].prompt
    plain = demo.render("aurora", prompt=prompt)
    sung_a = demo.render("aurora", prompt=prompt, lyrics="la la la la la la la la")
    sung_i = demo.render("aurora", prompt=prompt, lyrics="mi mi mi mi mi mi mi mi")
    assert not np.array_equal(plain, sung_a)
    # Same tune and timing, other vowel: /a/ has both its first formants (0.73, 1.09 kHz) in this band, /i/ neither.
    def share(x, low, high):
        spec = np.abs(np.fft.rfft(x)) ** 2
        freqs = np.fft.rfftfreq(len(x), 1 / SR)
        return spec[(freqs >= low) & (freqs < high)].sum() / spec.sum()

    assert share(sung_a, 600, 1300) > 3 * share(sung_i, 600, 1300)


def test_prompt_words_choose_tempo_key_mode_and_instrument():
    style = demo.style_for("Slow melancholic piano ballad in A minor")
    assert (style.bpm, style.root_pc, style.minor, style.lead) == (72, 9, True, "piano")
    assert demo.style_for("fast dance track with a synth lead").bpm == 128
    assert demo.style_for("guitar tune at 93 BPM").bpm == 93 and demo.style_for("guitar tune at 93 BPM").lead == "pluck"
    assert demo.style_for("guitar tune at 93 BPM", bpm=140).bpm == 140
    assert demo.style_for("upbeat song in E major").minor is False
    assert demo.style_for("Rap verse over a boom bap beat").bpm == 90 and demo.style_for("a rapid groove").bpm == 100


def test_reference_is_deterministic_clean_and_not_an_answer():
    spec = next(c for c in demo.DEMO_CONDITIONS if c.has_reference)
    ref = demo.render_reference(prompt=spec.prompt, seed=3)
    assert np.array_equal(ref, demo.render_reference(prompt=spec.prompt, seed=3))
    assert len(ref) == round(SECONDS * SR) and ref.dtype == np.float32
    assert not np.array_equal(ref, demo.render("aurora", prompt=spec.prompt, seed=3))
    assert abs(lufs(ref) + 14) < 0.5 and clipping_ratio(ref) == 0 and silence_ratio(ref) == 0


# --- each system's fault, measured -------------------------------------------------------------


@pytest.mark.parametrize("condition", demo.DEMO_CONDITIONS, ids=lambda c: c.key)
def test_aurora_is_clean(condition):
    x = rendered("aurora", condition)
    assert abs(lufs(x) + 14.0) < 0.3
    true_peak = np.abs(resample_poly(x.astype(np.float64), 4, 1)).max()
    assert 20 * np.log10(true_peak) <= -0.9  # 1 dB of headroom, inter-sample peaks included
    assert clipping_ratio(x) == 0.0
    assert silence_ratio(x) == 0.0
    assert abs(float(x.mean())) < 1e-3
    assert median_flatness(x) < 0.01
    assert snr_db(x) > 30


@pytest.mark.parametrize("condition", demo.DEMO_CONDITIONS, ids=lambda c: c.key)
def test_clipper_is_driven_into_hard_clipping(condition):
    x = rendered("clipper", condition)
    assert clipping_ratio(x) > 0.2
    assert lufs(x) > -6.0


@pytest.mark.parametrize("condition", demo.DEMO_CONDITIONS, ids=lambda c: c.key)
def test_hiss_has_noise_at_about_10_db_snr(condition):
    x, clean = rendered("hiss", condition), rendered("aurora", condition)
    assert 7.0 < snr_db(x) < 13.0
    assert median_flatness(x) > 10 * median_flatness(clean) and median_flatness(x) > 0.03
    assert abs(lufs(x) + 14.0) < 0.5  # the level is right: the fault is the noise


def onset_regularity(x: np.ndarray, period_s: float, hop: int = 256) -> float:
    """Onset autocorrelation at the given period, relative to lag 0: 1 for a perfectly steady grid."""
    spec = np.log1p(100 * np.abs(np.fft.rfft(frames(x, 1024, hop) * np.hanning(1024), axis=1)))
    flux = np.maximum(np.diff(spec, axis=0), 0).sum(axis=1)
    flux -= flux.mean()
    ac = np.correlate(flux, flux, "full")[len(flux) - 1 :]
    return float(ac[round(period_s * SR / hop)] / ac[0])


@pytest.mark.parametrize("condition", demo.DEMO_CONDITIONS, ids=lambda c: c.key)
def test_wobble_drops_out_and_its_onsets_leave_the_grid(condition):
    x, clean = rendered("wobble", condition), rendered("aurora", condition)
    assert 0.04 < silence_ratio(x) < 0.2
    assert silence_ratio(clean) == 0.0
    period = onset_period(clean)
    assert onset_regularity(x, period) < 0.7 * onset_regularity(clean, period)


@pytest.mark.parametrize("condition", demo.DEMO_CONDITIONS, ids=lambda c: c.key)
def test_draggy_is_quiet_late_and_at_half_the_tempo(condition):
    x, clean = rendered("draggy", condition), rendered("aurora", condition)
    assert abs(lufs(x) + 30.0) < 1.5
    assert abs(lufs(clean) + 14.0) < 0.3
    assert np.abs(x[: int(0.5 * SR)]).max() == 0.0  # a late start: silence before the first note
    ratio = onset_period(x) / onset_period(clean)
    assert 1.8 < ratio < 2.2
    # The clean clip keeps the prompt's tempo: its fastest regular level is the eighth note.
    expected = 60.0 / demo.style_for(condition.prompt).bpm / 2
    assert abs(onset_period(clean) - expected) < 0.05 * expected + 256 / SR


def test_detune_is_off_pitch_hums_and_carries_a_dc_offset():
    clean = [pitch_deviation_cents(rendered("aurora", c)) for c in demo.DEMO_CONDITIONS]
    detuned = [pitch_deviation_cents(rendered("detune", c)) for c in demo.DEMO_CONDITIONS]
    assert max(clean) < 10.0, clean
    assert min(detuned) > 20.0, detuned
    x = rendered("detune")
    assert 0.05 < float(x.mean()) < 0.07
    spec = np.abs(np.fft.rfft(x - x.mean()))
    freqs = np.fft.rfftfreq(len(x), 1 / SR)
    hum = spec[np.argmin(np.abs(freqs - 50.0))]
    neighbours = spec[(freqs > 40) & (freqs < 47)].mean()
    assert hum > 10 * neighbours


# --- catalogue -----------------------------------------------------------------------------------


def test_systems_catalogue_ranks_and_flaws():
    assert demo.SYSTEM_NAMES == ["aurora", "draggy", "hiss", "detune", "wobble", "clipper"]
    by_name = {s.name: s for s in demo.DEMO_SYSTEMS}
    assert (by_name["aurora"].musicality_rank, by_name["aurora"].alignment_rank, by_name["aurora"].flaws) == (1, 1, [])
    assert sorted(s.musicality_rank for s in demo.DEMO_SYSTEMS) == [1, 2, 3, 4, 5, 6]
    assert sorted(s.alignment_rank for s in demo.DEMO_SYSTEMS) == [1, 2, 3, 4, 5, 6]
    assert all(s.flaws and s.description for s in demo.DEMO_SYSTEMS if s.name != "aurora")
    assert {s.organisation for s in demo.DEMO_SYSTEMS} == {"Auditorium demo"}


def test_conditions_cover_every_modality_twice():
    modalities = [(bool(c.lyrics), c.has_reference) for c in demo.DEMO_CONDITIONS]
    assert sorted(modalities) == sorted([(False, False), (True, False), (False, True), (True, True)] * 2)
    assert len({c.key for c in demo.DEMO_CONDITIONS}) == len(demo.DEMO_CONDITIONS)


# --- seeding -----------------------------------------------------------------------------------------


@pytest.mark.slow
class SeedDemoTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = demo.seed_demo()

    def test_returns_the_study_with_the_protocol_settings(self):
        study = Study.objects.get(name="demo")
        assert self.study == study
        assert study.title == "Demo study" and "Instruction following" in study.instructions
        assert (study.overlap_target, study.overlap_share, study.min_listen_seconds) == (3, 0.5, 5)
        assert (study.rationale_min_length, study.gold_rate) == (10, 0.1)

    def test_systems_clips_and_conditions_of_all_four_modalities(self):
        assert sorted(System.objects.values_list("name", flat=True)) == sorted(demo.SYSTEM_NAMES)
        assert Condition.objects.count() == 8
        counts = {m: Condition.objects.filter(modality=m).count() for m in Modality.values}
        assert counts == {Modality.TEXT: 2, Modality.TEXT_LYRICS: 2, Modality.TEXT_REF: 2, Modality.TEXT_LYRICS_REF: 2}
        references = Clip.objects.filter(kind=Clip.Kind.REFERENCE)
        assert references.count() == 4 and not references.filter(system__isnull=False).exists()
        assert set(Condition.objects.filter(reference__isnull=False).values_list("reference_id", flat=True)) == set(references.values_list("id", flat=True))
        generated = Clip.objects.filter(kind=Clip.Kind.GENERATED)
        assert generated.count() == 48
        clip = generated.first()
        assert clip.extension == ".flac" and clip.sample_rate == SR and abs(clip.duration - SECONDS) < 1e-6
        with clip.file.open("rb") as handle:
            audio, rate = sf.read(io.BytesIO(handle.read()))
        assert rate == SR and len(audio) == round(SECONDS * SR)

    def test_every_condition_pairs_aurora_with_each_degraded_system_on_both_sides(self):
        aurora_as_a = aurora_as_b = 0
        for condition in Condition.objects.all():
            pairs = list(Pair.objects.filter(condition=condition).select_related("clip_a__system", "clip_b__system"))
            systems = [(p.clip_a.system.name, p.clip_b.system.name) for p in pairs]
            against = sorted(b if a == "aurora" else a for a, b in systems if "aurora" in (a, b))
            assert against == sorted(DEGRADED), condition
            others = [s for s in systems if "aurora" not in s]
            assert 2 <= len(others) <= 3
            # One condition, one split.
            assert len({p.split for p in pairs}) == 1
            aurora_as_a += sum(a == "aurora" for a, _ in systems)
            aurora_as_b += sum(b == "aurora" for _, b in systems)
            # Every clip of a pair answers this condition: same prompt, same render.
            assert all(p.clip_a.system and p.clip_b.system for p in pairs)
        assert aurora_as_a >= 10 and aurora_as_b >= 10
        assert Pair.objects.filter(split=Pair.Split.TEST).exists() and Pair.objects.filter(split=Pair.Split.TRAIN).exists()
        assert set(Pair.objects.filter(split=Pair.Split.TEST).values_list("condition__modality", flat=True)) == set(Modality.values)

    def test_gold_pairs_expect_the_aurora_clip(self):
        gold = list(Pair.objects.filter(kind=Pair.Kind.GOLD).select_related("expected_alignment__system", "expected_musicality__system"))
        assert len(gold) == 2
        for pair in gold:
            assert pair.expected_alignment.system.name == "aurora" and pair.expected_musicality_id == pair.expected_alignment_id
            assert pair.expected_alignment_id in (pair.clip_a_id, pair.clip_b_id)
        assert not Pair.objects.filter(kind=Pair.Kind.REGULAR, expected_alignment__isnull=False).exists()

    def test_users_roles_and_unconsented_annotators(self):
        User = get_user_model()
        admin = User.objects.get(username="admin")
        assert admin.is_superuser and admin.check_password("admin")
        assert set(admin.groups.values_list("name", flat=True)) >= {"admin", "researcher"}
        researcher = User.objects.get(username="researcher")
        assert researcher.check_password("researcher") and not researcher.is_superuser
        assert list(researcher.groups.values_list("name", flat=True)) == ["researcher"]
        for name in ("annotator1", "annotator2", "annotator3"):
            user = User.objects.get(username=name)
            assert user.check_password("annotator") and user.groups.filter(name="annotator").exists()
            assert StudyAnnotator.objects.filter(study=self.study, annotator=user, is_active=True).exists()
            assert not AnnotatorProfile.objects.get(user=user).has_consented

    def test_second_run_does_nothing_and_forced_run_adds_nothing(self):
        def counts():
            return [m.objects.count() for m in (System, Clip, Condition, Study, Pair, StudyAnnotator, get_user_model())]

        before = counts()
        assert demo.seed_demo() is None
        assert counts() == before
        out = io.StringIO()
        call_command("seed_demo", "--force", stdout=out)
        assert counts() == before
        text = out.getvalue()
        assert "Added: 0 systems, 0 clips, 0 conditions, 0 studies, 0 pairs, 0 users." in text
        assert "admin / admin" in text and "annotator1, annotator2, annotator3 / annotator" in text
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        assert "already has studies" in out.getvalue()
