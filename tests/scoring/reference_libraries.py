"""fadtk's calc_frechet_distance and kadtk's calc_kernel_audio_distance, loaded without their model stacks.

Both libraries pin numpy < 2 and import audio model loaders (librosa, torchaudio, laion-clap, msclap)
at module level, so they are installed from requirements-reference.txt with `pip install --no-deps` and
only the module holding the distance is loaded here, with the imports it never calls for a distance
(progress bars, file writers, the embedding and model loaders) replaced by empty stand-ins.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from pathlib import Path
from typing import Union

from tests.prerequisites import missing


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _stub(monkeypatch, name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so submodules and relative imports resolve to other stubs
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def _unused(*args, **kwargs):
    raise AssertionError("a stand-in for a library helper the distance does not use was called")


def _load(monkeypatch, package: str, filename: str, stubs: dict[str, dict]):
    where = _package_dir(package)
    if where is None or not (where / filename).exists():
        missing(f"{package} is not installed", fix="./auditorium installs it from requirements-reference.txt (pip install --no-deps -r requirements-reference.txt)")
    for name, attrs in stubs.items():
        _stub(monkeypatch, name, **attrs)
    spec = importlib.util.spec_from_file_location(f"{package}.{filename[:-3]}", where / filename)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


_HYPY = {
    "hypy_utils": {"write": _unused},
    "hypy_utils.tqdm_utils": {"tq": _unused, "tmap": _unused, "pmap": _unused},
    "hypy_utils.logging_utils": {"setup_logger": lambda *a, **k: logging.getLogger("fadtk")},
    "hypy_utils.nlp_utils": {"substr_between": _unused},
}


def fadtk_fad(monkeypatch):
    """fadtk.fad (for calc_embd_statistics and calc_frechet_distance)."""
    return _load(
        monkeypatch,
        "fadtk",
        "fad.py",
        {**_HYPY, "fadtk": {}, "torchaudio": {}, "fadtk.model_loader": {"ModelLoader": object}, "fadtk.utils": {"__all__": ["PathLike"], "PathLike": Union[str, Path]}},
    )


def kadtk_kad(monkeypatch):
    """kadtk.kad (for calc_kernel_audio_distance and median_pairwise_distance)."""
    return _load(
        monkeypatch,
        "kadtk",
        "kad.py",
        {**_HYPY, "kadtk": {}, "kadtk.emb_loader": {"EmbeddingLoader": object}, "kadtk.model_loader": {"ModelLoader": object}},
    )
