"""What the slow-client deadlines cost per request: server CPU for keep-alive GETs, per HTTP protocol.

    .venv/bin/python bench/http_protocol.py [--requests 20000] [--repeat 3]

Each protocol serves a trivial ASGI app under uvicorn in a child process on loopback; one client
socket sends --requests keep-alive GETs one after another, and the child's own CPU time (user +
system, from its rusage) is read when it exits. Baseline (same run): uvicorn's stock httptools
protocol. Printed: CPU per request of each, and its ratio to the baseline. The launch's default is
common.slow_clients' httptools subclass; AUDITORIUM_HTTP=h11 picks the h11 one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOCOLS = {
    "httptools (uvicorn's, baseline)": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol",
    "httptools + deadlines (default)": "httptools",
    "h11 + deadlines": "h11",
}

CHILD = r"""
import json, os, resource, sys
sys.path.insert(0, os.environ["BENCH_ROOT"])
import uvicorn
choice = os.environ["BENCH_PROTOCOL"]
if ":" in choice:
    http = choice
else:
    os.environ["AUDITORIUM_HTTP"] = choice
    from common.slow_clients import protocol_class
    http = protocol_class()

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})

config = uvicorn.Config(app, host="127.0.0.1", port=int(os.environ["BENCH_PORT"]), http=http, log_level="error", access_log=False, lifespan="off")
server = uvicorn.Server(config)
try:
    server.run()
except KeyboardInterrupt:  # uvicorn raises the SIGINT it caught again once it has shut down
    pass
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime}), flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_and_measure(protocol: str, requests: int) -> float:
    """The server process's CPU seconds from start to exit, having answered `requests` GETs."""
    port = _free_port()
    env = {**os.environ, "BENCH_ROOT": str(ROOT), "BENCH_PROTOCOL": protocol, "BENCH_PORT": str(port)}
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.time() > deadline or child.poll() is not None:
                    raise RuntimeError(f"the server for {protocol} did not start")
                time.sleep(0.05)
        request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with conn:
            for _ in range(requests):
                conn.sendall(request)
                answer = b""
                while not answer.endswith(b"\r\n\r\nok"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        raise RuntimeError(f"{protocol}: the server closed the connection")
                    answer += chunk
    finally:
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    return json.loads(out.strip().splitlines()[-1])["cpu"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    # Start-up CPU (imports) is the same for every protocol: measured with no requests and subtracted.
    idle = {name: [] for name in PROTOCOLS}
    busy = {name: [] for name in PROTOCOLS}
    for _ in range(args.repeat):
        # Interleaved, so a change in the machine's load falls on every protocol alike.
        for name, protocol in PROTOCOLS.items():
            idle[name].append(_serve_and_measure(protocol, 1))
            busy[name].append(_serve_and_measure(protocol, args.requests))
    load = os.getloadavg()[0]
    print(f"{args.requests} keep-alive GETs per run, {args.repeat} runs each, load average {load:.2f} at the end")
    print(f"{'protocol':34} {'server CPU (s)':>16} {'ms/request':>11} {'ratio':>6}")
    per_request = {}
    for name in PROTOCOLS:
        spent = [b - statistics.median(idle[name]) for b in busy[name]]
        per_request[name] = statistics.median(spent) / args.requests * 1000
        spread = f"{min(spent):.2f}-{max(spent):.2f}"
        base = per_request[next(iter(PROTOCOLS))]
        print(f"{name:34} {spread:>16} {per_request[name]:>11.4f} {per_request[name] / base:>6.2f}")


if __name__ == "__main__":
    main()
