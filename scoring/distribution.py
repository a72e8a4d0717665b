"""How far each system's clips lie from a reference set, as distributions of embeddings: FAD and KAD.

FAD (Fréchet audio distance) is the Fréchet distance between Gaussians fitted to the two sets of
clip embeddings (means and covariances with ddof 1, as fadtk and frechet-audio-distance compute
them). KAD (kernel audio distance) is the unbiased MMD² with a Gaussian RBF kernel, scaled by 100
as kadtk reports it. tests/scoring/test_distribution.py checks both against those libraries on the
same embeddings.

FAD is biased upward by about c/n at n clips (both sample covariances carry noise the trace term
turns into distance); its value is therefore reported with n, with FAD∞ (the intercept of FAD
against 1/n over subsets of the clips, as fadtk's FAD-inf, but drawing subsets without replacement
so the largest point is not itself inflated), and with a basic bootstrap interval that resamples
the clips of both sets: 2·FAD − the bootstrap quantiles, which carries the bootstrap's own estimate
of the bias (mean of the resamples − FAD) into the interval. KAD is unbiased; its resamples leave
out pairs of a clip with its own copy, so they stay unbiased too.

With no more clips than embedding dimensions (CLAP's 512 against a few hundred clips) that breaks
down: the covariances are singular, the bias is far from c/n, and on two known Gaussians neither
FAD∞ nor the interval came near the true distance (docs/scoring.md). Such rows carry `few_clips`;
FAD then ranks systems scored on equal clip counts only, and KAD, unbiased at any size, is the
figure to read.

The bandwidth defaults to the median pairwise distance within the reference set (kadtk's CLI takes
the evaluated set's): one kernel for every system scored against that reference, so their KADs
are on one scale.

One embedding per clip, from an embedding judge's cache (ClipScore, context "", key "embedding":
the CLAP and MuQ-MuLan judges store them when they score) or computed by that judge's adapter.
"""

from __future__ import annotations

import numpy as np

from .resampled import _one_blas_thread
from .stats import cluster_draws

LEVEL = 0.95
ROUNDS = 200
# Subset sizes for FAD∞: fractions of each set, several draws at each.
INF_FRACTIONS = np.linspace(0.5, 1.0, 6)
INF_DRAWS = 4
# Fewer clips than this on either side: no figures (a covariance of two points is no distribution).
MIN_CLIPS = 3
# kadtk's SCALE_FACTOR.
KAD_SCALE = 100.0


# --- Point estimates ---------------------------------------------------------------------


def _as_matrix(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a (clips, dimensions) array, not shape {x.shape}")
    return x


def _trace_sqrt(a1: np.ndarray, a2: np.ndarray) -> float:
    """tr sqrt(C1^½ C2 C1^½) for C1 = a1ᵀa1, C2 = a2ᵀa2: the nuclear norm of a1 a2ᵀ, through the smaller side.

    With fewer clips than dimensions the clips' side is smaller and exact for a singular covariance,
    where a square root of the d × d product (fadtk's route) has to add a ridge.
    """
    n1, d = a1.shape
    n2 = a2.shape[0]
    if min(n1, n2) <= d:
        return float(np.linalg.svd(a1 @ a2.T, compute_uv=False).sum())
    c1, c2 = a1.T @ a1, a2.T @ a2
    w, v = np.linalg.eigh(c1)
    root = (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T
    return float(np.sqrt(np.clip(np.linalg.eigvalsh(root @ c2 @ root), 0.0, None)).sum())


def frechet_distance(x, y) -> float:
    """FAD between embedding sets x (n1, d) and y (n2, d)."""
    x, y = _as_matrix(x), _as_matrix(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"the two sets have different embedding sizes ({x.shape[1]} and {y.shape[1]}): they come from different models")
    n1, n2 = len(x), len(y)
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    diff = x.mean(axis=0) - y.mean(axis=0)
    cross = _trace_sqrt(xc / np.sqrt(n1 - 1), yc / np.sqrt(n2 - 1))
    return float(diff @ diff + (xc**2).sum() / (n1 - 1) + (yc**2).sum() / (n2 - 1) - 2 * cross)


def median_distance(x) -> float:
    """Median Euclidean distance over all pairs of x, the lower middle value for an even count (torch.median's, as kadtk uses)."""
    from scipy.spatial.distance import pdist

    d = pdist(_as_matrix(x))
    return float(np.partition(d, (len(d) - 1) // 2)[(len(d) - 1) // 2])


def _sq_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist

    return cdist(x, y, "sqeuclidean")


def _kernels(x: np.ndarray, y: np.ndarray, bandwidth: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gamma = 1.0 / (2.0 * bandwidth**2 + 1e-8)  # kadtk's eps
    kxx, kyy, kxy = (np.exp(-gamma * _sq_distances(a, b)) for a, b in ((x, x), (y, y), (x, y)))
    np.fill_diagonal(kxx, 0.0)
    np.fill_diagonal(kyy, 0.0)
    return kxx, kyy, kxy


def kernel_distance(x, y, *, bandwidth: float | None = None) -> float:
    """KAD between x (the reference, n1, d) and y (n2, d): unbiased MMD² with a Gaussian kernel, × 100.

    `bandwidth` None: the median pairwise distance within x.
    """
    x, y = _as_matrix(x), _as_matrix(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"the two sets have different embedding sizes ({x.shape[1]} and {y.shape[1]}): they come from different models")
    h = median_distance(x) if bandwidth is None else float(bandwidth)
    kxx, kyy, kxy = _kernels(x, y, h)
    n1, n2 = len(x), len(y)
    return float(KAD_SCALE * (kxx.sum() / (n1 * (n1 - 1)) + kyy.sum() / (n2 * (n2 - 1)) - 2 * kxy.mean()))


# --- Resamples ---------------------------------------------------------------------------


def _counts(n: int, *, rounds: int, seed: int) -> np.ndarray:
    return np.concatenate([c for _, c in cluster_draws(n, rounds=rounds, seed=seed)]).astype(np.float64)


def _weighted_fad(x: np.ndarray, y: np.ndarray, wx: np.ndarray, wy: np.ndarray) -> float:
    """FAD of the sets with clip i counted wx[i] (wy[j]) times: one bootstrap resample without copying rows."""
    return float(_weighted_fads(x, y, wx[None], wy[None])[0])


def _weighted_fads(x: np.ndarray, y: np.ndarray, wx: np.ndarray, wy: np.ndarray) -> np.ndarray:
    """_weighted_fad for a stack of weights (rounds, n1) and (rounds, n2), batched through numpy's stacked linear algebra."""
    n1, n2 = wx.sum(axis=1), wy.sum(axis=1)
    mx, my = wx @ x / n1[:, None], wy @ y / n2[:, None]
    diff = ((mx - my) ** 2).sum(axis=1)
    trace_x = (wx @ (x**2).sum(axis=1) - n1 * (mx**2).sum(axis=1)) / (n1 - 1)
    trace_y = (wy @ (y**2).sum(axis=1) - n2 * (my**2).sum(axis=1)) / (n2 - 1)
    d = x.shape[1]
    if min(len(x), len(y)) <= d:
        # (√wx ∘ (x - mx)) (√wy ∘ (y - my))ᵀ from the one product x yᵀ.
        gram = x @ y.T
        m = gram[None] - (x @ my.T).T[:, :, None] - (y @ mx.T).T[:, None, :] + (mx * my).sum(axis=1)[:, None, None]
        m *= np.sqrt(wx / (n1 - 1)[:, None])[:, :, None] * np.sqrt(wy / (n2 - 1)[:, None])[:, None, :]
        # Squared singular values as the eigenvalues of the smaller Gram matrix: faster than an SVD, and
        # their error (machine epsilon times the largest) is far below the resampling spread.
        gram_m = m @ np.swapaxes(m, 1, 2) if m.shape[1] <= m.shape[2] else np.swapaxes(m, 1, 2) @ m
        cross = np.sqrt(np.clip(np.linalg.eigvalsh(gram_m), 0.0, None)).sum(axis=1)
    else:
        cx = (np.einsum("ri,id,ie->rde", wx, x, x) - n1[:, None, None] * mx[:, :, None] * mx[:, None, :]) / (n1 - 1)[:, None, None]
        cy = (np.einsum("ri,id,ie->rde", wy, y, y) - n2[:, None, None] * my[:, :, None] * my[:, None, :]) / (n2 - 1)[:, None, None]
        w, v = np.linalg.eigh(cx)
        root = (v * np.sqrt(np.clip(w, 0.0, None))[:, None, :]) @ np.swapaxes(v, 1, 2)
        cross = np.sqrt(np.clip(np.linalg.eigvalsh(root @ cy @ root), 0.0, None)).sum(axis=1)
    return diff + trace_x + trace_y - 2 * cross


def fad_resamples(x, y, *, rounds: int, seed: int, chunk: int = 25) -> np.ndarray:
    """FAD of `rounds` bootstrap resamples, each drawing the clips of both sets with replacement."""
    x, y = _as_matrix(x), _as_matrix(y)
    wx, wy = _counts(len(x), rounds=rounds, seed=seed), _counts(len(y), rounds=rounds, seed=seed + 1)
    if not rounds:
        return np.zeros(0)
    # Small stacked products: a second BLAS thread on a busy machine only waits (scoring/resampled.py measured it).
    with _one_blas_thread():
        return np.concatenate([_weighted_fads(x, y, wx[k : k + chunk], wy[k : k + chunk]) for k in range(0, rounds, chunk)])


def kad_resamples(x, y, *, bandwidth: float, rounds: int, seed: int) -> np.ndarray:
    """KAD of bootstrap resamples; a clip drawn twice is not paired with its own copy, so each resample stays a U-statistic."""
    x, y = _as_matrix(x), _as_matrix(y)
    kxx, kyy, kxy = _kernels(x, y, bandwidth)
    wx, wy = _counts(len(x), rounds=rounds, seed=seed), _counts(len(y), rounds=rounds, seed=seed + 1)
    n1, n2 = wx.sum(axis=1), wy.sum(axis=1)
    with _one_blas_thread():
        within_x = ((wx @ kxx) * wx).sum(axis=1) / (n1**2 - (wx**2).sum(axis=1))
        within_y = ((wy @ kyy) * wy).sum(axis=1) / (n2**2 - (wy**2).sum(axis=1))
        between = ((wx @ kxy) * wy).sum(axis=1) / (n1 * n2)
    return KAD_SCALE * (within_x + within_y - 2 * between)


def basic_interval(point: float, samples: np.ndarray, *, level: float = LEVEL) -> tuple[float, float]:
    """The basic (reverse-percentile) bootstrap interval: 2·point − the upper and lower quantiles."""
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(2 * point - high), float(2 * point - low)


def percentile_interval(samples: np.ndarray, *, level: float = LEVEL) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def fad_infinity(x, y, *, seed: int, fractions=INF_FRACTIONS, draws: int = INF_DRAWS) -> dict:
    """FAD∞: FAD of subsets (the same fraction of each set, drawn without replacement) regressed on 1 / clips; the intercept.

    `points` are (system clips, reference clips, mean FAD) per fraction; `slope` is the fitted bias at one clip.
    """
    x, y = _as_matrix(x), _as_matrix(y)
    rng = np.random.default_rng(seed)
    points, inv, values = [], [], []
    with _one_blas_thread():
        for f in fractions:
            m1, m2 = max(MIN_CLIPS, int(round(f * len(x)))), max(MIN_CLIPS, int(round(f * len(y))))
            runs = 1 if (m1, m2) == (len(x), len(y)) else draws
            scores = [frechet_distance(x[rng.choice(len(x), m1, replace=False)], y[rng.choice(len(y), m2, replace=False)]) for _ in range(runs)]
            points.append((m1, m2, float(np.mean(scores))))
            inv.extend([1.0 / min(m1, m2)] * runs)
            values.extend(scores)
    inv_a, val_a = np.asarray(inv), np.asarray(values)
    if np.ptp(inv_a) == 0:
        return {"value": None, "slope": None, "r2": None, "points": points}
    slope, intercept = np.polyfit(inv_a, val_a, 1)
    fitted = slope * inv_a + intercept
    total = ((val_a - val_a.mean()) ** 2).sum()
    r2 = 1 - ((val_a - fitted) ** 2).sum() / total if total > 0 else None
    return {"value": float(intercept), "slope": float(slope), "r2": None if r2 is None else float(r2), "points": points}


def distances(system, reference, *, rounds: int = ROUNDS, seed: int = 0, level: float = LEVEL, bandwidth: float | None = None) -> dict:
    """FAD (with FAD∞ and the bootstrap's bias) and KAD of one system's embeddings against the reference's, with intervals."""
    x, y = _as_matrix(reference), _as_matrix(system)
    out = {"clips": len(y), "reference_clips": len(x), "dimensions": int(x.shape[1]) if x.size else None}
    if len(x) < MIN_CLIPS or len(y) < MIN_CLIPS:
        out["note"] = f"fewer than {MIN_CLIPS} clips with embeddings on one side: no figures"
        return out
    fad = frechet_distance(y, x)
    h = median_distance(x) if bandwidth is None else float(bandwidth)
    kad = kernel_distance(x, y, bandwidth=h)
    inf = fad_infinity(y, x, seed=seed)
    # Measured (docs/scoring.md): with no more clips than dimensions the sample covariances are singular, FAD's bias
    # is no longer about c/n, and neither FAD∞ nor the interval reaches the population's FAD; KAD is unaffected.
    out["few_clips"] = min(len(x), len(y)) <= x.shape[1]
    out.update({"fad": fad, "fad_inf": inf["value"], "fad_inf_slope": inf["slope"], "fad_inf_r2": inf["r2"], "kad": kad, "bandwidth": h, "rounds": rounds, "seed": seed, "level": level})
    if rounds > 0:
        fad_boot = fad_resamples(y, x, rounds=rounds, seed=seed)
        kad_boot = kad_resamples(x, y, bandwidth=h, rounds=rounds, seed=seed + 2)
        out["fad_bias"] = float(fad_boot.mean() - fad)
        # Both distances are zero or more: an interval reaching below zero is cut there (its coverage is unchanged).
        lower, upper = basic_interval(fad, fad_boot, level=level)
        out["fad_lower"], out["fad_upper"] = max(lower, 0.0), max(upper, 0.0)
        lower, upper = percentile_interval(kad_boot, level=level)
        out["kad_lower"], out["kad_upper"] = max(lower, 0.0), max(upper, 0.0)
    return out


# --- Embeddings of a study's clips ---------------------------------------------------------

# Judges whose adapters keep one audio embedding per clip in the clip cache (context "", key "embedding").
EMBEDDING_KINDS = ("clap", "muq_mulan")
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aiff", ".aif")


def study_clip_sets(*, study) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """({system: {sha256: path}} of the generated clips the study plays, {sha256: path} of its conditions' reference clips).

    Degraded variants (hard negatives) are left out: they are made to be worse, not a system's output.
    """
    from django.db.models import Q

    from annotation.models import Clip, Condition
    from annotation.ratings.models import RatingItemClip

    played = Clip.objects.filter(
        Q(pairs_as_a__study=study) | Q(pairs_as_b__study=study) | Q(pk__in=RatingItemClip.objects.filter(item__study=study, role="test").values("clip_id"))
    ).exclude(system=None).exclude(kind=Clip.Kind.DERIVED)
    systems: dict[str, dict[str, str]] = {}
    for sha, name, system in played.distinct().values_list("sha256", "file", "system__name"):
        systems.setdefault(system, {})[sha] = name
    conditions = Condition.objects.filter(Q(pairs__study=study) | Q(rating_items__study=study)).exclude(reference=None)
    references = dict(Clip.objects.filter(pk__in=conditions.values("reference_id")).values_list("sha256", "file"))
    return systems, references


def stored_embeddings(*, judge, shas) -> tuple[str, dict[str, np.ndarray]]:
    """(judge version, {sha256: embedding}) from the clip cache: the version that holds the most of these clips."""
    from .models import ClipScore

    by_version: dict[str, dict[str, np.ndarray]] = {}
    rows = ClipScore.objects.filter(judge=judge, context_key="", clip_sha256__in=list(shas)).values_list("judge_version", "clip_sha256", "scores")
    for version, sha, scores in rows.iterator():
        vector = (scores or {}).get("embedding")
        if vector:
            by_version.setdefault(version, {})[sha] = np.asarray(vector, dtype=np.float64)
    if not by_version:
        return "", {}
    version = max(sorted(by_version), key=lambda v: len(by_version[v]))
    return version, by_version[version]


def folder_clips(path) -> list:
    """The audio files under a folder (recursively), as ClipAudio with their content hash; a clear error when there are none."""
    import hashlib
    from pathlib import Path

    from common.errors import ServiceError

    from .judges import ClipAudio

    root = Path(path).expanduser()
    if not root.is_dir():
        raise ServiceError(f"Reference folder {path} does not exist or is not a folder.", code="no_reference_folder")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
    if len(files) < MIN_CLIPS:
        raise ServiceError(f"Reference folder {path} holds {len(files)} audio file(s) ({', '.join(AUDIO_SUFFIXES)}); FAD and KAD need at least {MIN_CLIPS}.", code="few_reference_clips")
    return [ClipAudio(path=str(p), sha256=hashlib.sha256(p.read_bytes()).hexdigest()) for p in files]


def _system_rows(sets: dict[str, list[str]], reference: list[str], embeddings: dict[str, np.ndarray], *, rounds: int, seed: int) -> list[dict]:
    ref = [embeddings[s] for s in dict.fromkeys(reference) if s in embeddings]
    rows = []
    for k, (name, shas) in enumerate(sorted(sets.items())):
        own = [embeddings[s] for s in dict.fromkeys(shas) if s in embeddings]
        shapes = {v.shape for v in own + ref}
        if len(shapes) > 1:
            rows.append({"system": name, "clips": len(own), "reference_clips": len(ref), "note": "embeddings of different sizes: cached by two model versions; rescore with one"})
            continue
        figures = distances(np.stack(own) if own else np.zeros((0, 1)), np.stack(ref) if ref else np.zeros((0, 1)), rounds=rounds, seed=seed + 10 * k)
        rows.append({"system": name, "clips_played": len(shas), **figures})
    return rows


def distribution_section(*, study, rounds: int, seed: int) -> dict | None:
    """Per embedding judge with cached embeddings of the study's clips: each system's FAD and KAD against the study's reference clips.

    Only cached embeddings are read (a report never loads a model); None when no embedding judge
    has embedded any of the study's clips. `manage.py compare_judges --distribution` computes
    missing embeddings and takes other references.
    """
    from .models import Judge

    candidates = list(Judge.objects.filter(kind__in=EMBEDDING_KINDS).order_by("key"))
    if not candidates:
        return None
    systems, references = study_clip_sets(study=study)
    if not systems:
        return None
    wanted = set(references) | {s for clips in systems.values() for s in clips}
    judges = []
    for judge in candidates:
        version, embeddings = stored_embeddings(judge=judge, shas=wanted)
        if not any(s in embeddings for clips in systems.values() for s in clips):
            continue
        rows = _system_rows({n: list(c) for n, c in systems.items()}, list(references), embeddings, rounds=rounds, seed=seed) if references else []
        judges.append({"judge": judge.key, "kind": judge.kind, "version": version, "embedded_clips": len(embeddings), "rows": rows})
    if not judges:
        return None
    few = any(r.get("few_clips") for j in judges for r in j["rows"])
    out = {"few_clips": few, "reference": "the study's reference clips", "reference_clips": len(references), "rounds": rounds, "seed": seed, "level": LEVEL, "min_clips": MIN_CLIPS, "judges": judges}
    if not references:
        out["note"] = "The study's conditions have no reference clips: compute FAD and KAD against another system or a folder with manage.py compare_judges --distribution."
    return out


def distribution_compare(*, study, judge_key: str, reference_dir: str = "", reference_system: str = "", compute: bool = False, rounds: int = ROUNDS, seed: int = 0) -> dict:
    """Each system's FAD and KAD against one reference (the study's reference clips, another system's clips, or a folder), on one embedding judge.

    `compute`: embed the clips the cache lacks with the judge's model here (and cache them); without it only cached embeddings count.
    """
    from common.errors import ServiceError

    from .judges import ClipAudio, JudgeUnavailable
    from .models import Judge
    from .services import judge_adapter

    judge = Judge.objects.filter(key=judge_key).first()
    if judge is None:
        known = ", ".join(Judge.objects.filter(kind__in=EMBEDDING_KINDS).values_list("key", flat=True)) or "none"
        raise ServiceError(f"No judge {judge_key!r}; embedding judges: {known}.", code="unknown_judge")
    if judge.kind not in EMBEDDING_KINDS:
        raise ServiceError(f"Judge {judge.key} is a {judge.kind} judge, which keeps no audio embeddings; use one of kinds {', '.join(EMBEDDING_KINDS)}.", code="not_embedding_judge")
    if reference_dir and reference_system:
        raise ServiceError("Give one reference: a folder or a system, not both.", code="two_references")
    systems, references = study_clip_sets(study=study)
    if not systems:
        raise ServiceError(f"Study {study.name} plays no clips of a system yet.", code="no_systems")
    paths = {sha: path for clips in systems.values() for sha, path in clips.items()}
    if reference_system:
        if reference_system not in systems:
            raise ServiceError(f"No system {reference_system!r} in study {study.name}; its systems are: {', '.join(sorted(systems))}.", code="unknown_system")
        reference = list(systems.pop(reference_system))
        label = f"system {reference_system}"
    elif reference_dir:
        folder = folder_clips(reference_dir)
        paths.update({c.sha256: c.path for c in folder})
        reference = [c.sha256 for c in folder]
        label = f"folder {reference_dir}"
    else:
        if not references:
            raise ServiceError(f"Study {study.name}'s conditions have no reference clips: give --reference-system NAME or --reference-dir FOLDER.", code="no_reference")
        paths.update(references)
        reference = list(references)
        label = "the study's reference clips"
    if compute:
        adapter = judge_adapter(judge)
        try:
            adapter.require()
            version = adapter.cache_version()
        except JudgeUnavailable as exc:
            raise ServiceError(str(exc), code="judge_unavailable") from None
        clips = [ClipAudio(path=_media_path(p), sha256=s) for s, p in paths.items()]
        embeddings = {c.sha256: np.asarray(v, dtype=np.float64) for c, v in zip(clips, adapter.audio_embeddings(clips))}
    else:
        version, embeddings = stored_embeddings(judge=judge, shas=paths)
    rows = _system_rows({n: list(c) for n, c in systems.items()}, reference, embeddings, rounds=rounds, seed=seed)
    return {"study": study.name, "judge": judge.key, "kind": judge.kind, "version": version, "reference": label, "reference_clips": len(set(reference)), "computed": compute, "rounds": rounds, "seed": seed, "level": LEVEL, "rows": rows}


def _media_path(name: str) -> str:
    """A stored clip's file path (FileField names are relative to the storage), or the path itself for files outside it."""
    from pathlib import Path

    from django.core.files.storage import default_storage

    return name if Path(name).is_absolute() else default_storage.path(name)
