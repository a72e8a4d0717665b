"""Per-process model cache and device choice, shared by scoring judges and arena generators.

The code lives in scoring.judges.runtime, so the judges also run as a plain library (no Django);
this module keeps the platform's name for it. One cache per process either way.
"""

from __future__ import annotations

from scoring.judges.runtime import DeviceUnavailable, cache_clear, cached_keys, cached_model, cuda_problem, pick_device

__all__ = ["DeviceUnavailable", "cache_clear", "cached_keys", "cached_model", "cuda_problem", "pick_device"]
