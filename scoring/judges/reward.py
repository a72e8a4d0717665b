"""Reward models trained here (scoring.reward), scored like any per-clip judge.

A Judge row of kind "reward" is one trained model: its weights and model card lie under
AUDITORIUM_MODEL_DIR/<Judge.weights>, and Judge.options["features"] is the feature judge's
configuration as it was at training time. The clip features come from that judge's clip cache
(found through the cache attached to this judge), so a clip is measured once for training and scoring.

A condition the model was trained or validated on is refused (a failed verdict that says so):
accuracy on those would measure memory, not judgment.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .runtime import cached_model

from .base import ALIGNMENT, MUSICALITY, Availability, ClipAudio, ConditionInput, JudgeAdapter, JudgeConfig, JudgeUnavailable, package_missing, resolve_weights

CARD_FILE = "card.json"


class SeenCondition(ValueError):
    """The model was trained or validated on this condition."""


def _load(path: str):
    from ..reward.model import RewardModel

    card = json.loads((Path(path) / CARD_FILE).read_text())
    split = card["split"]
    # A split by system holds out clips, not prompts: there a seen clip is refused, elsewhere a seen condition.
    seen = frozenset(split.get("seen_clips") or []) if split.get("refuses") == "clips" else frozenset(split["seen_conditions"])
    return RewardModel.load(path), card, seen


class RewardJudge(JudgeAdapter):
    kind = "reward"
    title = "Reward model (trained here)"
    measures = (
        "Alignment and musicality learned from this platform's human votes (Bradley–Terry over a feature judge's "
        "frozen clip features and the condition); its model card lists data, split, features and held-out accuracy."
    )
    dimensions = (ALIGNMENT, MUSICALITY)
    modalities = ("text", "text+lyrics", "text+ref", "text+lyrics+ref")
    packages = ("safetensors",)
    code_version = "1"
    # The adapter classes by kind, installed by the judges package (a registry, not an import).
    registry: dict = {}

    feature_store = None

    # --- the feature judge -------------------------------------------------------------------
    def feature_config(self) -> JudgeConfig:
        spec = self.options.get("features") or {}
        if not spec.get("kind"):
            raise JudgeUnavailable(f"judge {self.config.key} names no feature judge (options.features)")
        return JudgeConfig(key=spec.get("key", ""), kind=spec["kind"], version=str(spec.get("version", "1")), weights=spec.get("weights", ""), options=dict(spec.get("options") or {}))

    def feature_adapter(self) -> JudgeAdapter:
        config = self.feature_config()
        cls = self.registry.get(config.kind)
        if cls is None:
            raise JudgeUnavailable(f"unknown feature judge kind {config.kind!r}")
        return cls(config, store=self.feature_store or self._feature_store(config.key), model_dir=self.model_dir)

    def _feature_store(self, key: str):
        """The feature judge's clip cache under the version this model was trained on, built like this judge's own.

        The store attached by the scoring services (a ClipStore: its judge row and version) is asked for
        its sibling by key, so this module needs neither the ORM nor the services.
        """
        store = self.store
        if store is None or not hasattr(store, "judge"):
            return None
        source = type(store.judge).objects.filter(key=key).first()
        return None if source is None else type(store)(source, self.feature_cache_version())

    def feature_cache_version(self) -> str:
        return str((self.options.get("features") or {}).get("cache_version", ""))

    def availability(self) -> Availability:
        missing = package_missing(*self.packages)
        if missing:
            return Availability(False, f"python package not installed: {missing}")
        path, reason = resolve_weights(self.config.weights, root=self.model_dir)
        if reason or not (Path(path) / CARD_FILE).is_file():
            return Availability(False, f"trained weights missing: expected {self.config.weights}/ with model.safetensors and {CARD_FILE} under AUDITORIUM_MODEL_DIR")
        try:
            features = self.feature_adapter()
        except JudgeUnavailable as exc:
            return Availability(False, str(exc))
        if features.cache_version() != self.feature_cache_version():
            return Availability(False, f"feature judge {features.config.key} is now version {features.cache_version()}; this model was trained on {self.feature_cache_version()}")
        state = features.availability()
        if not state.available:
            return Availability(False, f"feature judge {features.config.key}: {state.reason}")
        return Availability(True, weights_path=path)

    def loaded(self):
        """(RewardModel, card, conditions seen in training) for this judge, once per process."""
        path = self.require()
        return cached_model(("reward", path, self.config.version), lambda: _load(path))

    def featurizer(self):
        from ..reward.features import Featurizer

        return Featurizer(self.feature_adapter(), text=(self.options.get("text") or "auto"))

    # --- scoring ---------------------------------------------------------------------------------
    def context_key(self, condition: ConditionInput) -> str:
        return condition.content_key("reward", self.config.key)

    def scores_for(self, clips: list[ClipAudio], conditions: list[ConditionInput], featurizer=None) -> np.ndarray:
        """(n, 2) scores (alignment, musicality) of clips[i] under conditions[i]; no check of seen conditions."""
        from ..reward.model import FeatureTable

        model, _, _ = self.loaded()
        featurizer = featurizer or self.featurizer()
        distinct: dict[str, ClipAudio] = {}
        for clip in [*clips, *(c.reference for c in conditions if c.reference is not None)]:
            distinct.setdefault(clip.sha256, clip)
        order = list(distinct)
        keys = list(dict.fromkeys(c.content_key() for c in conditions))
        by_key = {c.content_key(): c for c in conditions}
        table = FeatureTable(
            clips=featurizer.clip_vectors([distinct[s] for s in order]),
            conditions=featurizer.condition_vectors([by_key[k] for k in keys]),
            reference=[order.index(by_key[k].reference.sha256) if by_key[k].reference is not None else -1 for k in keys],
        )
        return model.scores(table, [order.index(c.sha256) for c in clips], [keys.index(c.content_key()) for c in conditions])

    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        _, card, seen = self.loaded()
        if card["split"].get("refuses") == "clips":
            if any(c.sha256 in seen for c in clips):
                raise SeenCondition(f"a clip here was in the training or validation split of {self.config.key}; it is scored only on held-out clips")
        elif condition.content_key() in seen:
            raise SeenCondition(f"this condition was in the training or validation split of {self.config.key}; it is scored only on held-out conditions")
        values = self.scores_for(list(clips), [condition] * len(clips))
        return [{ALIGNMENT: float(v[0]), MUSICALITY: float(v[1]), "model": card.get("key", self.config.key)} for v in values]
