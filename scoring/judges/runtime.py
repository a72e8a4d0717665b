"""Per-process model cache, device choice and the models folder, for judges and the platform alike.

Plain Python (torch is imported inside the functions that need it): the judges run as a library,
without Django, Celery or a settings module (`python -m scoring.judges`, benches, a team's own
machine). The platform re-exports the cache and device choice from auditorium.runtime and tells
this module where its models folder is (`use_model_dir`, called when the scoring app starts), so
one cache serves judges and arena generators in a worker process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

_cache: dict = {}
_cache_lock = threading.Lock()


class DeviceUnavailable(RuntimeError):
    """A model was configured for a device this process cannot use; the message says why."""


def cached_model(key: tuple, loader):
    """Load once per worker process; concurrent threads wait for the first load instead of repeating it."""
    with _cache_lock:
        if key not in _cache:
            _cache[key] = loader()
        return _cache[key]


def cached_keys() -> list[tuple]:
    with _cache_lock:
        return list(_cache)


def cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


def cuda_problem() -> str:
    """Why this process cannot use CUDA, or "" when it can.

    torch.cuda.is_available() only says no; an operator needs to know whether torch is a CPU
    build, no driver answered, or CUDA_VISIBLE_DEVICES hides every device.
    """
    import torch

    if torch.cuda.is_available():
        return ""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if torch.version.cuda is None:
        return f"this torch build ({torch.__version__}) has no CUDA support; install a CUDA wheel of torch on GPU workers"
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process"
    hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    return f"torch {torch.__version__} is built for CUDA {torch.version.cuda} but finds no usable GPU{hint}: no NVIDIA driver, or no device on this machine"


def pick_device(wanted: str | None = None) -> str:
    """The device a model runs on: the one asked for, else CUDA when present, else the CPU.

    Asking for CUDA where there is none raises DeviceUnavailable with the reason, instead of a
    crash deep inside torch at the first tensor moved there. Devices are numbered within
    CUDA_VISIBLE_DEVICES, so "cuda" is the first GPU this process was given.
    """
    import torch

    if wanted:
        wanted = str(wanted)
        if wanted.split(":")[0] == "cuda":
            problem = cuda_problem()
            if problem:
                raise DeviceUnavailable(f"device {wanted!r} was asked for, but {problem}")
            index = int(wanted.split(":")[1]) if ":" in wanted else 0
            if index >= torch.cuda.device_count():
                raise DeviceUnavailable(f"device {wanted!r} was asked for, but this process sees {torch.cuda.device_count()} GPU(s)")
        return wanted
    return "cuda" if torch.cuda.is_available() else "cpu"


# --- the models folder --------------------------------------------------------------------------------

_model_dir: Callable[[], str | os.PathLike] | None = None


def use_model_dir(source: str | os.PathLike | Callable[[], str | os.PathLike] | None) -> None:
    """Where relative weights are looked up when a judge is given no folder of its own: a path, or a
    callable read at each lookup (the platform passes its settings, which tests change). None forgets it."""
    global _model_dir
    if source is None or callable(source):
        _model_dir = source
    else:
        path = Path(source)
        _model_dir = lambda: path  # noqa: E731


def model_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The models folder: `explicit` when given, else the one set with use_model_dir, else the
    AUDITORIUM_MODEL_DIR environment variable, else ./models."""
    if explicit:
        return Path(explicit)
    if _model_dir is not None:
        return Path(_model_dir())
    return Path(os.environ.get("AUDITORIUM_MODEL_DIR") or "models")


# --- where endpoint judges may send requests -----------------------------------------------------------

_endpoint_check: Callable[[str], object] | None = None


def use_endpoint_check(check: Callable[[str], object] | None) -> None:
    """The platform's check of an endpoint judge's URL, called before each request: it returns the address to
    connect to (or None for the URL's host) and raises JudgeUnavailable for an address it must not reach. None
    forgets it: as a library, requests go where the endpoint says."""
    global _endpoint_check
    _endpoint_check = check


def endpoint_check(url: str):
    return _endpoint_check(url) if _endpoint_check is not None else None
