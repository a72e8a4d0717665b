"""The scoring tasks by name, for the code that queues them.

Tasks call services (task -> service is the natural direction), so services cannot import
scoring.tasks without a cycle. They look a task up by the name it is registered under instead
(queueing.task: the project's one lookup, auditorium.celery.task); scoring.tasks takes its names
from here, so the two cannot drift apart. How a run's pairs are cut into jobs (run_chunks) lives
here too, next to the names of the jobs that carry them. ScoringConfig.ready() imports scoring.tasks, so the names are registered in every process (web,
worker, tests) and the registered task object still honours eager mode and routing options.
"""

from __future__ import annotations

from annotation.models import Pair
# The one task lookup of the project; services call it as queueing.task, beside the names it takes.
from auditorium.celery import task  # noqa: F401

RUN_START = "scoring.run_start"
CLIPS_PREWARM = "scoring.clips_prewarm"
PAIR_SCORE = "scoring.pair_score"
PAIRS_SCORE = "scoring.pairs_score"
REPORT_CHANGED = "scoring.report_changed"
REWARD_TRAIN = "scoring.reward_train"
SELECTION_REFRESH = "scoring.selection_refresh"
BEST_OF_N = "scoring.best_of_n"


# Pairs per job of a per-clip judge: few enough that the run page moves several times on a small
# run, enough that broker round trips, commits and progress pushes are paid per chunk, not per pair.
PAIRS_PER_TASK_PER_CLIP = 8
PAIRS_PER_TASK_PAIRWISE = 16


def run_chunks(*, run, pair_ids: list[int], pairwise: bool) -> list[list[int]]:
    """The run's pairs cut into jobs (option pairs_per_task); a per-clip judge's chunks keep a condition's pairs together,
    so a chunk scores the clips its pairs share once, in one batch."""
    options = run.judge.options or {}
    size = max(1, int(options.get("pairs_per_task", PAIRS_PER_TASK_PAIRWISE if pairwise else PAIRS_PER_TASK_PER_CLIP)))
    if pairwise or size == 1:
        return [pair_ids[start : start + size] for start in range(0, len(pair_ids), size)]
    condition_of = dict(Pair.objects.filter(pk__in=pair_ids).values_list("pk", "condition_id"))
    by_condition: dict[int, list[int]] = {}
    for pid in pair_ids:
        by_condition.setdefault(condition_of[pid], []).append(pid)
    chunks: list[list[int]] = []
    for ids in by_condition.values():
        chunks += [ids[start : start + size] for start in range(0, len(ids), size)]
    # Conditions with few pairs share a chunk while it has room, so they do not each cost a job.
    merged: list[list[int]] = []
    for chunk in chunks:
        if merged and len(merged[-1]) + len(chunk) <= size:
            merged[-1] = merged[-1] + chunk
        else:
            merged.append(chunk)
    return merged
