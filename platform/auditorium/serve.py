"""How every launch path runs the web server: `python -m auditorium.serve` (the demo) and gunicorn's worker class.

uvicorn on its own believes X-Forwarded-For from 127.0.0.1 and rewrites the client address with
it before the application sees the request; on a loopback demo that lets any client pick its own
address (and so its own rate-limit and sign-in-lock bucket). So the server's proxy handling is
always off, and the application decides from its own settings (AUDITORIUM_BEHIND_PROXY and
AUDITORIUM_TRUSTED_PROXIES, see common/proxy.py) whose forwarded address to believe.

uvicorn also waits for ever on a client that sends its headers or body a byte at a time, so the
HTTP protocol is common.slow_clients' (AUDITORIUM_HTTP, AUDITORIUM_HEADER_TIMEOUT, AUDITORIUM_BODY_TIMEOUT), and
AUDITORIUM_LIMIT_CONCURRENCY (default 1000) caps connections plus tasks: beyond it uvicorn answers 503
instead of letting slow clients pile up without bound.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_LIMIT_CONCURRENCY = 1000


def uvicorn_options() -> dict:
    from common.slow_clients import protocol_class

    limit = int(os.environ.get("AUDITORIUM_LIMIT_CONCURRENCY", "").strip() or DEFAULT_LIMIT_CONCURRENCY)
    return {"proxy_headers": False, "forwarded_allow_ips": "", "http": protocol_class(), "limit_concurrency": limit}


try:
    from uvicorn_worker import UvicornWorker as _UvicornWorker
except ImportError:  # gunicorn's worker is only needed where gunicorn runs
    _UvicornWorker = None

if _UvicornWorker is not None:

    class UvicornWorker(_UvicornWorker):
        """gunicorn -k auditorium.serve.UvicornWorker: uvicorn's worker with its proxy handling off and the slow-client deadlines."""

        # gunicorn's own --worker-connections stays the concurrency limit here.
        CONFIG_KWARGS = {**_UvicornWorker.CONFIG_KWARGS, **{k: v for k, v in uvicorn_options().items() if k != "limit_concurrency"}}


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Run Auditorium under uvicorn, proxy headers left to the application.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    uvicorn.run("auditorium.asgi:application", host=args.host, port=args.port, **uvicorn_options())


if __name__ == "__main__":
    main()
