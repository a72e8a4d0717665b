"""Devices the learned-judge tests run on: always the CPU, and CUDA where a GPU is visible.

`pytest -m gpu` runs only the CUDA cases; on a machine without a GPU (CI) they are skipped with
the reason, never failed. Point the same suite at a GPU machine to check the CUDA paths.
"""

from __future__ import annotations

import pytest


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA device visible (CI has no GPU)")], id="cuda")
DEVICES = ["cpu", CUDA]
