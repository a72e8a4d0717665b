"""Device-side helpers shared by the learned judges: device and dtype choice, host-to-device copies,
a bounded audio-decoding prefetch pool, and length-sorted batches.

Any judge that runs a torch model can use these (CLAP, the audio LLMs, and judges added later).
Importing this module is cheap: torch is imported inside the functions that need it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np

from .base import JudgeUnavailable, load_audio

# Judge option `dtype` -> torch dtype name. "auto" is bf16 on CUDA and fp32 on the CPU: bf16
# halves memory and runs the tensor cores at full rate with fp32's exponent range (no overflow in
# softmax or layer norm); CPUs gain little from it, so they keep fp32.
DTYPE_NAMES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "half": "float16",
    "fp32": "float32",
    "float32": "float32",
    "float": "float32",
}
SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def judge_device(options: dict, *, key: str = "") -> str:
    """The judge's device from its options (`device`, `requires_cuda`), or JudgeUnavailable saying why not.

    `requires_cuda: true` refuses to fall back to the CPU: a 7B judge that silently ran on the CPU
    would take hours per run instead of failing with the reason.
    """
    from .runtime import DeviceUnavailable, pick_device

    wanted = options.get("device") or ("cuda" if options.get("requires_cuda") else None)
    try:
        device = pick_device(wanted)
    except DeviceUnavailable as exc:
        raise JudgeUnavailable(f"judge {key or '(unnamed)'} cannot run here: {exc}") from None
    if options.get("requires_cuda") and not device.startswith("cuda"):
        raise JudgeUnavailable(f"judge {key or '(unnamed)'} has requires_cuda set but device {device!r}")
    return device


def dtype_name(option, device: str, *, cuda_default: str = "bfloat16") -> str:
    """"bfloat16" | "float16" | "float32" for a judge's `dtype` option ("auto" when unset): on CUDA,
    auto is the judge's `cuda_dtype` (bf16 unless bf16 moved its scores past the bound, docs/judges.md)."""
    value = str(option or "auto").strip().lower()
    if value == "auto":
        return cuda_default if str(device).startswith("cuda") else "float32"
    try:
        return DTYPE_NAMES[value]
    except KeyError:
        raise ValueError(f"dtype {option!r} is not one of auto, {', '.join(sorted(DTYPE_NAMES))}") from None


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def pinned_empty(shape: tuple, device: str):
    """A float32 host tensor to fill before copying to `device`: page-locked when that is a GPU.

    A copy from page-locked memory runs at full bus speed and, with non_blocking, returns at once,
    so the host fills the next batch while the GPU works on this one. torch's caching host
    allocator keeps a block until the copies that read it have finished, so freeing it is safe.
    """
    import torch

    return torch.empty(shape, dtype=torch.float32, pin_memory=str(device).startswith("cuda") and torch.cuda.is_available())


def to_device(host, device: str):
    """Copy a host tensor to the device without waiting for it (pinned memory makes that real)."""
    return host.to(device, non_blocking=True) if str(device).startswith("cuda") else host


def synchronize(device: str) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def decode_workers(options: dict) -> int:
    """Threads that decode and resample audio for one judge call (option `decode_workers`).

    soundfile and the resampler's convolution release the GIL for most of their work, so threads
    scale with cores; where they do not, option `decode_processes` decodes in processes instead.
    """
    value = options.get("decode_workers")
    if value is None:
        return max(1, min(4, os.cpu_count() or 1))
    return max(1, int(value))


def _quiet_worker() -> None:
    # One core per decoding process: torch's own thread pool would make the processes fight.
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - the resampler falls back to scipy
        pass


_process_pools: dict[int, object] = {}


def process_pool(workers: int):
    """A pool of `workers` decoding processes, started once per process and kept (forkserver: a
    parent that holds a GPU context must not fork)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if workers not in _process_pools:
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        _process_pools[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method), initializer=_quiet_worker)
    return _process_pools[workers]


def decode_processes(options: dict) -> bool:
    """Option `decode_processes`: decode in worker processes instead of threads (where the GIL limits)."""
    return bool(options.get("decode_processes", False))


def prefetch(items: Iterable, work: Callable, *, workers: int, depth: int | None = None, processes: bool = False) -> Iterator:
    """work(item) for each item, in order, computed ahead in a thread pool (or, with `processes`, a
    pool of processes; `work` must then be picklable) at most `depth` items ahead.

    Bounded so a long list never holds more than `depth` decoded clips in memory. An exception
    raised by work(item) is raised when that item's turn comes.
    """
    items = iter(items)
    depth = max(1, depth or 2 * workers)
    if workers <= 1:
        for item in items:
            yield work(item)
        return
    # The process pool is shared and kept for the worker's life; a thread pool is this call's own.
    pool = process_pool(workers) if processes else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-decode")
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        if not processes:
            pool.shutdown(wait=False, cancel_futures=True)


def prefetch_audio(paths: Iterable[str], *, sample_rate: int, workers: int, depth: int | None = None, processes: bool = False) -> Iterator[np.ndarray]:
    """Decoded mono float32 waves at `sample_rate`, in the order of `paths`, decoded ahead in threads
    (or processes)."""
    return prefetch(paths, partial(load_audio, sample_rate=sample_rate), workers=workers, depth=depth, processes=processes)


def length_batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indices grouped into batches of at most `size`, similar lengths together (less padding)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    size = max(1, int(size))
    return [order[start : start + size] for start in range(0, len(order), size)]


def is_out_of_memory(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def split_on_oom(run: Callable[[list], list], batch: list) -> list:
    """run(batch), halving the batch and retrying when the GPU runs out of memory for it."""
    try:
        return run(batch)
    except RuntimeError as exc:
        if len(batch) <= 1 or not is_out_of_memory(exc):
            raise
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    half = len(batch) // 2
    return split_on_oom(run, batch[:half]) + split_on_oom(run, batch[half:])


class OnDevice:
    """Device, dtype and a cache version that keeps each dtype's numbers apart, for judges that run a model.

    Mixed in before JudgeAdapter: embeddings and transcripts differ between bf16/fp16 and fp32, so the clip
    cache is keyed by the dtype, and a judge that cannot resolve one (no torch, a bad option) still gets a key.
    """

    def device(self) -> str:
        return judge_device(self.options, key=self.config.key)

    def dtype(self) -> str:
        return dtype_name(self.options.get("dtype"), self.device(), cuda_default=self.cuda_dtype)

    def cache_version(self) -> str:
        try:
            return f"{super().cache_version()}.{self.dtype()}"
        except JudgeUnavailable:
            return f"{super().cache_version()}.unavailable"  # nothing is computed; the job records why
