"""Semantic hard negatives: a catch pair whose wrong answer follows another prompt, swapped in or generated."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.models import Clip, Pair
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from common.errors import ServiceError
from scoring import semantic, services
from scoring.models import Judge, ScoringRun, Verdict
from scoring.selectors import run_verdict_stats
from tests.factories import StudyFactory, SystemFactory


def test_two_valued_attributes_flip_and_case_is_kept():
    out = semantic.rewrite(prompt="Fast jazz with piano", lyrics="", attribute="tempo")
    assert out.prompt == "Slow jazz with piano"
    assert out.change == {"attribute": "tempo", "from": "fast", "to": "slow"}
    assert semantic.rewrite(prompt="a melancholic cello piece", lyrics="", attribute="mood").prompt == "a happy cello piece"
    assert semantic.rewrite(prompt="an instrumental folk song", lyrics="", attribute="vocals").prompt == "an with vocals folk song"


def test_an_instrument_becomes_one_the_prompt_does_not_name_and_the_seed_picks_it():
    seen = set()
    for seed in range(30):
        out = semantic.rewrite(prompt="piano and violin duet", lyrics="", attribute="instrument", seed=seed)
        assert out.prompt.endswith(" and violin duet") and not out.prompt.startswith(("piano", "violin"))
        seen.add(out.change["to"])
    assert len(seen) > 3
    # "electric guitar" is read as itself, not as "guitar".
    assert semantic.prompt_attributes("an electric guitar solo")["instrument"] == 2
    assert semantic.rewrite(prompt="hip hop beat", lyrics="", attribute="genre", seed=1).change["from"] == "hip hop"


def test_a_prompt_without_the_attribute_is_refused_with_what_was_looked_for():
    with pytest.raises(semantic.SemanticError, match="states no tempo"):
        semantic.rewrite(prompt="a piano piece", lyrics="", attribute="tempo")
    with pytest.raises(semantic.SemanticError, match="attribute must be one of"):
        semantic.rewrite(prompt="fast", lyrics="", attribute="colour")
    with pytest.raises(semantic.SemanticError, match="no lyrics"):
        semantic.rewrite(prompt="fast", lyrics="  ", attribute="lyrics")
    with pytest.raises(semantic.SemanticError, match="swap mode"):
        semantic.rewrite(prompt="fast", lyrics="", attribute="reference")


def test_a_lyric_line_is_swapped_for_another_conditions_line_or_reversed():
    out = semantic.rewrite(prompt="pop", lyrics="sun on the hill\nrain in the valley", attribute="lyrics", seed=3, other_lyrics=["stars above the sea"])
    assert "stars above the sea" in out.lyrics.splitlines() and len(out.lyrics.splitlines()) == 2
    alone = semantic.rewrite(prompt="pop", lyrics="sun on the hill", attribute="lyrics")
    assert alone.lyrics == "hill the on sun" and alone.change["line"] == 1


def _tone(freq: float, seconds: float = 1.0, sr: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.fixture
def study(db):
    study = StudyFactory(name="semantic-study")
    systems = [SystemFactory(name="sys-one"), SystemFactory(name="sys-two")]
    made = {}
    for i, prompt in enumerate(["fast jazz piano", "slow jazz piano", "slow rock guitar", "fast rock piano"]):
        condition, _ = condition_get_or_create(prompt=prompt)
        clips = [clip_ingest_array(audio=_tone(200.0 + 40 * i + 7 * j), sample_rate=16000, system=s, fmt="WAV")[0] for j, s in enumerate(systems)]
        pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1])
        made[prompt] = (condition, clips)
    return study, made


def test_swap_takes_the_same_systems_answer_to_the_closest_condition_that_differs(study):
    study, made = study
    condition, (clip, _) = made["fast jazz piano"]
    variant, catch = services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="tempo")
    # "slow jazz piano" differs in tempo only; "slow rock guitar" also in genre and instrument.
    assert variant == made["slow jazz piano"][1][0]
    assert variant.system == clip.system
    assert catch.kind == Pair.Kind.CATCH and catch.condition == condition
    assert catch.expected_alignment == clip and catch.expected_musicality is None
    assert catch.catch_spec == {"kind": "semantic", "mode": "swap", "attribute": "tempo", "source_condition": made["slow jazz piano"][0].pk, "from": "fast", "to": "slow"}
    again, same = services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="tempo")
    assert (again, same) == (variant, catch) and Pair.objects.filter(kind=Pair.Kind.CATCH).count() == 1


def test_swap_refusals_change_nothing(study):
    study, made = study
    condition, (clip, _) = made["fast jazz piano"]
    before = Pair.objects.count()
    with pytest.raises(ServiceError, match="mood: the prompt states no mood"):
        services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="mood")
    with pytest.raises(ServiceError, match="no reference audio"):
        services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="reference")
    # A mood that no other condition of the study states: nothing to swap in.
    happy, _ = condition_get_or_create(prompt="happy fast jazz piano")
    lone = clip_ingest_array(audio=_tone(777.0), sample_rate=16000, fmt="WAV")[0]
    pair_get_or_create(study=study, condition=happy, clip_a=lone, clip_b=clip)
    before = Pair.objects.count()
    with pytest.raises(ServiceError, match="no other condition of semantic-study differs"):
        services.semantic_negative_create(study=study, condition=happy, clip=lone, attribute="mood")
    with pytest.raises(ServiceError, match="answers no pair"):
        services.semantic_negative_create(study=study, condition=condition, clip=made["slow rock guitar"][1][0], attribute="tempo")
    with pytest.raises(ServiceError, match="mode must be"):
        services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="tempo", mode="guess")
    assert Pair.objects.count() == before


def test_generate_rewrites_the_prompt_and_the_clips_own_arena_system_makes_the_variant(study):
    from arena.models import ArenaSystem

    from annotation import demo

    study, made = study
    condition, _ = made["fast jazz piano"]
    name = demo.SYSTEM_NAMES[0]
    system = SystemFactory(name=name)
    clip = clip_ingest_array(audio=demo.render(name, prompt=condition.prompt, seconds=2.0, sample_rate=16000), sample_rate=16000, system=system, fmt="WAV")[0]
    pair_get_or_create(study=study, condition=condition, clip_a=clip, clip_b=made["fast jazz piano"][1][1])
    ArenaSystem.objects.create(system=system)
    variant, catch = services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="tempo", mode="generate")
    assert variant.kind == Clip.Kind.DERIVED and variant.derived_from == clip and variant.system == system
    assert variant.degradation["kind"] == "semantic" and variant.degradation["prompt"] == "slow jazz piano"
    assert catch.catch_spec["mode"] == "generate" and catch.catch_spec["to"] == "slow"
    # The procedural system follows the prompt: the slow version is another piece of audio.
    assert variant.sha256 != clip.sha256 and abs(variant.duration - clip.duration) < 0.01
    # A clip whose system is not in the arena has nothing to generate with.
    with pytest.raises(ServiceError, match="not in the arena"):
        services.semantic_negative_create(study=study, condition=condition, clip=made["fast jazz piano"][1][0], attribute="tempo", mode="generate")


def test_the_run_tells_catch_pairs_apart_by_kind_with_intervals(study):
    study, made = study
    condition, (clip, other) = made["fast jazz piano"]
    _, semantic_catch = services.semantic_negative_create(study=study, condition=condition, clip=clip, attribute="tempo")
    _, noise_catch = services.hard_negative_create(clip=other, degradation={"kind": "noise", "snr_db": 0}, study=study)
    assert noise_catch.catch_spec["kind"] == "noise"
    judge = Judge.objects.create(key="by-hand", kind=Judge.Kind.SIGNAL)
    run = ScoringRun.objects.create(judge=judge, study=study, state=ScoringRun.State.DONE)
    # The judge misses the tempo change (picks the variant) and hears the noise.
    Verdict.objects.create(run=run, pair=semantic_catch, alignment_choice=semantic_catch.clip_b, musicality_choice=semantic_catch.clip_a)
    Verdict.objects.create(run=run, pair=noise_catch, musicality_choice=noise_catch.clip_a)
    stats = run_verdict_stats(run=run)
    by_kind = stats["catch_by_kind"]
    assert set(by_kind) == {"semantic: tempo", "noise"}
    assert by_kind["semantic: tempo"]["alignment"]["accuracy"] == 0.0 and by_kind["semantic: tempo"]["musicality"] is None
    low, high = by_kind["noise"]["musicality"]["ci"]
    assert by_kind["noise"]["musicality"]["n"] == 1 and 0.0 < low < 1.0 and high == pytest.approx(1.0)
    # scipy's Wilson interval for 1 of 1.
    assert low == pytest.approx(1 / (1 + 1.959964**2), abs=1e-4)


def test_the_command_makes_one_catch_pair_per_condition_and_reports_skips(study, capsys):
    study, made = study
    call_command("hardneg", "--study", study.name, "--kind", "semantic", "--attribute", "genre", "--limit", "10")
    out = capsys.readouterr().out
    assert out.count("catch pair") == 4
    catches = Pair.objects.filter(kind=Pair.Kind.CATCH)
    assert {p.catch_spec["attribute"] for p in catches} == {"genre"} and catches.count() == 4
    with pytest.raises(CommandError, match="No semantic catch pair made"):
        call_command("hardneg", "--study", study.name, "--kind", "semantic", "--attribute", "mood")
    with pytest.raises(CommandError, match="needs --study"):
        call_command("hardneg", "--kind", "semantic")
