"""The scoring tasks by name, for the code that queues them.

Tasks call services (task -> service is the natural direction), so services cannot import
scoring.tasks without a cycle. They look a task up here by the name it is registered under
instead; scoring.tasks takes its names from here, so the two cannot drift apart.
ScoringConfig.ready() imports scoring.tasks, so the names are registered in every process (web,
worker, tests) and the registered task object still honours eager mode and routing options.
"""

from __future__ import annotations

from celery import current_app

RUN_START = "scoring.run_start"
CLIPS_PREWARM = "scoring.clips_prewarm"
PAIR_SCORE = "scoring.pair_score"
PAIRS_SCORE = "scoring.pairs_score"
REPORT_CHANGED = "scoring.report_changed"
REWARD_TRAIN = "scoring.reward_train"
SELECTION_REFRESH = "scoring.selection_refresh"


def task(name: str):
    """The registered task called `name` (celery's NotRegistered, a KeyError naming it, when it is not)."""
    return current_app.tasks[name]
