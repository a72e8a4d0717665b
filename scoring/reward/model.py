"""The preference network: two scores per clip (alignment, musicality) under a condition.

Input of a clip under a condition: on the clip side its standardised feature vector (and, with a
reference clip, the difference to the reference's); on the context side the condition vector
(text embedding, lyrics, flags), the reference's vector and a has-reference flag. Per dimension a
small network gives a score: a linear term, a low-rank clip x context term (how well a clip fits
its condition) and one tanh layer; with prompt attributes (TrainConfig.crossed) the clip side also
carries every clip feature times every attribute. P(A preferred) = sigmoid(s_A - s_B), trained with the
Bradley–Terry log-loss on votes in clip terms (so the screen side never enters). A "both" label
is a target of 0.5, the same half credit the evaluation gives it.

Training is seeded and, on the CPU, bitwise reproducible: one intra-op thread, deterministic
algorithms, seeded initialisation and a seeded permutation per epoch. Each dimension keeps its
epoch with the lowest validation loss (early stopping), and, by default, its weight decay and
width from a small grid by the same validation loss (CAPACITY_GRID). Inference is plain numpy (float64), so
scoring needs no torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..evaluation import DIMENSIONS

CODE_VERSION = "reward-2"
WEIGHTS_FILE = "model.safetensors"
CLIP_LIMIT = 5.0  # standardised features are clipped here, so one odd clip cannot dominate
# (weight decay, hidden width) pairs tried when capacity is chosen on validation: the old fixed
# setting, a light decay, and a wide layer without decay (early stopping alone limits it). A
# nonlinear truth needs the last; a linear one is served by any, and validation picks.
CAPACITY_GRID = ((0.03, 16), (0.001, 32), (0.0, 64))


class TrainingError(ValueError):
    """The data cannot train a model (too few votes, no validation votes); the message says why."""


@dataclass(frozen=True)
class TrainConfig:
    hidden: int = 16
    rank: int = 4
    epochs: int = 300
    patience: int = 30
    lr: float = 0.01
    weight_decay: float = 0.03  # L2 (coupled, Adam): small data overfits the interaction layer without it
    batch_size: int = 256
    confidence_weight: bool = False
    # Choose weight decay and width per dimension on the validation votes (CAPACITY_GRID plus this
    # config's own pair); off: train exactly this config.
    select_capacity: bool = True
    # Trailing columns of the condition vector that are prompt attributes (features.PROMPT_ATTRIBUTES),
    # crossed with the clip features on the clip side; 0 for none.
    crossed: int = 0
    # Add the cosine similarity of the clip's raw vector to the condition vector's first columns (a
    # text-audio judge's prompt embedding, in the same space as its audio embedding).
    similarity: bool = False

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def parse(cls, values: dict | None) -> TrainConfig:
        """From user options; unknown keys and out-of-range values are refused with the allowed range."""
        values = dict(values or {})
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        derived = sorted(set(values) & {"crossed", "similarity"})
        if derived:
            raise TrainingError(f"{', '.join(derived)} follow from the feature judge and its text mode; they cannot be set")
        if unknown:
            raise TrainingError(f"unknown training option(s) {', '.join(unknown)}; known: {', '.join(cls.__dataclass_fields__)}")
        limits = {"crossed": (0, 256), "rank": (1, 256), "hidden": (1, 1024), "epochs": (1, 10000), "patience": (1, 10000), "lr": (1e-6, 1.0), "weight_decay": (0.0, 1.0), "batch_size": (1, 1 << 20)}
        out = {}
        for name, value in values.items():
            if name in ("confidence_weight", "select_capacity", "similarity"):
                if not isinstance(value, bool):
                    raise TrainingError(f"{name} must be true or false")
                out[name] = value
                continue
            kind = int if name in ("hidden", "rank", "epochs", "patience", "batch_size", "crossed") else float
            try:
                number = kind(value)
            except (TypeError, ValueError):
                raise TrainingError(f"{name} must be a number") from None
            low, high = limits[name]
            if not (low <= number <= high) or (kind is float and not math.isfinite(number)):
                raise TrainingError(f"{name} must be between {low} and {high}; got {value}")
            out[name] = number
        return cls(**out)


@dataclass
class FeatureTable:
    """Inputs the vote arrays index: clip vectors, condition vectors and each condition's reference clip."""

    clips: np.ndarray  # (n_clips, d) float, NaN where a feature was not measured
    conditions: np.ndarray  # (n_conditions, e) float
    reference: np.ndarray  # (n_conditions,) int: row of `clips`, -1 for none

    def __post_init__(self):
        self.clips = np.asarray(self.clips, dtype=np.float64).reshape(len(self.clips), -1)
        self.conditions = np.asarray(self.conditions, dtype=np.float64).reshape(len(self.conditions), -1)
        self.reference = np.asarray(self.reference, dtype=np.int64)


@dataclass
class Votes:
    """One entry per human vote, in clip terms."""

    clip_a: np.ndarray  # (n,) rows of FeatureTable.clips
    clip_b: np.ndarray
    condition: np.ndarray  # (n,) rows of FeatureTable.conditions
    target: np.ndarray  # (n, 2): 1 = A preferred, 0 = B, 0.5 = both; NaN = no label on that dimension
    confidence: np.ndarray = field(default=None)  # (n, 2), NaN where unknown

    def __post_init__(self):
        self.clip_a = np.asarray(self.clip_a, dtype=np.int64)
        self.clip_b = np.asarray(self.clip_b, dtype=np.int64)
        self.condition = np.asarray(self.condition, dtype=np.int64)
        self.target = np.asarray(self.target, dtype=np.float64).reshape(-1, 2)
        if self.confidence is None:
            self.confidence = np.full(self.target.shape, np.nan)
        self.confidence = np.asarray(self.confidence, dtype=np.float64).reshape(-1, 2)

    def __len__(self) -> int:
        return len(self.clip_a)

    def subset(self, index) -> Votes:
        index = np.asarray(index, dtype=np.int64)
        return Votes(self.clip_a[index], self.clip_b[index], self.condition[index], self.target[index], self.confidence[index])


@dataclass
class MOSTargets:
    """Mean opinion scores of clips under conditions (rating studies), on [-1, 1]: the scale's bottom to its top."""

    clip: np.ndarray  # (n,) rows of FeatureTable.clips
    condition: np.ndarray  # (n,) rows of FeatureTable.conditions
    value: np.ndarray  # (n, 2) normalised MOS per dimension; NaN where that dimension was not rated

    def __post_init__(self):
        self.clip = np.asarray(self.clip, dtype=np.int64)
        self.condition = np.asarray(self.condition, dtype=np.int64)
        self.value = np.asarray(self.value, dtype=np.float64).reshape(-1, 2)

    def __len__(self) -> int:
        return len(self.clip)


def mos_normalise(value, low: float, high: float) -> float:
    """A mean rating on the scale [low, high] as a regression target on [-1, 1]."""
    return float(np.clip(2.0 * (float(value) - low) / (high - low) - 1.0, -1.0, 1.0))


def _quiet_nan(fn, *args, **kwargs):
    """A numpy nan-reduction without its all-NaN warning (the caller handles NaN results)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def _standardiser(clips: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and spread of the clips the training votes use (NaN-aware; a constant feature gets spread 1)."""
    data = clips[np.unique(rows)] if len(rows) else clips
    mean = _quiet_nan(np.nanmean, data, axis=0)
    std = _quiet_nan(np.nanstd, data, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    std = np.where(np.isfinite(std) & (std > 1e-9), std, 1.0)
    return mean, std


def model_inputs(
    table: FeatureTable, mean: np.ndarray, std: np.ndarray, clip_rows, condition_rows, crossed: int = 0, similarity: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(clip side, context side) inputs of clips under conditions.

    Clip side: the standardised clip vector, with a reference clip - reference, with `similarity`
    the cosine of the raw clip vector and the condition vector's first columns, and with `crossed`
    prompt attributes (the condition vector's last `crossed` columns) every clip feature times every
    attribute, so a linear term can say "under a bright prompt, a higher centroid is better".
    Context side: the condition vector, the standardised reference vector and a has-reference flag.
    """
    clip_rows, condition_rows = np.asarray(clip_rows, dtype=np.int64), np.asarray(condition_rows, dtype=np.int64)

    def norm(rows):
        values = (table.clips[rows] - mean) / std
        return np.clip(np.nan_to_num(values, nan=0.0, posinf=CLIP_LIMIT, neginf=-CLIP_LIMIT), -CLIP_LIMIT, CLIP_LIMIT)

    clip = norm(clip_rows)
    refs = table.reference[condition_rows]
    has = (refs >= 0)[:, None]
    ref = np.where(has, norm(np.maximum(refs, 0)), 0.0)
    parts = [clip, np.where(has, clip - ref, 0.0)]
    if similarity:
        raw = np.nan_to_num(table.clips[clip_rows])
        text = table.conditions[condition_rows][:, : raw.shape[1]]
        if text.shape[1] != raw.shape[1]:
            raise TrainingError(f"similarity needs a prompt embedding as wide as the clip vector ({raw.shape[1]}); the condition vector has {table.conditions.shape[1]} columns")
        norms = np.linalg.norm(raw, axis=1) * np.linalg.norm(text, axis=1)
        parts.append(np.where(norms > 0, (raw * text).sum(axis=1) / np.where(norms > 0, norms, 1.0), 0.0)[:, None])
    if crossed:
        if table.conditions.shape[1] < crossed:
            raise TrainingError(f"the condition vectors have {table.conditions.shape[1]} columns; the model crosses the last {crossed}")
        attributes = table.conditions[condition_rows][:, -crossed:]
        parts.append((clip[:, :, None] * attributes[:, None, :]).reshape(len(clip), -1))
    context = np.concatenate([table.conditions[condition_rows], ref, has.astype(np.float64)], axis=1)
    return np.concatenate(parts, axis=1), context


def _forward_numpy(w: dict[str, np.ndarray], clip: np.ndarray, context: np.ndarray) -> np.ndarray:
    """The network of `_network`, in float64 numpy: (n,) scores."""
    x = np.concatenate([clip, context], axis=1)
    hidden = np.tanh(x @ w["hidden.weight"].T + w["hidden.bias"])
    pair = ((clip @ w["clip.weight"].T) * (context @ w["context.weight"].T)).sum(axis=1)
    return (x @ w["linear.weight"].T + hidden @ w["out.weight"].T + w["out.bias"])[:, 0] + pair


@dataclass
class RewardModel:
    """Trained weights (numpy, one network per dimension), the standardiser, and what training saw."""

    weights: dict[str, np.ndarray]  # "<dimension>.<layer>.<weight|bias>"
    mean: np.ndarray
    std: np.ndarray
    config: TrainConfig
    seed: int
    history: list[dict] = field(default_factory=list)
    best_epoch: dict = field(default_factory=dict)  # dimension -> epoch kept
    capacity: dict = field(default_factory=dict)  # dimension -> weight decay and width chosen on validation, and what was tried

    def scores(self, table: FeatureTable, clip_rows, condition_rows) -> np.ndarray:
        """(n, 2) scores (alignment, musicality) of clips under conditions; higher is preferred."""
        clip, context = model_inputs(table, self.mean, self.std, clip_rows, condition_rows, crossed=self.config.crossed, similarity=self.config.similarity)
        out = []
        for dim in DIMENSIONS:
            w = {k.split(".", 1)[1]: v.astype(np.float64) for k, v in self.weights.items() if k.startswith(f"{dim}.")}
            out.append(_forward_numpy(w, clip, context))
        return np.stack(out, axis=1)

    def prob_a(self, table: FeatureTable, votes: Votes) -> np.ndarray:
        """(n, 2) P(clip A preferred) per dimension."""
        margin = self.scores(table, votes.clip_a, votes.condition) - self.scores(table, votes.clip_b, votes.condition)
        return 1.0 / (1.0 + np.exp(-margin))

    # --- the weight file -----------------------------------------------------------------
    def tensors(self) -> dict[str, np.ndarray]:
        return {**{k: np.ascontiguousarray(v, dtype=np.float32) for k, v in self.weights.items()}, "mean": self.mean.astype(np.float64), "std": self.std.astype(np.float64)}

    def file_bytes(self) -> bytes:
        from safetensors.numpy import save

        # One metadata entry: safetensors writes a metadata map in no fixed order, which would change the bytes.
        about = {"code_version": CODE_VERSION, "config": self.config.as_dict(), "seed": self.seed, "best_epoch": self.best_epoch, "capacity": self.capacity}
        return save(self.tensors(), metadata={"reward": json.dumps(about, sort_keys=True)})

    def digest(self) -> str:
        """sha256 of the weight file: the same data and seed give the same digest."""
        return hashlib.sha256(self.file_bytes()).hexdigest()

    def save(self, directory: Path | str) -> Path:
        path = Path(directory) / WEIGHTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.file_bytes())
        return path

    @classmethod
    def load(cls, directory: Path | str) -> RewardModel:
        from safetensors import safe_open

        path = Path(directory) / WEIGHTS_FILE
        with safe_open(str(path), framework="numpy") as handle:
            about = json.loads((handle.metadata() or {}).get("reward", "{}"))
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}
        if about.get("code_version") != CODE_VERSION:
            raise TrainingError(f"{path} was written by {about.get('code_version')!r}; this code reads {CODE_VERSION}")
        mean, std = tensors.pop("mean"), tensors.pop("std")
        return cls(
            weights=tensors, mean=mean, std=std, config=TrainConfig(**about["config"]), seed=int(about["seed"]), best_epoch=dict(about["best_epoch"]),
            capacity=dict(about.get("capacity") or {}),
        )  # fmt: skip


@contextlib.contextmanager
def deterministic_torch(seed: int, device: str = "cpu"):
    """Seeded, single-threaded, deterministic algorithms for the block; the previous settings come back after.

    On CUDA the deterministic switch only warns: cuBLAS needs CUBLAS_WORKSPACE_CONFIG set before
    the process first touches the GPU, which a worker cannot promise. Bitwise reproducibility is
    promised on the CPU; on a GPU the same seed gives the same model up to float rounding.
    """
    import torch

    threads = torch.get_num_threads()
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=not str(device).startswith("cpu"))
    torch.manual_seed(seed)
    try:
        yield torch
    finally:
        torch.use_deterministic_algorithms(was_deterministic, warn_only=was_warn_only)
        torch.set_num_threads(threads)


def _network(torch, clip_size: int, context_size: int, hidden: int, rank: int):
    """One dimension's score: linear + low-rank clip x context (how well a clip fits its condition) + a tanh layer.

    The output layers start at zero, so the untrained model says 0.5 for every pair (the
    validation loss starts at ln 2) instead of a random preference early stopping must undo.
    """

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            size = clip_size + context_size
            self.linear = torch.nn.Linear(size, 1, bias=False)
            self.clip = torch.nn.Linear(clip_size, rank, bias=False)
            self.context = torch.nn.Linear(context_size, rank, bias=False)
            self.hidden = torch.nn.Linear(size, hidden)
            self.out = torch.nn.Linear(hidden, 1)
            for layer in (self.linear, self.context, self.out):
                torch.nn.init.zeros_(layer.weight)
            torch.nn.init.zeros_(self.out.bias)

        def forward(self, clip, context):
            x = torch.cat([clip, context], dim=1)
            pair = (self.clip(clip) * self.context(context)).sum(dim=1)
            return (self.linear(x) + self.out(torch.tanh(self.hidden(x))))[:, 0] + pair

    return Net()


def _bt_loss(torch, margin, target, weight):
    """Weighted mean Bradley–Terry log-loss over the votes labelled on this dimension."""
    mask = ~torch.isnan(target)
    losses = torch.nn.functional.binary_cross_entropy_with_logits(margin[mask], target[mask], reduction="none")
    w = weight[mask]
    return (losses * w).sum() / w.sum().clamp(min=1e-12)


def _mos_loss(torch, score, target, scale, shift):
    """Mean squared error of tanh(scale * score + shift) against MOS on [-1, 1], over the rated clips."""
    mask = ~torch.isnan(target)
    return ((torch.tanh(scale * score[mask] + shift) - target[mask]) ** 2).mean()


def vote_weights(votes: Votes, config: TrainConfig) -> np.ndarray:
    """(n, 1) per-vote weight: 1, or with confidence_weight the vote's mean confidence over the mean (missing = mean)."""
    if not config.confidence_weight:
        return np.ones((len(votes), 1))
    per_vote = _quiet_nan(np.nanmean, votes.confidence, axis=1)
    overall = np.nanmean(per_vote) if np.isfinite(per_vote).any() else 1.0
    per_vote = np.where(np.isfinite(per_vote), per_vote, overall)
    return (per_vote / overall)[:, None]


def capacity_grid(config: TrainConfig) -> list[tuple[float, int]]:
    """The (weight decay, width) pairs tried: CAPACITY_GRID and the config's own pair, without repeats, in a fixed order."""
    return list(dict.fromkeys([*CAPACITY_GRID, (float(config.weight_decay), int(config.hidden))]))


def train(
    table: FeatureTable, train_votes: Votes, val_votes: Votes, *, config: TrainConfig, seed: int, progress=None, device: str = "cpu",
    init: RewardModel | None = None, smoothing: float = 0.0, mos: MOSTargets | None = None, mos_weight: float = 1.0,
    fine_tune_lr: float = 1.0, skip_unlabelled: bool = False,
) -> RewardModel:  # fmt: skip
    """Fit the network; with select_capacity, once per capacity_grid pair, keeping per dimension the
    pair whose best epoch has the lowest validation loss (ties to the earlier, more regularised pair).

    Every candidate trains with the same seed, so the choice is as reproducible as one training.
    `progress(step, steps, train_loss, val_loss)` after each epoch.

    Two-stage training (CMI-RM's recipe): stage 1 is a call on pseudo-labels with `smoothing` (a
    target y is trained as y (1 - s) + s / 2, so a wrong pseudo-label costs less); stage 2 passes
    the stage-1 model as `init`: its weights, standardiser and per-dimension capacity are the start,
    and no capacity is chosen again. `mos` adds a scaled-tanh regression of the same clip score on
    mean opinion scores (tanh(a s + b) against the MOS on [-1, 1], a and b learned per dimension),
    weighted by `mos_weight`, to the Bradley–Terry loss. Early stopping reads the validation votes' Bradley–Terry loss only.
    `fine_tune_lr` scales the learning rate of the dimensions `init` trained; `skip_unlabelled` leaves a
    dimension without training labels untrained (its output says 0.5; best_epoch 0) instead of refusing:
    a judge that covers one dimension pre-trains that one only.
    """
    if not 0.0 <= smoothing < 1.0:
        raise TrainingError(f"label smoothing must be at least 0 and below 1; got {smoothing}")
    extra = {"init": init, "smoothing": smoothing, "mos": mos, "mos_weight": mos_weight, "fine_tune_lr": fine_tune_lr, "skip_unlabelled": skip_unlabelled}
    if not config.select_capacity or init is not None:
        return _train_fixed(table, train_votes, val_votes, config=config, seed=seed, progress=progress, device=device, **extra)
    grid = capacity_grid(config)
    fitted = []
    for k, (decay, width) in enumerate(grid):

        def step(done, steps, *losses, k=k):
            if progress is not None:
                progress(k * steps + done, len(grid) * steps, *losses)

        candidate = dataclasses.replace(config, weight_decay=decay, hidden=width, select_capacity=False)
        fitted.append(_train_fixed(table, train_votes, val_votes, config=candidate, seed=seed, progress=step, device=device, **extra))
    weights, history, best_epoch, capacity = {}, [], {}, {}
    for dim in DIMENSIONS:
        # A dimension left untrained (skip_unlabelled) has no history: every candidate ties, the first is kept.
        losses = [min((h["val_loss"] for h in m.history if h["dimension"] == dim), default=math.inf) for m in fitted]
        k = int(np.argmin(losses))
        chosen = fitted[k]
        weights.update({key: v for key, v in chosen.weights.items() if key.startswith(f"{dim}.")})
        history += [h for h in chosen.history if h["dimension"] == dim]
        best_epoch[dim] = chosen.best_epoch[dim]
        capacity[dim] = {
            "weight_decay": grid[k][0],
            "hidden": grid[k][1],
            "val_loss": losses[k],
            "tried": [{"weight_decay": d, "hidden": w, "val_loss": loss} for (d, w), loss in zip(grid, losses)],
        }
    first = fitted[0]
    return RewardModel(weights=weights, mean=first.mean, std=first.std, config=config, seed=seed, history=history, best_epoch=best_epoch, capacity=capacity)


def _train_fixed(
    table: FeatureTable, train_votes: Votes, val_votes: Votes, *, config: TrainConfig, seed: int, progress=None, device: str = "cpu",
    init: RewardModel | None = None, smoothing: float = 0.0, mos: MOSTargets | None = None, mos_weight: float = 1.0,
    fine_tune_lr: float = 1.0, skip_unlabelled: bool = False,
) -> RewardModel:  # fmt: skip
    """Fit one network per dimension on train_votes; keep, per dimension, the epoch with the lowest validation loss.

    `progress(step, steps, train_loss, val_loss)` after each epoch (steps: epochs x dimensions).
    `init`, `smoothing`, `mos`: see `train`.
    """
    if len(train_votes) < 2:
        raise TrainingError(f"{len(train_votes)} training vote(s): at least 2 are needed")
    if len(val_votes) < 1:
        raise TrainingError("no validation votes: early stopping needs some (more conditions, or a smaller validation share)")
    if init is not None:
        # The stage-1 network reads inputs standardised its way; fine-tuning keeps that.
        mean, std = init.mean, init.std
    else:
        train_rows = np.concatenate([train_votes.clip_a, train_votes.clip_b, table.reference[train_votes.condition]])
        if mos is not None and len(mos):
            train_rows = np.concatenate([train_rows, mos.clip])
        mean, std = _standardiser(table.clips, train_rows[train_rows >= 0])
    weights, history, best_epochs = {}, [], {}
    with deterministic_torch(seed, device) as torch:

        def tensors(votes: Votes):
            parts = [model_inputs(table, mean, std, rows, votes.condition, crossed=config.crossed, similarity=config.similarity) for rows in (votes.clip_a, votes.clip_b)]
            return [torch.as_tensor(x, dtype=torch.float32, device=device) for side in parts for x in side]

        train_x, val_x = tensors(train_votes), tensors(val_votes)
        if mos is not None and len(mos):
            mos_x = [torch.as_tensor(x, dtype=torch.float32, device=device) for x in model_inputs(table, mean, std, mos.clip, mos.condition, crossed=config.crossed, similarity=config.similarity)]
        train_w = torch.as_tensor(vote_weights(train_votes, config)[:, 0], dtype=torch.float32, device=device)
        val_w = torch.as_tensor(vote_weights(val_votes, config)[:, 0], dtype=torch.float32, device=device)
        for d, dim in enumerate(DIMENSIONS):
            target = torch.as_tensor(train_votes.target[:, d], dtype=torch.float32, device=device)
            val_target = torch.as_tensor(val_votes.target[:, d], dtype=torch.float32, device=device)
            unlabelled = not bool((~torch.isnan(target)).any())
            if (unlabelled and not skip_unlabelled) or not bool((~torch.isnan(val_target)).any()):
                raise TrainingError(f"no {dim} labels on the training or the validation side")
            torch.manual_seed(seed * 10 + d)
            hidden, decay = config.hidden, config.weight_decay
            if init is not None:
                hidden = int(init.weights[f"{dim}.hidden.weight"].shape[0])
                decay = float((init.capacity.get(dim) or {}).get("weight_decay", init.config.weight_decay))
            net = _network(torch, train_x[0].shape[1], train_x[1].shape[1], hidden, config.rank).to(device)
            if init is not None:
                state = {k: torch.as_tensor(init.weights[f"{dim}.{k}"], dtype=torch.float32) for k in net.state_dict()}
                net.load_state_dict(state)
            # The scaled tanh's slope and offset: the score's units are the pairs' logits, not the rating scale.
            scale = torch.nn.Parameter(torch.ones((), device=device))
            shift = torch.nn.Parameter(torch.zeros((), device=device))
            parameters = list(net.parameters()) + ([scale, shift] if mos is not None and len(mos) else [])
            lr = config.lr * (fine_tune_lr if init is not None and init.best_epoch.get(dim, 1) else 1.0)
            optimiser = torch.optim.Adam(parameters, lr=lr, weight_decay=decay)
            if unlabelled:
                weights.update({f"{dim}.{k}": v.detach().cpu().numpy().astype(np.float32) for k, v in net.state_dict().items()})
                best_epochs[dim] = 0
                continue
            target = target * (1.0 - smoothing) + smoothing / 2.0 if smoothing else target
            mos_target = None
            if mos is not None and len(mos):
                mos_target = torch.as_tensor(mos.value[:, d], dtype=torch.float32, device=device)
                if not bool((~torch.isnan(mos_target)).any()):
                    mos_target = None
            order = torch.Generator().manual_seed(seed * 10 + d)
            best_loss, best_state, waited = math.inf, None, 0
            best_epochs[dim] = 0

            def margin(x, index=None):
                ca, xa, cb, xb = x if index is None else [t[index] for t in x]
                return net(ca, xa) - net(cb, xb)

            if init is not None:
                # The stage-1 model is epoch 0: fine-tuning is kept only where it improves the validation loss.
                net.eval()
                with torch.no_grad():
                    best_loss = float(_bt_loss(torch, margin(val_x), val_target, val_w))
                best_state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}

            for epoch in range(1, config.epochs + 1):
                net.train()
                total, count = 0.0, 0
                for batch in torch.randperm(len(train_votes), generator=order).split(config.batch_size):
                    batch = batch.to(device)
                    loss = _bt_loss(torch, margin(train_x, batch), target[batch], train_w[batch])
                    if mos_target is not None:
                        loss = loss + mos_weight * _mos_loss(torch, net(*mos_x), mos_target, scale, shift)
                    optimiser.zero_grad(set_to_none=True)
                    loss.backward()
                    optimiser.step()
                    total += float(loss.detach()) * len(batch)
                    count += len(batch)
                net.eval()
                with torch.no_grad():
                    val_loss = float(_bt_loss(torch, margin(val_x), val_target, val_w))
                history.append({"dimension": dim, "epoch": epoch, "train_loss": total / count, "val_loss": val_loss})
                if val_loss < best_loss - 1e-7:
                    best_loss, best_epochs[dim], waited = val_loss, epoch, 0
                    best_state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
                else:
                    waited += 1
                if progress is not None:
                    progress(d * config.epochs + epoch, len(DIMENSIONS) * config.epochs, total / count, val_loss)
                if waited >= config.patience:
                    break
            if best_state is None:  # fine-tuning that never beat its start keeps the start
                best_state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
            weights.update({f"{dim}.{k}": v.numpy().astype(np.float32) for k, v in best_state.items()})
    capacity = dict(init.capacity) if init is not None else {}
    return RewardModel(weights=weights, mean=mean, std=std, config=config, seed=seed, history=history, best_epoch=best_epochs, capacity=capacity)
