"""Reward-model inputs: the feature judges' vectors, the text embeddings, the reference clip."""

from __future__ import annotations

import hashlib

import numpy as np
import soundfile as sf

from scoring.judges import ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.reward.features import LYRICS_DIM, PROMPT_ATTRIBUTES, PROMPT_DIM, SIGNAL_KEYS, Featurizer, hashed_text, prompt_attributes
from scoring.reward.model import FeatureTable, model_inputs


def _wav(path, seconds: float, freq: float) -> ClipAudio:
    t = np.arange(int(seconds * 48000)) / 48000
    sf.write(str(path), (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), 48000)
    return ClipAudio(path=str(path), sha256=hashlib.sha256(path.read_bytes()).hexdigest())


def test_hashed_text_is_deterministic_unit_length_and_word_based():
    a = hashed_text("A bright, airy piano piece", 64)
    assert np.allclose(a, hashed_text("a BRIGHT airy piano piece", 64))
    assert abs(np.linalg.norm(a) - 1.0) < 1e-12
    assert not np.allclose(a, hashed_text("a dark airy piano piece", 64))
    assert not hashed_text("", 32).any()


def test_signal_featurizer_reads_the_judge_measurements_and_hashes_the_text(tmp_path):
    featurizer = Featurizer(adapter_for(JudgeConfig(key="signal", kind="signal")))
    assert featurizer.text == "hashed"
    vectors = featurizer.clip_vectors([_wav(tmp_path / "a.wav", 1.0, 440.0), _wav(tmp_path / "b.wav", 1.0, 2000.0)])
    assert vectors.shape == (2, len(SIGNAL_KEYS) + 7 + 1)
    centroid = SIGNAL_KEYS.index("spectral_centroid_hz")
    assert vectors[1, centroid] > vectors[0, centroid]
    conditions = featurizer.condition_vectors([ConditionInput(prompt="calm piano"), ConditionInput(lyrics="la la la")])
    assert conditions.shape == (2, PROMPT_DIM + LYRICS_DIM + 2 + len(PROMPT_ATTRIBUTES))
    flags = slice(PROMPT_DIM + LYRICS_DIM, PROMPT_DIM + LYRICS_DIM + 2)
    assert conditions[0, flags].tolist() == [1.0, 0.0] and conditions[1, flags].tolist() == [0.0, 1.0]
    # The prompt attributes close the vector: "calm piano" is calm and names a piano.
    attributes = dict(zip(PROMPT_ATTRIBUTES, conditions[0, -len(PROMPT_ATTRIBUTES) :]))
    assert {k for k, v in attributes.items() if v} == {"mood_calm", "piano"}
    assert featurizer.prompt_inputs() == {"similarity": False, "crossed": len(PROMPT_ATTRIBUTES)}


def test_clap_featurizer_uses_its_audio_and_text_towers(tiny_clap_dir, no_network, tmp_path):
    adapter = adapter_for(JudgeConfig(key="clap", kind="clap", weights=str(tiny_clap_dir)))
    featurizer = Featurizer(adapter)
    assert featurizer.text == "judge"
    clips = featurizer.clip_vectors([_wav(tmp_path / "a.wav", 2.0, 330.0)])
    assert clips.shape == (1, 16)
    conditions = featurizer.condition_vectors([ConditionInput(prompt="calm piano"), ConditionInput(prompt="", lyrics="oh")])
    assert conditions.shape == (2, 16 + LYRICS_DIM + 2 + len(PROMPT_ATTRIBUTES))
    assert featurizer.prompt_inputs() == {"similarity": True, "crossed": 0}
    assert np.allclose(conditions[0, :16], adapter.embed_text(["calm piano"])[0], atol=1e-6)
    assert not conditions[1, :16].any()
    assert Featurizer(adapter, text="hashed").condition_vectors([ConditionInput(prompt="calm piano")]).shape == (1, PROMPT_DIM + LYRICS_DIM + 2 + len(PROMPT_ATTRIBUTES))


def test_a_reference_clip_enters_as_its_vector_and_the_difference():
    table = FeatureTable(clips=[[1.0, 0.0], [3.0, 2.0], [0.0, 5.0]], conditions=[[0.5], [0.7]], reference=[2, -1])
    mean, std = np.zeros(2), np.ones(2)
    clip, context = model_inputs(table, mean, std, [0, 1], [0, 1])
    assert clip.tolist() == [[1.0, 0.0, 1.0, -5.0], [3.0, 2.0, 0.0, 0.0]]
    assert context.tolist() == [[0.5, 0.0, 5.0, 1.0], [0.7, 0.0, 0.0, 0.0]]


def test_prompt_attributes_name_tempo_mood_instruments_and_a_number():
    def named(text):
        values = dict(zip(PROMPT_ATTRIBUTES, prompt_attributes(text)))
        return {k: v for k, v in values.items() if v}

    assert named("A dark, brooding cello piece at 72 BPM") == {"mood_dark": 1.0, "strings": 1.0, "has_number": 1.0, "number": 0.72}
    assert named("upbeat happy synth pop with drums") == {"tempo_fast": 1.0, "mood_bright": 1.0, "synth": 1.0, "drums": 1.0}
    assert named("Shimmering, airy") == {"mood_bright": 1.0}
    # Words outside the lists say nothing, and "darkness" is not "dark".
    assert named("a darkness of vaporwave") == {}
    assert named("") == {}


def test_crossed_attributes_multiply_each_clip_feature_and_similarity_is_a_cosine():
    # Two clips, two conditions whose last two columns are attributes; the first two columns a "text embedding".
    table = FeatureTable(clips=[[1.0, 2.0], [3.0, -1.0]], conditions=[[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]], reference=[-1, -1])
    clip, _ = model_inputs(table, np.zeros(2), np.ones(2), [0, 1], [0, 1], crossed=2, similarity=True)
    # clip (2), reference difference (2, none here), cosine (1), clip x attributes (2 x 2).
    assert clip.shape == (2, 2 + 2 + 1 + 4)
    assert np.allclose(clip[0, 4], 1.0 / np.sqrt(5.0)) and np.allclose(clip[1, 4], -1.0 / np.sqrt(10.0))
    assert clip[0, 5:].tolist() == [1.0, 0.0, 2.0, 0.0] and clip[1, 5:].tolist() == [0.0, 3.0, 0.0, -1.0]
