"""How every launch path runs the web server: `python -m auditorium.serve` (the demo) and gunicorn's worker class.

uvicorn on its own believes X-Forwarded-For from 127.0.0.1 and rewrites the client address with
it before the application sees the request; on a loopback demo that lets any client pick its own
address (and so its own rate-limit and sign-in-lock bucket). So the server's proxy handling is
always off, and the application decides from its own settings (AUDITORIUM_BEHIND_PROXY and
AUDITORIUM_TRUSTED_PROXIES, see common/proxy.py) whose forwarded address to believe.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def uvicorn_options() -> dict:
    return {"proxy_headers": False, "forwarded_allow_ips": ""}


try:
    from uvicorn_worker import UvicornWorker as _UvicornWorker
except ImportError:  # gunicorn's worker is only needed where gunicorn runs
    _UvicornWorker = None

if _UvicornWorker is not None:

    class UvicornWorker(_UvicornWorker):
        """gunicorn -k auditorium.serve.UvicornWorker: uvicorn's worker with its proxy handling off."""

        CONFIG_KWARGS = {**_UvicornWorker.CONFIG_KWARGS, **uvicorn_options()}


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
