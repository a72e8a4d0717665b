"""The adapter contract every judge follows, plus audio decoding and the per-process model cache.

Nothing here imports torch or transformers at module level: web code lists judges and their
availability through this package, and only worker processes ever load a model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# The vocabulary (dimensions, pair labels in the pair's stored order) and the tie rule are
# scoring.evaluation's; adapters import them from here, next to the rest of the contract.
from ..evaluation import ALIGNMENT as ALIGNMENT
from ..evaluation import BOTH as BOTH
from ..evaluation import DIMENSIONS as DIMENSIONS
from ..evaluation import MODEL_A as MODEL_A
from ..evaluation import MODEL_B as MODEL_B
from ..evaluation import MUSICALITY as MUSICALITY
from ..evaluation import NEITHER as NEITHER
from ..evaluation import prefer as prefer
from .runtime import model_dir


class JudgeUnavailable(Exception):
    """The judge cannot run here (weights or package missing); the message says what to install or set."""


class JudgeOutputError(Exception):
    """The model answered, but not in the required form; `raw` keeps what it said."""

    def __init__(self, message: str, *, raw: str = ""):
        super().__init__(message)
        self.raw = raw


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""
    weights_path: str = ""


@dataclass(frozen=True)
class JudgeConfig:
    """The parts of a Judge row an adapter needs; plain data so workers and tests need no ORM object."""

    key: str
    kind: str
    version: str = "1"
    weights: str = ""
    options: dict = field(default_factory=dict)


@dataclass
class ClipAudio:
    """A clip to be judged: where its file is and its content hash (the cache key)."""

    path: str
    sha256: str
    clip_id: int | None = None


@dataclass
class ConditionInput:
    prompt: str = ""
    lyrics: str = ""
    reference: ClipAudio | None = None

    def content_key(self, *extra: str) -> str:
        raw = "\x1f".join((self.prompt.strip(), self.lyrics.strip(), self.reference.sha256 if self.reference else "", *extra))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass
class PairOutcome:
    """A judge's answer for one pair, in the pair's stored order (A = clip_a)."""

    status: str = "ok"  # ok | discarded | failed
    labels: dict = field(default_factory=dict)  # dimension -> model_a | model_b | both | neither
    scores: dict = field(default_factory=dict)  # dimension -> (score_a, score_b)
    rationale: str = ""
    details: dict = field(default_factory=dict)


def pair_outcome(adapter, scores_a: dict, scores_b: dict) -> PairOutcome:
    """A per-clip judge's two clip scores -> the pair's labels by the judge's `pair_label` (the tie-goes-to-B
    rule unless it has its own), for the dimensions it covers. The one rule for in-platform runs and the offline command."""
    labels, scores = {}, {}
    rule = getattr(adapter, "pair_label", None) or (lambda _dim, a, b: prefer(a, b))
    for dim in adapter.dimensions:
        a, b = scores_a.get(dim), scores_b.get(dim)
        scores[dim] = (a, b)
        label = rule(dim, a, b)
        if label is not None:
            labels[dim] = label
    details = {"clip_a": {k: v for k, v in scores_a.items() if k not in (ALIGNMENT, MUSICALITY)}, "clip_b": {k: v for k, v in scores_b.items() if k not in (ALIGNMENT, MUSICALITY)}}
    if adapter.kind == "signal":
        details["technical"] = True
    # A judge that does not apply to the condition (no lyrics for the lyrics judge) gives no preference
    # without failing: the verdict says why, and counts as done.
    not_applicable = scores_a.get("not_applicable") and scores_b.get("not_applicable")
    if not_applicable and not labels:
        details["not_applicable"] = scores_a["not_applicable"]
        return PairOutcome(status="ok", scores=scores, details=details)
    return PairOutcome(status="ok" if labels else "failed", labels=labels, scores=scores, details=details)


class AudioDecodeError(ValueError):
    """A clip's file is missing or cannot be decoded: retrying will not help."""


def read_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """(frames x channels float32, sample rate), or AudioDecodeError naming the file."""
    import soundfile as sf

    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, OSError, ValueError) as exc:  # LibsndfileError is a RuntimeError
        raise AudioDecodeError(f"cannot decode {Path(path).name}: {exc}") from None
    if len(data) == 0:
        raise AudioDecodeError(f"{Path(path).name} has no samples")
    return data, sr


def downmix(data: np.ndarray) -> np.ndarray:
    """(frames, channels) -> (frames,) float32 mean, summed channel by channel as numpy's mean does
    for a few channels, without its slow reduction along a short axis."""
    mono = np.array(data[:, 0], dtype=np.float32)
    for channel in range(1, data.shape[1]):
        mono += data[:, channel]
    if data.shape[1] > 1:
        mono /= np.float32(data.shape[1])
    return mono


def _read_mono(path: str | Path) -> tuple[np.ndarray, int]:
    """read_audio + downmix; 16-bit files are decoded as integers, a sixth faster (libsndfile's float
    conversion of them is x / 32768, exact in float32, so the int32 channel sum divided once is the same mean)."""
    import soundfile as sf

    try:
        subtype = sf.info(str(path)).subtype
    except (RuntimeError, OSError, ValueError):
        subtype = ""  # read_audio names the problem
    if subtype != "PCM_16":
        data, sr = read_audio(path)
        return downmix(data), sr
    try:
        data, sr = sf.read(str(path), dtype="int16", always_2d=True)
    except (RuntimeError, OSError, ValueError) as exc:
        raise AudioDecodeError(f"cannot decode {Path(path).name}: {exc}") from None
    if len(data) == 0:
        raise AudioDecodeError(f"{Path(path).name} has no samples")
    total = data[:, 0].astype(np.int32)
    for channel in range(1, data.shape[1]):
        total += data[:, channel]
    # One correctly rounded division of the exact sum, as mean(x / 32768) does after its exact sum.
    return total.astype(np.float32) / np.float32(32768 * data.shape[1]), sr


def load_audio(path: str | Path, *, sample_rate: int, mono: bool = True) -> np.ndarray:
    """Decode with soundfile and resample with scipy's polyphase filter (computed by resample.py with
    torch when it is installed, to float32 rounding the same): float32, shape (frames,) when mono."""
    if mono:
        data, sr = _read_mono(path)
    else:
        data, sr = read_audio(path)
    if sr != sample_rate:
        if mono and importlib.util.find_spec("torch") is not None:
            from .resample import resample

            data = resample(data, sr, sample_rate)
        else:
            from scipy.signal import resample_poly

            g = np.gcd(int(sr), int(sample_rate))
            data = resample_poly(data, sample_rate // g, sr // g, axis=0).astype(np.float32)
    return np.ascontiguousarray(data, dtype=np.float32)


def chunks(wave: np.ndarray, *, size: int) -> list[np.ndarray]:
    """Consecutive windows of at most `size` samples.

    A tail shorter than a tenth of a window is dropped (when there is a full window before it):
    a few hundred milliseconds of fade-out would otherwise weigh as much as ten seconds of music.
    """
    if len(wave) <= size:
        return [wave]
    parts = [wave[i : i + size] for i in range(0, len(wave), size)]
    if len(parts[-1]) < size // 10:
        parts.pop()
    return parts


def package_missing(*names: str) -> str:
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return ", ".join(missing)


def models_relative(text: str) -> str:
    """Text shown to researchers (pages, API) with server paths cut down: the models folder's own path becomes
    `AUDITORIUM_MODEL_DIR`, the home folder `~`; the folder layout below them stays, as it says what is missing."""
    root = model_dir()
    prefixes = sorted({str(root.resolve()), str(root.expanduser()), str(root)}, key=len, reverse=True)
    for prefix in prefixes:
        if prefix not in ("", ".", "/"):
            text = text.replace(prefix, "AUDITORIUM_MODEL_DIR")
    home = str(Path.home())
    if home not in ("", "/"):
        text = text.replace(home, "~")
    return text


def resolve_weights(weights: str, *, root: str | Path | None = None) -> tuple[str, str]:
    """(what to pass to from_pretrained, reason it cannot be used or "").

    A relative path is looked up under the models folder (`root`, else runtime.model_dir(): the
    platform's AUDITORIUM_MODEL_DIR). A hub id is accepted only when it is already in the local
    Hugging Face cache, because workers never download.
    """
    weights = (weights or "").strip()
    if not weights:
        return "", "no weights configured (set Judge.weights to a local directory or a cached hub id)"
    path = Path(weights).expanduser()
    if not path.is_absolute():
        local = model_dir(root) / weights
        if local.exists():
            path = local
        elif weights.count("/") == 1 and not weights.startswith("."):
            return _hub_cached(weights)
        else:
            return "", f"weights not found: {local}"
    if not path.exists():
        return "", f"weights not found: {path}"
    return str(path), ""


def _hub_cached(repo_id: str) -> tuple[str, str]:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return "", f"{repo_id} is not a local path and huggingface_hub is not installed"
    found = try_to_load_from_cache(repo_id, "config.json")
    if isinstance(found, str):
        return str(Path(found).parent), ""
    return "", f"{repo_id} is not in the local Hugging Face cache and downloads are disabled; put the weights under AUDITORIUM_MODEL_DIR"


def jsonable(value):
    """`value` as it reads back from a JSON field (numpy scalars as numbers, anything else unknown as text)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def store_fill(store, items: list, context: str, compute, *, encode=jsonable, decode=None) -> dict:
    """Per content hash (`item.sha256`): what the clip cache `store` holds under `context`, and `compute(missing)`
    for the rest, each hash once and all in one batch, stored back. Without a store, everything is computed.

    `encode` turns a computed value into what is stored (and, with no `decode`, what is returned);
    `decode` reads a stored value back, None where it holds nothing usable.
    """
    found: dict = {}
    if store is not None:
        for sha, stored in store.get_many([item.sha256 for item in items], context).items():
            value = stored if decode is None else decode(stored)
            if value is not None:
                found[sha] = value
    missing, seen = [], set(found)
    for item in items:
        if item.sha256 not in seen:
            missing.append(item)
            seen.add(item.sha256)
    if missing:
        computed = dict(zip((item.sha256 for item in missing), compute(missing)))
        stored = {sha: encode(value) for sha, value in computed.items()}
        if store is not None:
            store.put_many(stored, context)
        found.update(computed if decode is not None else stored)
    return found


class JudgeAdapter:
    """One kind of judge. Subclasses set the class attributes and implement the hooks they support.

    A per-clip judge implements `score_clips` (one score dict per clip, keys "alignment" and/or
    "musicality"); a pairwise judge implements `compare`. `context_key` says what a clip score
    depends on besides the audio, so the ClipScore cache can be shared across pairs and runs.
    """

    kind: str = ""
    title: str = ""
    measures: str = ""
    dimensions: tuple[str, ...] = ()
    modalities: tuple[str, ...] = ("text",)
    pairwise: bool = False
    needs_weights: bool = True
    packages: tuple[str, ...] = ()
    # Bumped when the adapter's computation changes, so stale cache entries are not reused.
    code_version: str = "1"
    # The precision the judge runs in on CUDA when its options say none (option `dtype`; the CPU
    # always runs fp32). "float32" for judges whose bf16 scores fail the precision bound
    # (tests/scoring/test_cmi_judges.py, docs/judges.md "Precision on GPUs").
    cuda_dtype: str = "bfloat16"

    def __init__(self, config: JudgeConfig, *, template: str = "", store=None, model_dir: str | Path | None = None):
        self.config = config
        # Where relative weights (and the models a checkpoint names) are looked up; None: runtime.model_dir().
        self.model_dir = model_dir
        self.options = dict(config.options or {})
        self.template = template or ""
        # Optional ClipStore (get_many / put_many by content hash and context) for intermediate
        # results such as audio embeddings, so a clip is encoded once per judge version.
        self.store = store

    # --- availability ---------------------------------------------------------------
    def availability(self) -> Availability:
        missing = package_missing(*self.packages)
        if missing:
            return Availability(False, f"python package not installed: {missing}")
        if not self.needs_weights:
            return Availability(True)
        path, reason = resolve_weights(self.config.weights, root=self.model_dir)
        if reason:
            return Availability(False, reason)
        return Availability(True, weights_path=path)

    def require(self) -> str:
        state = self.availability()
        if not state.available:
            raise JudgeUnavailable(f"judge {self.config.key} is unavailable: {state.reason}")
        return state.weights_path

    # --- cache keys -----------------------------------------------------------------
    def cache_version(self) -> str:
        return f"{self.config.version}.{self.code_version}"

    def context_key(self, condition: ConditionInput) -> str:
        return ""

    # --- work -----------------------------------------------------------------------
    def score_clips(self, clips: list[ClipAudio], condition: ConditionInput) -> list[dict]:
        raise NotImplementedError

    def compare(self, clip_a: ClipAudio, clip_b: ClipAudio, condition: ConditionInput) -> PairOutcome:
        raise NotImplementedError

    def pair_label(self, dimension: str, score_a, score_b) -> str | None:
        """A per-clip judge's label for two clip scores: the tie-goes-to-B rule unless the judge has its own."""
        return prefer(score_a, score_b)

    def compare_many(self, pairs: list[tuple[ClipAudio, ClipAudio, ConditionInput]]) -> list[PairOutcome]:
        """One outcome per (clip_a, clip_b, condition); judges that can batch pairs override this."""
        return [self.compare(a, b, condition) for a, b, condition in pairs]

    def warm(self) -> None:
        """Load what the judge needs into this process (GPU workers call it at start-up)."""
        self.require()

