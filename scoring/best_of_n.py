"""Best-of-N checked by people (CMI-RewardBench's test-time scaling): does a judge's top pick really sound better?

For each prompt, N candidates are generated (arena adapters, the systems taking turns, a seed each)
or taken from a study's clips for the same condition; the ranker (any judge, a trained reward model
included) scores them on one dimension; a blind pairwise study asks people to compare the top-1
with a random other candidate of the same prompt, and with the bottom-1. The report gives the
human win rate of the ranker's choice per comparison and dimension, with an interval that
resamples prompts (a prompt's pairs are not independent), beside the 50 % a random pick gets, and
how often the human majority on a pair agrees with the ranker.
"""

from __future__ import annotations

import random

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Clip, Condition, Judgment, Pair, Study
from annotation.selectors import judgments_without_seeded
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from annotation.services.studies import study_create
from common.errors import ServiceError

from . import queueing
from .evaluation import DIMENSIONS, MODEL_A, MODEL_B, MUSICALITY
from .models import BestOfNCandidate, BestOfNExperiment, Judge
from .stats import cluster_bootstrap, num, percentile_ci

MAX_N = 16
MAX_PROMPTS = 200
COMPARISONS = ("top_vs_random", "top_vs_bottom")


def best_of_n_create(
    *,
    name: str,
    owner,
    prompts: list[str] | None = None,
    n: int,
    ranker: Judge,
    systems: list[str] | None = None,
    source_study: Study | None = None,
    dimension: str = MUSICALITY,
    seconds: float = 6.0,
    seed: int = 0,
    queue: bool = True,
) -> BestOfNExperiment:
    """Check everything, make the (empty) study and the experiment, and queue the work; a refusal stores nothing."""
    from annotation.access import study_allowed
    from arena.models import ArenaSystem

    from .services import judge_adapter

    if not 2 <= n <= MAX_N:
        raise ServiceError(f"N is the number of candidates per prompt, from 2 to {MAX_N}.", code="bad_n")
    if dimension not in DIMENSIONS:
        raise ServiceError(f"The ranking dimension is {' or '.join(DIMENSIONS)}.", code="bad_dimension")
    adapter = judge_adapter(ranker)
    if dimension not in adapter.dimensions:
        raise ServiceError(f"Judge {ranker.key} does not score {dimension} (it scores {', '.join(adapter.dimensions) or 'nothing'}).", code="bad_dimension")
    state = adapter.availability()
    if not state.available:
        raise ServiceError(f"Judge {ranker.key} is unavailable: {state.reason}", code="judge_unavailable")
    systems = [s.strip() for s in (systems or []) if s.strip()]
    if source_study is not None and not study_allowed(study=source_study, user=owner):
        # The candidates would become audible in the new study: the source's read rule must allow it.
        raise ServiceError(f"Only the owner of study {source_study.name}, its collaborators and admins may use its clips.", code="forbidden", status=403)
    if source_study is None:
        prompts = [p.strip() for p in (prompts or []) if p.strip()]
        if not prompts:
            raise ServiceError("Give at least one prompt (one per line), or a study whose clips are the candidates.", code="no_prompts")
        if len(prompts) > MAX_PROMPTS:
            raise ServiceError(f"At most {MAX_PROMPTS} prompts per experiment.", code="too_many_prompts")
        if not systems:
            raise ServiceError("Name the arena systems that generate the candidates.", code="no_systems")
        known = set(ArenaSystem.objects.filter(system__name__in=systems).values_list("system__name", flat=True))
        missing = [s for s in systems if s not in known]
        if missing:
            raise ServiceError(f"No arena system named {', '.join(missing)}.", code="unknown_system")
        if not 0.5 <= seconds <= 60:
            raise ServiceError("Candidates are 0.5 to 60 seconds long.", code="bad_seconds")
    else:
        prompts, systems = [], []
    with transaction.atomic():
        study = study_create(name=name, owner=owner, title=f"Best-of-{n}: is {ranker.key}'s top pick better?")
        experiment = BestOfNExperiment.objects.create(
            study=study, prompts=prompts, n=n, systems=systems, source_study=source_study, ranker=ranker, dimension=dimension,
            seconds=seconds, seed=seed, created_by=owner,
        )  # fmt: skip
        if queue:
            transaction.on_commit(lambda: queueing.task(queueing.BEST_OF_N).apply_async((experiment.pk,), queue=ranker.queue))
    return experiment


def _conditions_and_candidates(experiment: BestOfNExperiment) -> dict[int, list[Clip]]:
    """{condition id: its N candidate clips}: generated (or found again, on a second run) or taken from the source study."""
    if experiment.source_study_id:
        out: dict[int, list[Clip]] = {}
        pairs = Pair.objects.filter(study_id=experiment.source_study_id, kind=Pair.Kind.REGULAR).order_by("pk")
        for condition_id, a, b in pairs.values_list("condition_id", "clip_a_id", "clip_b_id"):
            clips = out.setdefault(condition_id, [])
            clips += [c for c in (a, b) if c not in clips]
        by_id = Clip.objects.in_bulk([c for ids in out.values() for c in ids])
        # Conditions with fewer than two clips have nothing to rank; the first N of the rest, in pair order.
        return {cid: [by_id[c] for c in ids[: experiment.n]] for cid, ids in out.items() if len(ids) >= 2}
    from arena.adapters import GenerationError, GenerationRequest, adapter_for
    from arena.models import ArenaSystem

    arena = {a.system.name: a for a in ArenaSystem.objects.filter(system__name__in=experiment.systems).select_related("system")}
    out = {}
    for index, prompt in enumerate(experiment.prompts):
        condition, _ = condition_get_or_create(prompt=prompt)
        stored = list(BestOfNCandidate.objects.filter(experiment=experiment, condition=condition).select_related("clip").order_by("pk"))
        clips = [c.clip for c in stored]
        for k in range(len(clips), experiment.n):
            name = experiment.systems[k % len(experiment.systems)]
            request = GenerationRequest(prompt=prompt, seconds=experiment.seconds, seed=int(experiment.seed) * 1000 + index * MAX_N + k)
            try:
                generated = adapter_for(arena[name]).generate(request)
            except GenerationError as exc:
                raise ServiceError(f"{name} could not generate a candidate for prompt {index + 1}: {exc}", code="generation_failed") from None
            if generated.clip_id is not None:
                clip = Clip.objects.get(pk=generated.clip_id)
            else:
                clip, _ = clip_ingest_array(audio=generated.audio, sample_rate=generated.sample_rate, system=arena[name].system, original_name=f"best-of-n/{experiment.pk}/{index}-{k}")
            if clip in clips:
                continue  # the same audio twice is one candidate
            BestOfNCandidate.objects.get_or_create(experiment=experiment, condition=condition, clip=clip)
            clips.append(clip)
        if len(clips) >= 2:
            out[condition.pk] = clips
    return out


def _scores(experiment: BestOfNExperiment, condition: Condition, clips: list[Clip]) -> list[float]:
    """The ranker's score of each clip on the experiment's dimension: its own score (per-clip judges), or wins in a round robin (pairwise ones)."""
    from .services import clip_audio, condition_input, judge_adapter

    adapter = judge_adapter(experiment.ranker)
    cond = condition_input(condition)
    audio = [clip_audio(c) for c in clips]
    if not adapter.pairwise:
        rows = adapter.score_clips(audio, cond)
        return [float(row[experiment.dimension]) if row.get(experiment.dimension) is not None else float("nan") for row in rows]
    wins = [0.0] * len(clips)
    games = [(i, j) for i in range(len(clips)) for j in range(i + 1, len(clips))]
    for (i, j), outcome in zip(games, adapter.compare_many([(audio[i], audio[j], cond) for i, j in games]), strict=True):
        label = outcome.labels.get(experiment.dimension) if outcome.status == "ok" else None
        if label == MODEL_A:
            wins[i] += 1
        elif label == MODEL_B:
            wins[j] += 1
        elif label is not None:
            wins[i] += 0.5
            wins[j] += 0.5
    return wins


def best_of_n_execute(*, experiment_id: int) -> BestOfNExperiment:
    """Generate (or collect), rank, and fill the study with top-1 vs random and top-1 vs bottom-1 pairs. Safe to run twice."""
    experiment = BestOfNExperiment.objects.select_related("ranker", "study").get(pk=experiment_id)
    if experiment.state == BestOfNExperiment.State.DONE:
        return experiment
    BestOfNExperiment.objects.filter(pk=experiment.pk).update(state=BestOfNExperiment.State.RUNNING, error="")
    try:
        candidates = _conditions_and_candidates(experiment)
        if not candidates:
            raise ServiceError("No prompt has two candidates to rank.", code="no_candidates")
        rng = random.Random(int(experiment.seed))
        with transaction.atomic():
            for condition_id, clips in sorted(candidates.items()):
                condition = Condition.objects.get(pk=condition_id)
                scores = _scores(experiment, condition, clips)
                # Highest score first; a missing score ranks last; equal scores keep candidate order (seeded, so reproducible).
                order = sorted(range(len(clips)), key=lambda i: (np.isnan(scores[i]), -scores[i] if not np.isnan(scores[i]) else 0.0, i))
                top, bottom = clips[order[0]], clips[order[-1]]
                other = rng.choice([clips[i] for i in order[1:]])
                for rank, i in enumerate(order, start=1):
                    BestOfNCandidate.objects.update_or_create(
                        experiment=experiment, condition=condition, clip=clips[i],
                        defaults={"score": None if np.isnan(scores[i]) else float(scores[i]), "rank": rank, "is_random": clips[i] == other},
                    )  # fmt: skip
                for challenger in dict.fromkeys([other, bottom]):
                    pair_get_or_create(study=experiment.study, condition=condition, clip_a=top, clip_b=challenger)
            experiment.state, experiment.finished_at = BestOfNExperiment.State.DONE, timezone.now()
            experiment.save(update_fields=["state", "finished_at"])
    except ServiceError as exc:
        BestOfNExperiment.objects.filter(pk=experiment.pk).update(state=BestOfNExperiment.State.FAILED, error=exc.message, finished_at=timezone.now())
        experiment.refresh_from_db()
    return experiment


def best_of_n_report(*, experiment: BestOfNExperiment, include_seeded: bool = False, rounds: int = 1000, seed: int = 0) -> dict:
    """The human win rate of the ranker's choice, per comparison and dimension, with prompt-resampled intervals; reads only."""
    candidates = list(BestOfNCandidate.objects.filter(experiment=experiment, rank__isnull=False).values("condition_id", "clip_id", "rank", "is_random"))
    by_condition: dict[int, list[dict]] = {}
    for c in candidates:
        by_condition.setdefault(c["condition_id"], []).append(c)
    challengers: dict[str, dict[str, tuple[int, int]]] = {kind: {} for kind in COMPARISONS}
    for condition_id, rows in by_condition.items():
        rows.sort(key=lambda r: r["rank"])
        top = rows[0]["clip_id"]
        key_random = next((Pair.key_for(top, r["clip_id"]) for r in rows if r["is_random"]), None)
        if key_random:
            challengers["top_vs_random"][key_random] = (condition_id, top)
        challengers["top_vs_bottom"][Pair.key_for(top, rows[-1]["clip_id"])] = (condition_id, top)
    judgments = Judgment.objects.filter(pair__study=experiment.study)
    if not include_seeded:
        judgments = judgments_without_seeded(judgments)
    votes = list(
        judgments.exclude(annotator__annotator_profile__excluded_at__isnull=False).values_list(
            "pair__clip_key", "pair__condition_id", "alignment_choice_id", "musicality_choice_id", "alignment_tie", "musicality_tie"
        )
    )
    out: dict = {"votes": len(votes), "prompts": len(by_condition), "include_seeded": include_seeded, "comparisons": {}}
    for kind in COMPARISONS:
        block = {}
        for dim_index, dim in enumerate(DIMENSIONS):
            scores, clusters, per_pair = [], [], {}
            for clip_key, condition_id, *choices in votes:
                target = challengers[kind].get(clip_key)
                if target is None or target[0] != condition_id:
                    continue
                choice, tie = choices[dim_index], choices[2 + dim_index]
                if choice is None and not tie:
                    continue
                value = 0.5 if choice is None else float(choice == target[1])
                scores.append(value)
                clusters.append(condition_id)
                per_pair.setdefault(clip_key, []).append(value)
            block[dim] = _win_block(scores, clusters, per_pair, rounds=rounds, seed=seed + dim_index, ranked=dim == experiment.dimension, challengers=challengers[kind])
        out["comparisons"][kind] = block
    return out


def _win_block(scores, clusters, per_pair, *, rounds: int, seed: int, ranked: bool, challengers) -> dict:
    if not scores:
        return {"n": 0, "prompts": 0, "win_rate": None, "ci": [None, None]}
    values = np.asarray(scores, dtype=float)
    boot = cluster_bootstrap(values[None, :], np.asarray(clusters), rounds=rounds, seed=seed)[:, 0]
    block = {"n": int(len(values)), "prompts": int(len(set(clusters))), "win_rate": num(values.mean()), "ci": percentile_ci(boot)}
    if ranked:
        # Pairs whose human majority is not tied: does it side with the ranker (which chose top-1 by construction)?
        majorities = {key: float(np.mean(v)) for key, v in per_pair.items() if np.mean(v) != 0.5}
        if majorities:
            agree = np.array([1.0 if m > 0.5 else 0.0 for m in majorities.values()])
            owners = np.array([challengers[key][0] for key in majorities])
            pair_boot = cluster_bootstrap(agree[None, :], owners, rounds=rounds, seed=seed + 7)[:, 0]
            block["judge_human_accuracy"] = {"value": num(agree.mean()), "ci": percentile_ci(pair_boot), "pairs": int(len(agree))}
    return block


def experiments_visible_to(*, user):
    from annotation.access import studies_visible_to

    return BestOfNExperiment.objects.filter(study__in=studies_visible_to(user=user).values("pk")).select_related("study", "ranker")


def candidate_rows(*, experiment: BestOfNExperiment) -> list[dict]:
    """Per prompt its candidates in rank order, for the page."""
    rows: dict[int, dict] = {}
    for c in BestOfNCandidate.objects.filter(experiment=experiment).select_related("condition", "clip__system").order_by("condition_id", "rank", "pk"):
        entry = rows.setdefault(c.condition_id, {"prompt": c.condition.prompt or str(c.condition), "candidates": []})
        entry["candidates"].append({"rank": c.rank, "score": c.score, "system": c.clip.system.name if c.clip.system_id else "", "is_random": c.is_random})
    return list(rows.values())

