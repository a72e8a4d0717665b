"""A raw audio client for tests under a real server: tone clips stored as the platform stores them, and a GET that
reads the headers and leaves (a small receive buffer, as a client that never reads would leave the kernel to fill)."""

from __future__ import annotations

import hashlib
import io
import socket

import numpy as np
import soundfile as sf
from django.core.files.base import ContentFile

from annotation.models import Clip
from tests.factories import SystemFactory

RATE = 48000
# The CSRF cookie and header these clients send together.
TOKEN = "s" * 32


def long_clip(freq: float, seconds: float) -> Clip:
    buf = io.BytesIO()
    t = np.arange(int(seconds * RATE)) / RATE
    sf.write(buf, np.stack([0.2 * np.sin(2 * np.pi * freq * t)] * 2, axis=1).astype(np.float32), RATE, format="WAV", subtype="PCM_16")
    data = buf.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    clip = Clip(sha256=sha, system=SystemFactory(), duration=seconds, sample_rate=RATE, channels=2, extension=".wav")
    clip.file.save(f"{sha}.wav", ContentFile(data), save=False)
    clip.save()
    return clip


def get_headers_then_close(port: int, path: str, cookie: str) -> bytes:
    """GET, read up to the end of the headers, close without reading the body."""
    conn = socket.socket()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.connect(("127.0.0.1", port))
    conn.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(1)
    conn.close()
    return head


