"""Per-process model cache and device choice, shared by scoring judges and arena generators.

Nothing here imports torch at module level: web processes import this module to list judges and
systems, and only worker processes ever load a model.
"""

from __future__ import annotations

import threading

_cache: dict = {}
_cache_lock = threading.Lock()


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


def pick_device(wanted: str | None = None) -> str:
    """The device a model runs on: the one asked for, else CUDA when present, else the CPU."""
    if wanted:
        return str(wanted)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
