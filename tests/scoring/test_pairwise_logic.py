"""The CMI pairwise judge's parsing and position-consistency filter, with a scripted model whose answers depend on order."""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.judges import JudgeOutputError, audiollm
from scoring.judges.audiollm import combine_orders, parse_cmi_answer, parse_strict_answer
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import StudyFactory


def answer(mq="model_a", inf="model_a", scores=(7.0, 5.0, 6.5, 4.0), reason="r") -> str:
    return json.dumps({"music_quality": mq, "instruction_following": inf, "MQ_score_a": scores[0], "MQ_score_b": scores[1], "IF_score_a": scores[2], "IF_score_b": scores[3], "reason": reason})


class ScriptedLLM:
    """Answers from a script keyed by which clip is heard first; records what it was asked."""

    def __init__(self, script):
        self.script, self.calls = script, []

    def generate(self, system, parts, waves):
        self.calls.append((system, parts, waves))
        # The first candidate's waveform identifies the order: the louder clip is "loud".
        first = waves[-2]
        key = "loud_first" if float(np.abs(first).max()) > 0.25 else "quiet_first"
        return self.script[key]


def test_parse_accepts_fenced_json_and_normalises_case():
    text = "Here you go:\n```json\n" + answer(mq="Model_B", inf="both") + "\n```"
    parsed = parse_cmi_answer(text)
    assert parsed["musicality"] == "model_b" and parsed["alignment"] == "both"
    assert parsed["scores"]["musicality"] == (7.0, 5.0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("I prefer the first one.", "no JSON object"),
        (answer(mq="first"), "music_quality='first'"),
        (answer(scores=(11, 5, 6, 4)), "outside 1-10"),
        (answer(scores=("seven", 5, 6, 4)), "not a number"),
        (json.dumps({"music_quality": "model_a"}), "instruction_following"),
    ],
)
def test_parse_refuses_malformed_answers(text, message):
    with pytest.raises(JudgeOutputError, match=message) as info:
        parse_cmi_answer(text)
    assert info.value.raw == text


def test_strict_variant_uses_one_preference_on_a_1_to_5_scale():
    parsed = parse_strict_answer('{"overall_preference": "model_b", "score_a": 2, "score_b": 4}')
    assert parsed["alignment"] == parsed["musicality"] == "model_b"
    with pytest.raises(JudgeOutputError):
        parse_strict_answer('{"overall_preference": "model_b", "score_a": 2, "score_b": 7}')


def test_combine_keeps_a_label_only_when_the_same_clip_wins_both_orders():
    forward = parse_cmi_answer(answer(mq="model_a", inf="model_a", scores=(8, 4, 7, 5)))
    # Swapped order: B is shown first. Musicality: "model_b" = the second shown = A again (consistent).
    # Alignment: "model_a" = the first shown = B (flipped with the order: dropped).
    swapped = parse_cmi_answer(answer(mq="model_b", inf="model_a", scores=(4, 6, 6, 5)))
    outcome = combine_orders(forward, swapped)
    assert outcome.status == "ok"
    assert outcome.labels == {"musicality": "model_a"}
    assert outcome.details["consistent"] == {"alignment": False, "musicality": True}
    # Scores map back to clips: A got 8 (forward) and 6 (swapped, second position).
    assert outcome.scores["musicality"] == (7.0, 4.0)
    both = combine_orders(parse_cmi_answer(answer(mq="both", inf="neither")), parse_cmi_answer(answer(mq="both", inf="neither")))
    assert both.labels == {"musicality": "both", "alignment": "neither"}


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    holder = {}

    def factory(path, options):
        holder["llm"] = ScriptedLLM(holder["script"])
        return holder["llm"]

    monkeypatch.setitem(audiollm.BACKENDS, "scripted", factory)
    (tmp_path / "weights").mkdir()
    return holder, str(tmp_path / "weights")


def _pair(study_name: str, lyrics: str = ""):
    study = StudyFactory(name=study_name)
    condition, _ = condition_get_or_create(prompt="epic orchestral", lyrics=lyrics)
    t = np.arange(16000) / 16000
    loud = clip_ingest_array(audio=(0.5 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    quiet = clip_ingest_array(audio=(0.1 * np.sin(2 * np.pi * 500 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=loud, clip_b=quiet)
    return study, pair


def _run(judge, pair, template=""):
    run = services.run_create(judge=judge, pair_ids=[pair.pk], template=template)
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_position_biased_model_is_discarded_and_the_share_reported(scripted):
    holder, weights = scripted
    # Always prefers whatever it hears first: a pure position bias.
    holder["script"] = {"loud_first": answer("model_a", "model_a"), "quiet_first": answer("model_a", "model_a")}
    _, pair = _pair("biased")
    judge = Judge.objects.create(key="llm-biased", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "scripted"}, queue=Judge.Queue.GPU)
    run = _run(judge, pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.DISCARDED
    assert verdict.alignment_choice_id is None and verdict.musicality_choice_id is None
    assert set(verdict.details["raw"]) == {"ab", "ba"}
    assert run.summary["verdicts"]["discarded_share"] == 1.0
    assert run.summary["verdicts"]["inconsistent_share"] == {"alignment": 1.0, "musicality": 1.0}
    assert len(holder["llm"].calls) == 2


@pytest.mark.django_db
def test_consistent_model_gives_a_clip_choice_and_the_prompt_follows_the_cmi_structure(scripted):
    holder, weights = scripted
    # Prefers the loud clip in both orders.
    holder["script"] = {"loud_first": answer("model_a", "model_b", reason="first"), "quiet_first": answer("model_b", "model_a", reason="second")}
    _, pair = _pair("consistent", lyrics="[Verse]\nwe rise")
    judge = Judge.objects.create(key="llm-ok", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "scripted"}, queue=Judge.Queue.GPU)
    run = _run(judge, pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.OK
    assert verdict.musicality_choice_id == pair.clip_a_id  # the loud clip
    assert verdict.alignment_choice_id == pair.clip_b_id  # the quiet clip, in both orders
    assert verdict.rationale == "first\nsecond"
    system, parts, waves = holder["llm"].calls[0]
    assert "experienced music critic" in system and '"music_quality"' in system
    texts = [p.get("text", f"<audio:{p.get('slot')}>") for p in parts]
    assert texts[0].startswith("The user prompt was: epic orchestral")
    assert texts[1].startswith("The user provided the following lyrics:")
    assert texts[2:] == ["Now listen to the first music clip, generated by model 1:", "<audio:first>", "Now listen to the second music clip, generated by model 2:", "<audio:second>"]
    assert run.summary["verdicts"]["discarded_share"] == 0.0


@pytest.mark.django_db
def test_malformed_answer_is_a_failure_with_the_raw_text(scripted):
    holder, weights = scripted
    holder["script"] = {"loud_first": answer(), "quiet_first": "Both are nice, I think A."}
    _, pair = _pair("malformed")
    judge = Judge.objects.create(key="llm-bad", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "scripted"}, queue=Judge.Queue.GPU)
    run = _run(judge, pair)
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert verdict.details["raw"]["ba"] == "Both are nice, I think A."
    assert "no JSON object" in verdict.details["error"]
    assert (run.state, run.failed) == (ScoringRun.State.DONE, 1)


@pytest.mark.django_db
def test_template_group_stores_the_spread_across_templates(scripted):
    holder, weights = scripted
    scores = {"default": (8.0, 4.0), "paraphrase-1": (6.0, 5.0), "paraphrase-2": (7.0, 6.0)}

    class ByTemplate(ScriptedLLM):
        def generate(self, system, parts, waves):
            template = next(t for t, s in audiollm.prompts.PAIRWISE_SYSTEM.items() if s == system)
            a, b = scores[template]
            loud_first = float(np.abs(waves[-2]).max()) > 0.25
            first, second = (a, b) if loud_first else (b, a)
            label = "model_a" if loud_first else "model_b"
            return answer(label, label, scores=(first, second, first, second))

    holder["script"] = {}
    _, pair = _pair("robust")
    judge = Judge.objects.create(key="llm-t", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "scripted"}, queue=Judge.Queue.GPU)
    audiollm.BACKENDS["scripted"] = lambda path, options: ByTemplate({})
    runs = services.run_create_templates(judge=judge, templates=["default", "paraphrase-1", "paraphrase-2"], pair_ids=[pair.pk])
    from scoring.tasks import run_start

    for run in runs:
        run_start.apply(args=(run.pk,))
    margins = [4.0, 1.0, 1.0]
    for run in runs:
        run.refresh_from_db()
        spread = run.summary["template_spread"]
        assert spread["templates"] == ["default", "paraphrase-1", "paraphrase-2"]
        assert spread["musicality"]["mean_margin_std"] == pytest.approx(float(np.std(margins, ddof=1)))
        assert spread["musicality"]["mean_margin_range"] == pytest.approx(3.0)
        assert spread["musicality"]["mean_label_agreement"] == 1.0
        verdict = run.verdicts.get()
        assert verdict.details["template_spread"]["alignment"]["margin_range"] == pytest.approx(3.0)
    with pytest.raises(services.ServiceError, match="templates must be distinct"):
        services.run_create_templates(judge=judge, templates=["default", "default"], pair_ids=[pair.pk])
