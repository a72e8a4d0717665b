"""Judge adapters behind one interface; see base.JudgeAdapter.

Importing this package is cheap (numpy only): models load lazily, once per worker process, the
first time a worker scores with them. It is a library: it imports and runs with torch,
transformers, numpy, scipy and soundfile, without Django, Celery or a settings module (the
platform only tells it its models folder, runtime.use_model_dir). `python -m scoring.judges`
scores a benchmark export with it (offline.py).
"""

from __future__ import annotations

from .aesthetics import AestheticsJudge
from .audiollm import AQAJudge, LLMPairwiseJudge, RubricJudge
from .base import (
    ALIGNMENT,
    BOTH,
    DIMENSIONS,
    MODEL_A,
    MODEL_B,
    MUSICALITY,
    NEITHER,
    Availability,
    ClipAudio,
    ConditionInput,
    JudgeAdapter,
    JudgeConfig,
    JudgeOutputError,
    JudgeUnavailable,
    PairOutcome,
    models_relative,
    prefer,
)
from .clap import ClapJudge
from .cmirm import CMIRMJudge
from .lyrics import LyricsJudge
from .mulan import MuQMuLanJudge
from .pam import PAMJudge
from .reward import RewardJudge
from .signal import SignalJudge
from .songeval import SongEvalJudge


class ExternalJudge(JudgeAdapter):
    kind = "external"
    title = "Imported external results"
    measures = "Per-row results published by others (e.g. TuneJury); compared with humans, never run here."
    dimensions = (ALIGNMENT, MUSICALITY)
    needs_weights = False

    def availability(self) -> Availability:
        return Availability(False, "imported results only: load them with `manage.py compare_judges --import-results FILE`")


ADAPTERS: dict[str, type[JudgeAdapter]] = {
    cls.kind: cls
    for cls in (
        SignalJudge,
        ClapJudge,
        AestheticsJudge,
        MuQMuLanJudge,
        SongEvalJudge,
        CMIRMJudge,
        LLMPairwiseJudge,
        AQAJudge,
        RubricJudge,
        ExternalJudge,
        RewardJudge,
        PAMJudge,
        LyricsJudge,
    )
}
# A reward model reads another judge's clip features; it finds that judge's adapter here.
RewardJudge.registry = ADAPTERS


def judge_config(judge) -> JudgeConfig:
    return JudgeConfig(key=judge.key, kind=judge.kind, version=judge.version, weights=judge.weights, options=dict(judge.options or {}))


def adapter_for(judge, *, template: str = "", store=None, model_dir=None) -> JudgeAdapter:
    """The adapter for a Judge row (or a JudgeConfig); `model_dir`: where relative weights are looked up
    (default: runtime.model_dir(), the platform's AUDITORIUM_MODEL_DIR inside the platform)."""
    config = judge if isinstance(judge, JudgeConfig) else judge_config(judge)
    try:
        cls = ADAPTERS[config.kind]
    except KeyError:
        raise JudgeUnavailable(f"unknown judge kind {config.kind!r}") from None
    return cls(config, template=template, store=store, model_dir=model_dir)


def templates_for(kind: str) -> tuple[str, ...]:
    from .prompts import TEMPLATES

    return TEMPLATES.get(kind, ())


__all__ = [
    "ADAPTERS",
    "ALIGNMENT",
    "BOTH",
    "DIMENSIONS",
    "MODEL_A",
    "MODEL_B",
    "MUSICALITY",
    "NEITHER",
    "Availability",
    "ClipAudio",
    "ConditionInput",
    "JudgeAdapter",
    "JudgeConfig",
    "JudgeOutputError",
    "JudgeUnavailable",
    "models_relative",
    "PairOutcome",
    "adapter_for",
    "judge_config",
    "prefer",
    "templates_for",
]
