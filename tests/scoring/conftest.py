"""Fixtures for scoring tests: no network (model loaders must work offline), tiny models built once."""

from __future__ import annotations

import os
import socket

import pytest

# huggingface_hub reads these when it is first imported: set them before any test imports it.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

_LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class NetworkBlocked(OSError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Refuse every connection that leaves the machine (PostgreSQL and Redis on loopback still work)."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def _check(address):
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in _LOCAL:
            raise NetworkBlocked(f"network access blocked in tests: {address!r}")

    def connect(self, address):
        _check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        _check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in _LOCAL and host is not None:
            raise NetworkBlocked(f"name lookup blocked in tests: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield


@pytest.fixture(scope="session")
def tiny_clap_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from .tiny_models import build_tiny_clap

    return build_tiny_clap(tmp_path_factory.mktemp("tiny-clap"))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    """Tiny MuQ, XLM-R, MuQ-MuLan, SongEval, CMI-RM (SA and CA) and audiobox models in their authors' layouts."""
    pytest.importorskip("transformers")
    from .tiny_cmi import build_all

    return build_all(tmp_path_factory.mktemp("tiny-cmi"))


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from .tiny_models import build_tiny_qwen2_audio

    return build_tiny_qwen2_audio(tmp_path_factory.mktemp("tiny-qwen2-audio"))


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    # Each test loads through the real loader instead of reusing another test's model.
    from auditorium.runtime import cache_clear

    cache_clear()
    yield
    cache_clear()


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as a CPU-only one, also where the suite runs on a GPU machine."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def batched(monkeypatch, tmp_path):
    from scoring.judges import audiollm

    from .scripted import BatchedScript

    holder = {"backend": BatchedScript()}
    monkeypatch.setitem(audiollm.BACKENDS, "batched", lambda path, options: holder["backend"])
    (tmp_path / "weights").mkdir()
    return holder, str(tmp_path / "weights")
