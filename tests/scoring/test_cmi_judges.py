"""MuQ-MuLan, SongEval, CMI-RM and audiobox-aesthetics through their production loaders, on tiny
random models saved in their authors' layouts, with the network blocked."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.judges import ADAPTERS, ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.judges.base import JudgeUnavailable
from tests.audio import write_tone
from tests.scoring.devices import DEVICES

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")


def _clip(path, seconds, *, freq=440.0, sr=22050, name=None):
    write_tone(path, seconds, freq=freq, sr=sr)
    return ClipAudio(path=str(path), sha256=name or path.stem)


def _judge(kind, directory, **options):
    return adapter_for(JudgeConfig(key=kind.replace("_", "-"), kind=kind, weights=str(directory), options=options))


class MemoryStore:
    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}

    def get_many(self, shas, context):
        return {sha: self.rows[(sha, context)] for sha in shas if (sha, context) in self.rows}

    def put_many(self, scores, context):
        for sha, value in scores.items():
            self.rows[(sha, context)] = value


# --- front end -------------------------------------------------------------------------------


def test_mel_front_end_matches_an_independent_htk_mel_reference():
    # transformers' NumPy spectrogram + HTK filter bank (no filter normalisation), the same
    # definition torchaudio's MelSpectrogram + AmplitudeToDB use, at MuQ's settings.
    from transformers.audio_utils import mel_filter_bank, spectrogram, window_function

    from scoring.judges.nets.muq import MelFrontEnd

    rng = np.random.default_rng(0)
    wave = (0.3 * np.sin(2 * np.pi * 440 * np.arange(24000) / 24000) + 0.05 * rng.standard_normal(24000)).astype(np.float32)
    filters = mel_filter_bank(
        num_frequency_bins=1025, num_mel_filters=128, min_frequency=0.0, max_frequency=12000.0, sampling_rate=24000, norm=None, mel_scale="htk"
    )
    power = spectrogram(wave, window_function(2048, "hann"), frame_length=2048, hop_length=240, power=2.0, center=True, pad_mode="reflect", mel_filters=filters)
    expected = 10 * np.log10(np.maximum(power, 1e-10))
    ours = MelFrontEnd()(torch.from_numpy(wave).unsqueeze(0))[0].numpy()
    assert ours.shape == expected.shape == (128, 101)
    assert np.abs(ours - expected).max() < 0.01  # dB


# --- MuQ-MuLan -------------------------------------------------------------------------------


def test_muq_mulan_scores_are_bounded_deterministic_and_reuse_cached_embeddings(tiny_root, no_network, tmp_path):
    judge = _judge("muq_mulan", tiny_root / "MuQ-MuLan-large")
    assert judge.availability().available
    judge.store = MemoryStore()
    # 5 s with 2 s clips: two whole clips and a wrapped tail; 1.5 s: one clip shorter than 2 s.
    clips = [_clip(tmp_path / "a.wav", 5.0, freq=330), _clip(tmp_path / "b.wav", 1.5, freq=880, sr=16000)]
    calls = type(judge).encode_calls
    first = judge.score_clips(clips, ConditionInput(prompt="calm piano"))
    second = judge.score_clips(clips, ConditionInput(prompt="happy rock song"))
    assert type(judge).encode_calls - calls == 2  # audio embedded once, reused for the second prompt
    again = judge.score_clips(clips, ConditionInput(prompt="calm piano"))
    assert [r["alignment"] for r in first] == pytest.approx([r["alignment"] for r in again], abs=1e-6)
    assert [r["alignment"] for r in first] != [r["alignment"] for r in second]
    for row in first + second:
        assert set(row) == {"alignment", "similarity"} and set(row["similarity"]) == {"text"}
        assert -1.0 <= row["alignment"] <= 1.0
    stored = judge.store.get_many(["a", "b"], "")
    assert {len(v["embedding"]) for v in stored.values()} == {16}


def test_muq_mulan_audio_embedding_is_the_mean_of_unit_clip_embeddings(tiny_root, no_network):
    from scoring.judges.nets.mulan import load_muq_mulan

    model = load_muq_mulan(tiny_root / "MuQ-MuLan-large")
    wave = torch.randn(24000 * 5) * 0.1
    clips = model.clips(wave)
    assert [c.shape[-1] for c in clips] == [48000, 48000, 48000]
    assert torch.equal(clips[-1], torch.cat([wave[96000:], wave[:24000]]))  # the tail wraps to the start
    with torch.inference_mode():
        unit = model.embed_clips(torch.stack(clips))
    assert torch.allclose(unit.norm(dim=-1), torch.ones(3), atol=1e-5)


def test_muq_mulan_with_a_reference_averages_text_and_reference_similarity(tiny_root, no_network, tmp_path):
    judge = _judge("muq_mulan", tiny_root / "MuQ-MuLan-large", use_lyrics=True)
    clip, reference = _clip(tmp_path / "a.wav", 2.0), _clip(tmp_path / "r.wav", 2.0, freq=220)
    row = judge.score_clips([clip], ConditionInput(prompt="rock", lyrics="love me", reference=reference))[0]
    assert set(row["similarity"]) == {"text", "reference"}
    assert row["alignment"] == pytest.approx(np.mean(list(row["similarity"].values())))
    same = judge.score_clips([reference], ConditionInput(prompt="rock", reference=reference))[0]
    assert same["similarity"]["reference"] == pytest.approx(1.0, abs=1e-4)  # a single-clip song against itself


def test_muq_mulan_checkpoint_keys_are_checked(tiny_root, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from scoring.judges.nets.common import WeightsMismatch
    from scoring.judges.nets.mulan import load_muq_mulan

    for name in ("MuQ-large-msd-iter", "xlm-roberta-base"):
        shutil.copytree(tiny_root / name, tmp_path / name)
    broken = tmp_path / "MuQ-MuLan-large"
    shutil.copytree(tiny_root / "MuQ-MuLan-large", broken)
    state = load_file(str(broken / "model.safetensors"))
    state.pop("mulan.text_to_latents.weight")
    state["mulan.extra_head.weight"] = torch.zeros(2)
    save_file(state, str(broken / "model.safetensors"))
    with pytest.raises(WeightsMismatch, match=r"missing mulan\.text_to_latents\.weight; unexpected mulan\.extra_head\.weight"):
        load_muq_mulan(broken)


# --- SongEval --------------------------------------------------------------------------------


def test_songeval_gives_five_ratings_in_range_and_musicality_from_them(tiny_root, no_network, tmp_path):
    judge = _judge("songeval", tiny_root / "SongEval")
    assert judge.availability().available and judge.context_key(ConditionInput(prompt="x")) == ""
    clips = [_clip(tmp_path / "a.wav", 2.0, freq=330), _clip(tmp_path / "b.wav", 3.3, freq=550, sr=44100)]
    rows = judge.score_clips(clips, ConditionInput(prompt="ignored"))
    again = judge.score_clips(clips, ConditionInput(prompt="also ignored", lyrics="la"))
    for row, other in zip(rows, again):
        assert list(row["axes"]) == ["Coherence", "Musicality", "Memorability", "Clarity", "Naturalness"]
        assert all(1.0 < v < 5.0 for v in row["axes"].values())
        assert row["musicality"] == pytest.approx(np.mean(list(row["axes"].values())))
        assert row["axes"] == pytest.approx(other["axes"], abs=1e-5)
    assert rows[0]["axes"] != rows[1]["axes"]
    one = _judge("songeval", tiny_root / "SongEval", musicality_axis="Clarity").score_clips(clips[:1], ConditionInput())[0]
    assert one["musicality"] == pytest.approx(rows[0]["axes"]["Clarity"], abs=1e-5)
    with pytest.raises(ValueError, match="musicality_axis"):
        _judge("songeval", tiny_root / "SongEval", musicality_axis="Groove").score_clips(clips[:1], ConditionInput())


def test_songeval_reads_muq_layer_six(tiny_root, no_network):
    from scoring.judges.nets.songeval import load_songeval

    model = load_songeval(tiny_root / "SongEval")
    wave = torch.randn(1, 24000) * 0.1
    with torch.inference_mode():
        states = model.muq(wave)
        assert len(states) == 7 and states[0].shape == (1, 25, 32)  # input + 6 layers, 25 frames/s
        assert torch.allclose(model(wave), model.head(states[6]).float())


# --- CMI-RM ----------------------------------------------------------------------------------

MODALITIES = {
    "text": ("lofi beat", "", False),
    "text+lyrics": ("lofi beat", "la la love you", False),
    "text+ref": ("lofi beat", "", True),
    "text+lyrics+ref": ("lofi beat", "la la love you", True),
}


@pytest.mark.parametrize("variant", ["CMI-RM", "CMI-RM-CA"])
def test_cmirm_scores_both_dimensions_in_all_four_modalities(tiny_root, no_network, tmp_path, variant):
    judge = _judge("cmi_rm", tiny_root / variant)
    assert judge.availability().available
    clips = [_clip(tmp_path / "a.wav", 2.0, freq=330), _clip(tmp_path / "b.wav", 3.1, freq=660, sr=16000)]
    reference = _clip(tmp_path / "r.wav", 1.7, freq=220, name="ref")
    results = {}
    for modality, (prompt, lyrics, with_ref) in MODALITIES.items():
        rows = judge.score_clips(clips, ConditionInput(prompt=prompt, lyrics=lyrics, reference=reference if with_ref else None))
        for row in rows:
            assert set(judge.dimensions) <= set(row) and all(np.isfinite(row[d]) for d in judge.dimensions)
        results[modality] = [(r["alignment"], r["musicality"]) for r in rows]
    assert [r["frames"] for r in rows] == [50, 78]  # 25 frames/s
    # Lyrics and reference both reach the prompt: each modality scores differently.
    assert len({tuple(np.round(np.ravel(v), 5)) for v in results.values()}) == 4
    again = judge.score_clips(clips, ConditionInput(prompt="lofi beat", lyrics="la la love you", reference=reference))
    assert np.allclose([(r["alignment"], r["musicality"]) for r in again], results["text+lyrics+ref"], atol=1e-5)


def test_cmirm_splits_long_audio_into_30_second_chunks_and_batches_like_alone(tiny_root, no_network, tmp_path):
    judge = _judge("cmi_rm", tiny_root / "CMI-RM", max_seconds=40)
    long, short = _clip(tmp_path / "long.wav", 45.0, freq=330, sr=8000), _clip(tmp_path / "short.wav", 2.0, freq=500)
    condition = ConditionInput(prompt="piano", lyrics="")
    both = judge.score_clips([long, short], condition)
    assert [r["frames"] for r in both] == [750 + 250, 50]  # capped at 40 s: a 30 s chunk and a 10 s one
    alone = judge.score_clips([short], condition)[0]
    assert (alone["alignment"], alone["musicality"]) == pytest.approx((both[1]["alignment"], both[1]["musicality"]), abs=1e-4)


def test_cmirm_refuses_checkpoints_that_do_not_fit(tiny_root, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    for name in ("MuQ-large-msd-iter", "xlm-roberta-base", "MuQ-MuLan-large", "CMI-RM"):
        shutil.copytree(tiny_root / name, tmp_path / name)
    path = tmp_path / "CMI-RM" / "model.safetensors"
    state = load_file(str(path))
    state["value_head.weight"] = torch.zeros(3)
    save_file(state, str(path))
    judge = _judge("cmi_rm", tmp_path / "CMI-RM")
    with pytest.raises(JudgeUnavailable, match="value_head.weight"):
        judge.score_clips([_clip(tmp_path / "a.wav", 1.0)], ConditionInput(prompt="x"))
    state.pop("value_head.weight")
    state.pop("score_projector.3.weight")
    save_file(state, str(path))
    with pytest.raises(JudgeUnavailable, match=r"missing score_projector\.3\.weight"):
        _judge("cmi_rm", tmp_path / "CMI-RM").score_clips([_clip(tmp_path / "a.wav", 1.0)], ConditionInput(prompt="x"))


# --- audiobox-aesthetics ---------------------------------------------------------------------


def test_audiobox_aesthetics_loads_its_published_layout_and_scores_offline(tiny_root, no_network, tmp_path):
    judge = _judge("aesthetics", tiny_root / "audiobox-aesthetics")
    assert judge.availability().available
    clips = [_clip(tmp_path / "a.wav", 1.5, sr=22050), _clip(tmp_path / "b.wav", 11.0, freq=700, sr=22050)]
    rows = judge.score_clips(clips, ConditionInput(prompt="x"))
    again = judge.score_clips(clips[::-1], ConditionInput(prompt="y"))[::-1]
    for row, other in zip(rows, again):
        assert set(row["axes"]) == {"CE", "CU", "PC", "PQ"} and all(np.isfinite(v) for v in row["axes"].values())
        assert row["musicality"] == row["axes"]["CE"]
        assert row["axes"] == pytest.approx(other["axes"], abs=1e-4)  # padding is masked, so batch-mates do not matter
    assert rows[0]["axes"] != rows[1]["axes"]
    alone = judge.score_clips(clips[:1], ConditionInput())[0]
    assert alone["axes"] == pytest.approx(rows[0]["axes"], abs=1e-4)


def test_audiobox_checkpoint_uses_the_published_key_names(tiny_root):
    from safetensors.torch import load_file

    keys = set(load_file(str(tiny_root / "audiobox-aesthetics" / "model.safetensors")))
    published = {
        "wavlm_model.mask_emb",
        "wavlm_model.feature_extractor.conv_layers.0.0.weight",
        "wavlm_model.feature_extractor.conv_layers.0.2.weight",
        "wavlm_model.feature_extractor.conv_layers.6.0.weight",
        "wavlm_model.layer_norm.weight",
        "wavlm_model.encoder.pos_conv.0.weight_g",
        "wavlm_model.encoder.pos_conv.0.weight_v",
        "wavlm_model.encoder.pos_conv.0.bias",
        "wavlm_model.encoder.layers.0.self_attn.relative_attention_bias.weight",
        "wavlm_model.encoder.layers.1.self_attn.grep_linear.weight",
        "wavlm_model.encoder.layers.1.self_attn.grep_a",
        "wavlm_model.encoder.layers.1.self_attn.q_proj.bias",
        "wavlm_model.encoder.layers.1.final_layer_norm.bias",
        "wavlm_model.encoder.layer_norm.weight",
        "proj_layer.PQ.0.weight",
        "layer_weights.CE",
    }
    assert published <= keys
    assert not any("relative_attention_bias" in k for k in keys if ".layers.1." in k)
    assert not any(k.startswith("wavlm_model.feature_extractor.conv_layers.0.0.bias") for k in keys)


# --- shared ----------------------------------------------------------------------------------


# The precision a judge runs in on a GPU (its cuda_dtype, unless its options say otherwise) must
# keep every preference fp32 holds clearly. "Clearly" is measured on the score's own spread: a
# judge whose scores span 4 points may move by more than one whose scores span 0.1.
BOUND_SHARE = 0.1  # of the standard deviation of the fp32 scores over the clips (docs/judges.md, "Precision on GPUs")
LENGTHS = (2.0, 7.0, 12.0, 35.0)
PRECISION_JUDGES = [
    ("muq_mulan", "MuQ-MuLan-large"),
    ("songeval", "SongEval"),
    ("cmi_rm", "CMI-RM"),
    ("cmi_rm", "CMI-RM-CA"),
    ("aesthetics", "audiobox-aesthetics"),
    ("clap", None),
]


def _music_clip(path, seconds, *, root_hz, seed, sr=22050):
    """Partials and a little noise, with a slow amplitude swell: closer to music than a pure tone."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = sum((0.2 / k) * np.sin(2 * np.pi * root_hz * k * t + rng.uniform(0, 6.28)) for k in range(1, 7))
    wave = wave * (0.6 + 0.4 * np.sin(2 * np.pi * 0.25 * t)) + 0.02 * rng.standard_normal(len(t))
    sf.write(str(path), wave.astype(np.float32), sr)
    return ClipAudio(path=str(path), sha256=path.stem)


def flips_beyond(fp32: np.ndarray, other: np.ndarray, bound: float) -> list[tuple[int, int, float]]:
    """Pairs (i, j, fp32 margin) whose preference differs between the two precisions although fp32's
    margin is at least `bound` (with the tie-goes-to-B rule on both sides)."""
    out = []
    for i in range(len(fp32)):
        for j in range(i + 1, len(fp32)):
            if (fp32[i] > fp32[j]) != (other[i] > other[j]) and abs(fp32[i] - fp32[j]) >= bound:
                out.append((i, j, float(abs(fp32[i] - fp32[j]))))
    return out


def test_the_flip_rule_counts_only_clear_preferences():
    fp32 = np.array([0.0, 1.0, 1.05])
    assert flips_beyond(fp32, np.array([0.0, 1.1, 1.0]), bound=0.1) == []  # 1 vs 2 flipped, margin 0.05 < 0.1
    assert flips_beyond(fp32, np.array([1.2, 1.0, 1.05]), bound=0.1) == [(0, 1, 1.0), (0, 2, 1.05)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,directory", PRECISION_JUDGES, ids=[d or k for k, d in PRECISION_JUDGES])
def test_gpu_precision_flips_no_clear_preference(tiny_root, tiny_clap_dir, no_network, tmp_path, kind, directory, device):
    """Clips of 2, 7, 12 and 35 s (two timbres each) scored in fp32 and in the judge's GPU precision,
    on the CPU (bf16 there is emulated, so the rounding is what a GPU's would be) and on CUDA when visible."""
    clips = [_music_clip(tmp_path / f"{int(s)}-{n}.wav", s, root_hz=110.0 * (n + 1) + 7 * s, seed=n * 10 + int(s)) for n in range(2) for s in LENGTHS]
    condition = ConditionInput(prompt="calm piano song", lyrics="la la love you")
    weights = tiny_clap_dir if directory is None else tiny_root / directory
    gpu_dtype = ADAPTERS[kind].cuda_dtype
    fp32 = _judge(kind, weights, dtype="fp32", device=device).score_clips(clips, condition)
    used = _judge(kind, weights, dtype=gpu_dtype, device=device).score_clips(clips, condition)
    for dim in ADAPTERS[kind].dimensions:
        a = np.array([row[dim] for row in fp32])
        b = np.array([row[dim] for row in used])
        bound = BOUND_SHARE * float(a.std())
        assert bound > 0, f"{kind} gives every clip the same {dim} score: no spread to set a bound from"
        flips = flips_beyond(a, b, bound)
        worst = float(np.abs(a - b).max())
        assert not flips, f"{kind} in {gpu_dtype} on {device}: {dim} preferences flipped beyond the bound {bound:.4f} (max |diff| {worst:.4f}): {flips}"


def test_cmi_rm_runs_in_fp32_on_gpus_unless_asked_otherwise():
    from scoring.judges.nets.common import judge_dtype

    assert ADAPTERS["cmi_rm"].cuda_dtype == "float32"
    assert judge_dtype({}, "cuda", cuda_default="float32") == torch.float32
    assert judge_dtype({"dtype": "bf16"}, "cuda", cuda_default="float32") == torch.bfloat16
    assert judge_dtype({}, "cpu", cuda_default="bfloat16") == torch.float32
    assert all(ADAPTERS[k].cuda_dtype == "bfloat16" for k in ("muq_mulan", "songeval", "aesthetics", "clap"))


@pytest.mark.parametrize(
    "kind,weights,expected",
    [
        ("muq_mulan", "MuQ-MuLan-large", "OpenMuQ/MuQ-MuLan-large layout"),
        ("songeval", "SongEval", "ASLP-lab/SongEval checkout layout"),
        ("cmi_rm", "CMI-RM", "HaiwenXia/CMI-RM layout"),
        ("aesthetics", "audiobox-aesthetics", "facebook/audiobox-aesthetics layout"),
    ],
)
def test_missing_weights_are_reported_with_the_expected_layout(settings, tmp_path, kind, weights, expected):
    settings.AUDITORIUM_MODEL_DIR = tmp_path
    state = _judge(kind, weights).availability()
    assert not state.available
    assert f"weights not found: {tmp_path / weights}" in state.reason and expected in state.reason
    (tmp_path / weights).mkdir()
    state = _judge(kind, weights).availability()
    assert not state.available and expected in state.reason


def test_incomplete_neighbours_are_named(tiny_root, tmp_path):
    import shutil

    shutil.copytree(tiny_root / "MuQ-MuLan-large", tmp_path / "MuQ-MuLan-large")
    shutil.copytree(tiny_root / "CMI-RM", tmp_path / "CMI-RM")
    shutil.copytree(tiny_root / "SongEval", tmp_path / "SongEval")
    state = _judge("muq_mulan", tmp_path / "MuQ-MuLan-large").availability()
    assert not state.available and "'OpenMuQ/MuQ-large-msd-iter'" in state.reason
    state = _judge("cmi_rm", tmp_path / "CMI-RM").availability()
    assert not state.available and "MuQ-large-msd-iter" in state.reason
    state = _judge("songeval", tmp_path / "SongEval").availability()
    assert not state.available and "MuQ model 'OpenMuQ/MuQ-large-msd-iter' not found" in state.reason
    shutil.copytree(tiny_root / "MuQ-large-msd-iter", tmp_path / "MuQ-large-msd-iter")
    assert _judge("songeval", tmp_path / "SongEval").availability().available
    config = json.loads((tmp_path / "MuQ-MuLan-large" / "config.json").read_text())
    assert config["text_model"]["name"] == "xlm-roberta-base"
    assert "'xlm-roberta-base'" in _judge("muq_mulan", tmp_path / "MuQ-MuLan-large").availability().reason


@pytest.mark.django_db
def test_judges_command_lists_the_cmi_family_with_reasons(settings, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    settings.AUDITORIUM_MODEL_DIR = tmp_path
    out = StringIO()
    call_command("judges", "--ensure-defaults", stdout=out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines()}
    for key, layout in (("muq-mulan", "MuQ-MuLan-large"), ("songeval", "SongEval"), ("cmi-rm", "CMI-RM"), ("audiobox-aesthetics", "audiobox-aesthetics")):
        assert f"UNAVAILABLE: weights not found: AUDITORIUM_MODEL_DIR/{layout}" in lines[key]  # the models folder named, not its server path
    assert "dims=alignment,musicality" in lines["cmi-rm"]


def test_audiobox_port_reproduces_a_checkpoint_written_by_the_reference_package(tmp_path):
    import shutil
    from pathlib import Path

    from scoring.judges.nets.audiobox import load_aesthetics

    fixture = Path(__file__).parent / "fixtures" / "audiobox_reference"
    expected = json.loads((fixture / "expected.json").read_text())
    shutil.copy(fixture / "model.safetensors", tmp_path / "model.safetensors")
    config = json.loads((fixture / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "encoder": expected["encoder"]}))
    model = load_aesthetics(tmp_path)  # every key of Meta's file checked, weight_g/weight_v included
    rng = np.random.default_rng(expected["seed"])
    wave = torch.from_numpy((0.1 * rng.standard_normal((3, 160000))).astype(np.float32))
    valid = torch.arange(160000)[None, :] < torch.tensor(expected["valid_samples"])[:, None]
    wave[~valid] = 0
    with torch.inference_mode():
        out = model(wave, valid)
    for axis, values in expected["predictions"].items():
        assert out[axis].numpy() == pytest.approx(values, abs=1e-6)


@pytest.mark.django_db
def test_judges_page_says_which_precision_each_judge_uses_on_gpus(client, settings, tmp_path):
    from django.urls import reverse

    from scoring.models import Judge
    from tests.factories import UserFactory

    settings.AUDITORIUM_MODEL_DIR = tmp_path
    Judge.objects.create(key="cmi", kind="cmi_rm", weights="CMI-RM")
    Judge.objects.create(key="mulan", kind="muq_mulan", weights="MuQ-MuLan-large")
    Judge.objects.create(key="mulan-full", kind="muq_mulan", weights="MuQ-MuLan-large", options={"dtype": "fp32"})
    Judge.objects.create(key="sig", kind="signal")
    client.force_login(UserFactory(username="res", roles=["researcher"]))
    page = client.get(reverse("scoring:judge-list")).content.decode()
    rows = {key: page.split(f'data-judge="{key}"')[1].split("</tr>")[0] for key in ("cmi", "mulan", "mulan-full", "sig")}
    assert "on GPUs: fp32 (bf16 flipped clear preferences)" in rows["cmi"]
    assert "on GPUs: bf16" in rows["mulan"]
    assert "on GPUs: fp32" in rows["mulan-full"] and "flipped" not in rows["mulan-full"]
    assert "on GPUs" not in rows["sig"]
