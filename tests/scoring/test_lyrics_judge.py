"""The lyrics judge: its error rates against jiwer's on independently normalised text, its language rule, and a
tiny random Whisper through the real loader in a scoring run, with the network blocked."""

from __future__ import annotations

import re
import unicodedata

import jiwer
import numpy as np
import pytest

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import BOTH, MODEL_A, MODEL_B, ClipAudio, ConditionInput, JudgeConfig, adapter_for
from scoring.judges.base import pair_outcome
from scoring.judges.lyrics import LyricsJudge, error_rates, lyrics_language
from scoring.models import ClipScore, Judge, Verdict
from tests.factories import StudyFactory

# Transcript pairs with what a person computes by hand: (lyrics, transcript, language, expected WER, expected CER).
CASES = [
    ("Hello world", "hello word", "en", 1 / 2, 1 / 11),
    ("[verse]\nShe sings, softly!\n[chorus] la la la", "she sings softly la la", "en", 1 / 6, 3 / 25),
    ("I can't stop the rain", "i cant stop rain", "en", 1 / 5, 4 / 20),
    ("我爱你，中国。", "我爱中国人", "zh", 1.0, 2 / 5),
    ("[00:12.50]月亮代表我的心\n[00:20.00]你问我爱你有多深", "月亮代表我的新 你问我爱你有多深", "zh", None, 1 / 15),
    ("君の名は。きっと", "きみの名はきっと", "ja", None, 2 / 7),
]


def _by_hand(text: str, *, unspaced: bool) -> str:
    """The normalisation the judge documents, written without jiwer: tags out, lower case, punctuation out."""
    text = re.sub(r"\[[^\]]*\]", " ", text).lower()
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    text = " ".join(text.split())
    return text.replace(" ", "") if unspaced else text


@pytest.mark.parametrize(("lyrics", "heard", "language", "wer", "cer"), CASES)
def test_error_rates_equal_jiwer_on_the_same_transcripts(lyrics, heard, language, wer, cer):
    rates = error_rates(lyrics, heard, language=language)
    unspaced = language in ("zh", "ja")
    ref_words, hyp_words = _by_hand(lyrics, unspaced=False), _by_hand(heard, unspaced=False)
    ref_chars, hyp_chars = _by_hand(lyrics, unspaced=unspaced), _by_hand(heard, unspaced=unspaced)
    assert rates["wer"] == pytest.approx(jiwer.wer(ref_words, hyp_words), abs=1e-12)
    assert rates["cer"] == pytest.approx(jiwer.cer(ref_chars, hyp_chars), abs=1e-12)
    if wer is not None:
        assert rates["wer"] == pytest.approx(wer)
    if cer is not None:
        assert rates["cer"] == pytest.approx(cer)
    assert rates["measure"] == ("cer" if unspaced else "wer")
    assert rates["rate"] == rates[rates["measure"]]


def test_nothing_heard_is_every_word_missed_and_tag_only_lyrics_are_refused():
    assert error_rates("hello world", "", language="en")["wer"] == 1.0
    assert error_rates("我爱你", "[Music] ...", language="zh")["cer"] == 1.0
    with pytest.raises(ValueError, match="no words"):
        error_rates("[instrumental]", "la", language="en")


def test_language_is_read_from_the_script_or_the_option():
    assert lyrics_language("Hello, world") == "en"
    assert lyrics_language("我爱你 baby, 中国") == "zh"
    assert lyrics_language("我爱你 baby baby") == "zh" and lyrics_language("oh baby baby 爱") == "en"
    assert lyrics_language("君の名は") == "ja"
    assert lyrics_language("사랑해요") == "ko"
    assert lyrics_language("...!!") == ""
    judge = LyricsJudge(JudgeConfig(key="l", kind="lyrics"))
    assert judge.language(ConditionInput(lyrics="我爱你")) == "zh"
    assert LyricsJudge(JudgeConfig(key="l", kind="lyrics", options={"language": "EN"})).language(ConditionInput(lyrics="我爱你")) == "en"
    assert LyricsJudge(JudgeConfig(key="l", kind="lyrics", options={"language": "detect"})).language(ConditionInput(lyrics="hello")) == ""
    # The language is part of the cache context: forcing another one does not reuse the scores.
    assert judge.context_key(ConditionInput(lyrics="hi")) != LyricsJudge(JudgeConfig(key="l", kind="lyrics", options={"language": "de"})).context_key(ConditionInput(lyrics="hi"))


def test_lower_rate_wins_within_the_margin_is_a_tie_and_no_lyrics_is_not_a_failure():
    judge = LyricsJudge(JudgeConfig(key="l", kind="lyrics", options={"tie_margin": 0.05}))
    assert pair_outcome(judge, {"alignment": 0.8}, {"alignment": 0.5}).labels == {"alignment": MODEL_A}
    assert pair_outcome(judge, {"alignment": 0.2}, {"alignment": 0.5}).labels == {"alignment": MODEL_B}
    assert pair_outcome(judge, {"alignment": 0.52}, {"alignment": 0.5}).labels == {"alignment": BOTH}
    skipped = {"alignment": None, "not_applicable": "the condition has no lyrics"}
    outcome = pair_outcome(judge, skipped, dict(skipped))
    assert outcome.status == "ok" and outcome.labels == {} and outcome.details["not_applicable"] == "the condition has no lyrics"
    # A clip that has lyrics but no score is still a failure.
    assert pair_outcome(judge, {"alignment": None}, {"alignment": 0.5}).status == "failed"
    state = LyricsJudge(JudgeConfig(key="l", kind="lyrics", weights="/nowhere", options={"tie_margin": 2})).availability()
    assert not state.available and "tie_margin" in state.reason


@pytest.fixture(scope="module")
def tiny_whisper_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from .tiny_models import build_tiny_whisper

    return build_tiny_whisper(tmp_path_factory.mktemp("tiny-whisper"))


def _spy_generate(judge) -> list[dict]:
    """Record the keyword arguments the judge hands Whisper's generate (the model cached for this process)."""
    model = judge._model()[0]
    calls, real = [], model.generate

    def generate(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    model.generate = generate
    return calls


@pytest.mark.slow
def test_tiny_whisper_transcribes_windows_and_gets_the_language(tiny_whisper_dir, no_network, tmp_path):
    import soundfile as sf

    judge = adapter_for(JudgeConfig(key="lyr", kind="lyrics", weights=str(tiny_whisper_dir), options={"device": "cpu", "max_new_tokens": 6}))
    assert isinstance(judge, LyricsJudge) and judge.availability().available
    calls = _spy_generate(judge)
    clips = []
    for i, seconds in enumerate((1.5, 40.0)):
        path = tmp_path / f"c{i}.wav"
        sf.write(str(path), (0.2 * np.sin(2 * np.pi * (220 + 110 * i) * np.arange(int(seconds * 22050)) / 22050)).astype(np.float32), 22050)
        clips.append(ClipAudio(path=str(path), sha256=f"clip-{i}"))
    rows = judge.score_clips(clips, ConditionInput(prompt="ballad", lyrics="月亮代表我的心"))
    assert [c["language"] for c in calls] == ["zh"] and calls[0]["task"] == "transcribe"
    for row in rows:
        assert row["language"] == "zh" and row["measure"] == "cer"
        assert row["alignment"] == pytest.approx(1.0 - error_rates("月亮代表我的心", row["transcript"], language="zh")["cer"])
    # 1.5 s is one window, 40 s two (30 s + 10 s): three windows in one batch of four.
    assert judge.transcribe_waves([np.zeros(24000, np.float32), np.zeros(16000 * 40, np.float32)], language="zh") == [r["transcript"] for r in rows]
    detect = adapter_for(JudgeConfig(key="lyr-d", kind="lyrics", weights=str(tiny_whisper_dir), options={"device": "cpu", "max_new_tokens": 4, "language": "detect"}))
    calls = _spy_generate(detect)
    assert detect.score_clips(clips[:1], ConditionInput(lyrics="hello"))[0]["language"] == "detect"
    assert "language" not in calls[0]


@pytest.mark.slow
@pytest.mark.django_db
def test_tiny_whisper_scoring_run_end_to_end(tiny_whisper_dir, no_network):
    study = StudyFactory(name="lyrics-study")
    sr = 16000
    waves = [(0.2 * np.sin(2 * np.pi * f * np.arange(sr * 2) / sr)).astype(np.float32) for f in (200, 300, 450)]
    clips = [clip_ingest_array(audio=w, sample_rate=sr, fmt="WAV")[0] for w in waves]
    conditions = [
        condition_get_or_create(prompt="pop song", lyrics="Hello darling, stay with me")[0],
        condition_get_or_create(prompt="pop song", lyrics="[chorus] Stay with me tonight")[0],
        condition_get_or_create(prompt="mandopop", lyrics="月亮代表我的心")[0],
        condition_get_or_create(prompt="instrumental piano")[0],
    ]
    pair_ids = [pair_get_or_create(study=study, condition=c, clip_a=clips[i], clip_b=clips[j])[0].pk for c in conditions for i, j in ((0, 1), (0, 2), (1, 2))]
    judge = Judge.objects.create(key="lyrics-tiny", kind=Judge.Kind.LYRICS, weights=str(tiny_whisper_dir), options={"device": "cpu", "max_new_tokens": 6, "tie_margin": 0.0})
    before = LyricsJudge.transcribe_calls
    run = services.run_create(judge=judge, pair_ids=pair_ids)
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    assert run.done == len(pair_ids) == 12 and run.failed == 0
    # Each clip is transcribed once per language: the two English conditions share the transcripts.
    assert LyricsJudge.transcribe_calls - before == 6
    transcripts = {(s.clip_sha256, s.context_key): s.scores["transcript"] for s in ClipScore.objects.filter(judge=judge, context_key__startswith="asr:")}
    assert len(transcripts) == 6 and {key.split(":")[1] for _, key in transcripts} == {"en", "zh"}
    for verdict in Verdict.objects.filter(run=run).select_related("pair__condition", "pair__clip_a", "pair__clip_b"):
        condition = verdict.pair.condition
        assert verdict.status == "ok" and verdict.musicality_choice_id is None
        if not condition.lyrics:
            assert verdict.alignment_choice_id is None and verdict.alignment_score_a is None
            assert verdict.details["not_applicable"] == "the condition has no lyrics"
            continue
        language = "zh" if "月" in condition.lyrics else "en"
        for side, clip in (("a", verdict.pair.clip_a), ("b", verdict.pair.clip_b)):
            heard = transcripts[(clip.sha256, f"asr:{language}:6")]
            rates = error_rates(condition.lyrics, heard, language=language)
            assert getattr(verdict, f"alignment_score_{side}") == pytest.approx(1.0 - rates["rate"])
            assert verdict.details[f"clip_{side}"]["transcript"] == heard
        a, b = verdict.alignment_score_a, verdict.alignment_score_b
        expected = BOTH if a == b else (MODEL_A if a > b else MODEL_B)
        assert verdict.details["labels"]["alignment"] == expected
        assert verdict.alignment_choice_id == {MODEL_A: verdict.pair.clip_a_id, MODEL_B: verdict.pair.clip_b_id}.get(expected)
