"""Demo judges: one of every judge kind the README lists, and a signal run on the demo study.

The learned judges load their weights from AUDITORIUM_MODEL_DIR; on a fresh demo those are
absent, so the judges page lists them as unavailable with the reason instead of hiding them.
"""

from __future__ import annotations

from annotation.models import Study

from .models import BestOfNExperiment, Judge, ScoringRun
from .services import DEFAULT_JUDGES, run_create

SIGNAL_JUDGE = "signal-technical"

# The default judges plus the audio-text and audio-LLM kinds, under the checkpoint names docs/scoring.md uses.
DEMO_JUDGES = [
    *DEFAULT_JUDGES,
    {"key": "clap-music", "kind": Judge.Kind.CLAP, "queue": Judge.Queue.GPU, "weights": "larger_clap_music"},
    {"key": "qwen2-audio", "kind": Judge.Kind.LLM_PAIRWISE, "queue": Judge.Queue.GPU, "weights": "Qwen2-Audio-7B-Instruct"},
    {"key": "aqascore", "kind": Judge.Kind.AQA, "queue": Judge.Queue.GPU, "weights": "Qwen2-Audio-7B-Instruct"},
    {"key": "rubric", "kind": Judge.Kind.RUBRIC, "queue": Judge.Queue.GPU, "weights": "Qwen2-Audio-7B-Instruct"},
]


def demo_judges_seed() -> list[Judge]:
    """Create the demo judges that are missing; judges already configured are left as they are."""
    return [Judge.objects.get_or_create(key=spec["key"], defaults={k: v for k, v in spec.items() if k != "key"})[0] for spec in DEMO_JUDGES]


def demo_signal_run(*, study: Study, user=None) -> ScoringRun | None:
    """Queue the signal judge on the study unless a run of it exists already (so re-seeding adds none)."""
    judge = Judge.objects.get(key=SIGNAL_JUDGE)
    if ScoringRun.objects.filter(judge=judge, study=study).exclude(state=ScoringRun.State.FAILED).exists():
        return None
    return run_create(judge=judge, study=study, label="demo: technical faults", user=user)


DEMO_BEST_OF_N = "demo-best-of-n"


def demo_best_of_n(*, owner) -> BestOfNExperiment | None:
    """The best-of-N loop on the demo: the procedural systems generate, the signal judge ranks by musicality, seeded voters
    who follow the systems' designed ranks answer the blind study. Once: None when it exists already, or without the arena's demo systems."""
    from annotation import demo
    from annotation.demo.seed import SEEDED_VOTERS, seeded_voter
    from annotation.demo.votes import demo_rank_votes_seed
    from arena.models import ArenaSystem

    from .best_of_n import best_of_n_create, best_of_n_execute

    if BestOfNExperiment.objects.filter(study__name=DEMO_BEST_OF_N).exists():
        return None
    if ArenaSystem.objects.filter(system__name__in=demo.SYSTEM_NAMES).count() < len(demo.SYSTEM_NAMES):
        return None  # the arena's demo systems generate the candidates: seed_arena has not run
    prompts = [c.prompt for c in demo.DEMO_CONDITIONS if c.prompt and not c.lyrics][:4]
    experiment = best_of_n_create(
        name=DEMO_BEST_OF_N, owner=owner, prompts=prompts, n=4, ranker=Judge.objects.get(key=SIGNAL_JUDGE), systems=list(demo.SYSTEM_NAMES),
        dimension="musicality", seconds=4.0, queue=False,
    )  # fmt: skip
    experiment = best_of_n_execute(experiment_id=experiment.pk)
    demo_rank_votes_seed(study=experiment.study, annotators=[seeded_voter(experiment.study, name) for name in SEEDED_VOTERS])
    return experiment
