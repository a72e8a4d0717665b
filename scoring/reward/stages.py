"""Two-stage training (CMI-RM's recipe) and the two single-stage models it is measured against (no database).

Stage 1 learns from pseudo-labels (a judge's position-consistent verdicts on pairs no one voted
on) with label smoothing; stage 2 starts from stage 1 and learns from the expert votes and, where
rating studies give them, mean opinion scores (Bradley–Terry on the votes plus a scaled-tanh
regression on the MOS). Both single-stage models are trained on the same rows with the same seed:
`stage2_only` (the expert votes and MOS from scratch, the model the platform trained before) and
`stage1_only` (the pseudo-labels alone). Every stage stops early on the expert validation votes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .model import FeatureTable, MOSTargets, RewardModel, TrainConfig, TrainingError, Votes, train

DEFAULT_SMOOTHING = 0.2
STAGE_MODELS = ("stage1_only", "stage2_only")


@dataclass
class StageData:
    """What the stages read beside the expert votes: pseudo-labelled votes (stage 1) and MOS (stage 2), over the same table."""

    pseudo: Votes | None = None
    mos: MOSTargets | None = None
    smoothing: float = DEFAULT_SMOOTHING
    mos_weight: float = 1.0
    # Stage 2's learning rate as a share of stage 1's: fine-tuning moves the pre-trained weights
    # gently, so 200 noisy expert votes refine stage 1 rather than overwrite it.
    fine_tune_lr: float = 0.2

    def __post_init__(self):
        if not 0.0 <= float(self.smoothing) < 1.0:
            raise TrainingError(f"label smoothing must be at least 0 and below 1; got {self.smoothing}")
        if not 0.0 < self.fine_tune_lr <= 1.0:
            raise TrainingError(f"the fine-tuning learning-rate share must be above 0 and at most 1; got {self.fine_tune_lr}")
        if self.mos_weight < 0:
            raise TrainingError(f"the MOS loss weight must not be negative; got {self.mos_weight}")


@dataclass
class StageModels:
    two_stage: RewardModel  # stage 1 then stage 2 (stage 2 alone when there are no pseudo-labels)
    stage1_only: RewardModel | None
    stage2_only: RewardModel


def train_stages(
    table: FeatureTable, train_votes: Votes, val_votes: Votes, stages: StageData, *, config: TrainConfig, seed: int, device: str = "cpu", progress=None
) -> StageModels:
    """Stage 1 on the pseudo-labels, stage 2 from it on the expert votes (+ MOS), and stage 2 from scratch."""
    mos = stages.mos if stages.mos is not None and len(stages.mos) else None
    steps = 3 if stages.pseudo is not None else 1

    def part(k):
        if progress is None:
            return None
        return lambda done, total, *losses: progress(k * total + done, steps * total, *losses)

    stage2_only = train(table, train_votes, val_votes, config=config, seed=seed, device=device, progress=part(0), mos=mos, mos_weight=stages.mos_weight)
    if stages.pseudo is None or not len(stages.pseudo):
        return StageModels(two_stage=stage2_only, stage1_only=None, stage2_only=stage2_only)
    stage1 = train(table, stages.pseudo, val_votes, config=config, seed=seed, device=device, progress=part(1), smoothing=float(stages.smoothing), skip_unlabelled=True)
    # Fine-tuning keeps stage 1's width and decay per dimension; the grid is not searched again. A
    # dimension the pseudo-labels do not cover was not pre-trained and learns at the full rate.
    fine = dataclasses.replace(config, select_capacity=False)
    two = train(
        table, train_votes, val_votes, config=fine, seed=seed, device=device, progress=part(2), init=stage1, mos=mos, mos_weight=stages.mos_weight,
        fine_tune_lr=stages.fine_tune_lr,
    )  # fmt: skip
    return StageModels(two_stage=two, stage1_only=stage1, stage2_only=stage2_only)
