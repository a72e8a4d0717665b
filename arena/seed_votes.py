"""Seeded demo votes for the arena, so a fresh demo's leaderboard ranks its systems instead of staying empty.

No one listened: every vote is drawn from the demo systems' known musicality ranks
(annotation/demo/catalogue.py) with deliberate noise, from a fixed seed, so every demo database gets
the same votes. The battles are real ones, though: both clips are rendered by the systems'
own adapters at the arena's clip length and level, so a release that asks for them has audio.

Each vote carries `source = seeded` (Vote.Source.SEEDED), an idempotency key starting with
SEEDED_KEY, the feedback SEEDED_FEEDBACK and one of the SEEDED_VISITORS. The leaderboard says how
many it includes; the battle-log release and arena benchmarks leave them out unless asked.
"""

from __future__ import annotations

import math
import random
from itertools import combinations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.services import clip_ingest_array

from .adapters import GenerationRequest, adapter_for, timed_generate
from .leaderboard import BOARDS
from .models import AdapterKind, ArenaSystem, Battle, Visitor, Vote
from .moderation import is_instrumental
from .seed import PREBAKED_PROMPTS

SEEDED_VOTE_SEED = 20261
SEEDED_KEY = "seeded-demo:"
SEEDED_FEEDBACK = "Seeded demo vote (no one listened)"
# Not salted hashes of a cookie (those are hex), so no visitor's cookie can ever match one.
SEEDED_VISITORS = ("seeded-demo-1", "seeded-demo-2", "seeded-demo-3")
# Every pair of demo systems meets this often per board (more when the listing threshold asks for
# it): with six systems each one has 5 × rounds votes, and the board lists systems from
# ARENA_LEADERBOARD_MIN_VOTES (20).
ROUNDS = {"instrumental": 12, "vocal": 10}
PROMPTS_PER_BOARD = 3
# How often the system with the better musicality rank wins, by rank gap (as the annotation demo's
# seeded votes: noisier on close calls); a share of every pair's votes are ties.
WIN_CHANCE = {1: 0.75, 2: 0.85, 3: 0.9}
FAR_WIN_CHANCE = 0.95
TIE_CHANCE = 0.08


def _prompts() -> dict[str, list[tuple[str, str]]]:
    """The first prebaked prompts of each board, in pool order."""
    by_board: dict[str, list[tuple[str, str]]] = {board: [] for board in BOARDS}
    for text, lyrics in PREBAKED_PROMPTS:
        board = "instrumental" if is_instrumental(text, lyrics) else "vocal"
        if len(by_board[board]) < PROMPTS_PER_BOARD:
            by_board[board].append((text, lyrics))
    return by_board


def _rounds(board: str, systems: int) -> int:
    needed = math.ceil(int(settings.ARENA_LEADERBOARD_MIN_VOTES) / max(1, systems - 1))
    return max(ROUNDS[board], needed)


def _choice(rng: random.Random, rank_a: int, rank_b: int) -> str:
    if rng.random() < TIE_CHANCE:
        return Vote.Choice.TIE
    better = Vote.Choice.A if rank_a < rank_b else Vote.Choice.B
    worse = Vote.Choice.B if better == Vote.Choice.A else Vote.Choice.A
    return better if rng.random() < WIN_CHANCE.get(abs(rank_a - rank_b), FAR_WIN_CHANCE) else worse


def _plan(systems: list[ArenaSystem], ranks: dict[str, int]) -> list[dict]:
    """Every seeded battle and its vote, drawn in a fixed order from a fixed seed."""
    rng = random.Random(SEEDED_VOTE_SEED)
    prompts = _prompts()
    plan = []
    for board in BOARDS:
        for round_ in range(_rounds(board, len(systems))):
            for number, (first, second) in enumerate(combinations(systems, 2)):
                # Drawn for every planned battle, stored or not, so the rest stay identical whatever exists.
                a, b = (first, second) if rng.random() < 0.5 else (second, first)
                choice = _choice(rng, ranks[a.name], ranks[b.name])
                prompt_index = (round_ + number) % len(prompts[board])
                text, lyrics = prompts[board][prompt_index]
                plan.append(
                    {
                        "key": f"{SEEDED_KEY}{board}:{round_}:{first.name}:{second.name}",
                        "board": board,
                        "prompt": text,
                        "lyrics": lyrics,
                        "seed": SEEDED_VOTE_SEED + prompt_index,
                        "a": a,
                        "b": b,
                        "choice": choice,
                        "visitor": (round_ + number) % len(SEEDED_VISITORS),
                    }
                )
    return plan


def _clip(system: ArenaSystem, *, prompt: str, lyrics: str, seed: int, cache: dict) -> tuple[int, float, object]:
    """One system's clip for one seeded prompt, made the way a battle side is made (stored once, reused by every battle)."""
    from .levelling import prepare_audio  # the arena's one level and format for every clip

    key = (system.pk, prompt, lyrics, seed)
    if key not in cache:
        rate, seconds = int(settings.ARENA_SAMPLE_RATE), float(settings.ARENA_CLIP_SECONDS)
        request = GenerationRequest(prompt=prompt, lyrics=lyrics, instrumental=not lyrics, seconds=seconds, seed=seed, sample_rate=rate)
        result = timed_generate(adapter_for(system), request)
        audio, generated = prepare_audio(result.audio, result.sample_rate, seconds=seconds)
        clip, _ = clip_ingest_array(audio=audio, sample_rate=rate, system=system.system, fmt="FLAC")
        cache[key] = (clip.pk, round(float(result.generation_seconds or 0.0), 3), generated)
    return cache[key]


def seeded_votes_seed() -> dict[str, int]:
    """Cast the seeded votes between the built-in demo systems that are missing; running it twice adds nothing."""
    from annotation import demo

    ranks = {spec.name: spec.musicality_rank for spec in demo.DEMO_SYSTEMS}
    systems = [
        s
        for s in ArenaSystem.objects.select_related("system").filter(adapter_kind=AdapterKind.DEMO, system__name__in=ranks).order_by("system__name")
        if s.adapter_config.get("demo", s.name) == s.name
    ]
    if len(systems) < 2:
        return {"created": 0, "seeded": Vote.objects.filter(source=Vote.Source.SEEDED).count()}
    stored = set(Vote.objects.filter(source=Vote.Source.SEEDED, idempotency_key__startswith=SEEDED_KEY).values_list("idempotency_key", flat=True))
    missing = [item for item in _plan(systems, ranks) if item["key"] not in stored]
    if missing:
        with transaction.atomic():
            _store(missing)
    return {"created": len(missing), "seeded": Vote.objects.filter(source=Vote.Source.SEEDED).count()}


def _store(items: list[dict]) -> None:
    visitors = [
        Visitor.objects.get_or_create(cookie_hash=name, defaults={"pseudonym": name})[0]
        for name in SEEDED_VISITORS
    ]
    now, seconds, clips = timezone.now(), float(settings.ARENA_CLIP_SECONDS), {}
    battles, votes = [], []
    for item in items:
        sides = {side: _clip(item[side], prompt=item["prompt"], lyrics=item["lyrics"], seed=item["seed"], cache=clips) for side in ("a", "b")}
        battles.append(
            Battle(
                visitor=visitors[item["visitor"]],
                prompt=item["prompt"],
                lyrics=item["lyrics"],
                is_prebaked=True,
                is_instrumental=item["board"] == "instrumental",
                duration_requested=seconds,
                seed=item["seed"],
                system_a=item["a"],
                system_b=item["b"],
                clip_a_id=sides["a"][0],
                clip_b_id=sides["b"][0],
                generation_seconds_a=sides["a"][1],
                generation_seconds_b=sides["b"][1],
                loudness_lufs_a=sides["a"][2].lufs,
                loudness_lufs_b=sides["b"][2].lufs,
                true_peak_a=sides["a"][2].true_peak_dbtp,
                true_peak_b=sides["b"][2].true_peak_dbtp,
                vocals_a=item["board"] == "vocal" and item["a"].supports_vocals,
                vocals_b=item["board"] == "vocal" and item["b"].supports_vocals,
                status=Battle.Status.VOTED,
                ready_at=now,
            )
        )
    Battle.objects.bulk_create(battles)
    for item, battle in zip(items, battles, strict=True):
        votes.append(
            Vote(
                battle=battle,
                visitor=battle.visitor,
                choice=item["choice"],
                feedback=SEEDED_FEEDBACK,
                listen_seconds_a=0.0,
                listen_seconds_b=0.0,
                idempotency_key=item["key"],
                source=Vote.Source.SEEDED,
            )
        )
    Vote.objects.bulk_create(votes)
