"""Load test on loopback: judgment cycles and arena votes per second, p50/p99 latency, as ratios of a bare request.

    .venv/bin/python bench/load.py [--clients 50] [--submits 3000] [--votes 3000] [--seconds 60] [--workers 2]
                                   [--server serve|asgi|wsgi] [--sqlite] [--min-listen 0.5] [--pool-trace]
                                   [--rounds 3] [--open-share 0.5] [--open-seconds 20] [--profile DIR]
                                   [--cycle new|old] [--no-arena]

A cycle is what the page really sends. --cycle new (the default, as the listening page does now):
both clips through their clip URLs (ranged GETs), then the judgment with its listening events and
the clips' receipts in its body, paced to honour the minimum listening time; its answer carries the
next pair, so a client asks for next only for its first pair (4 requests for the first, 3 after).
--cycle old: next, both clips, three listening posts (receipts with the first), the judgment: the
7-request cycle API clients of the separate endpoints still make. Arena: battle, both clips, the
posts, the vote (--no-arena leaves the arena phases out). Starts the deployed launch (python -m auditorium.serve) or
gunicorn (uvicorn or gthread workers) against a scratch PostgreSQL database and
Redis (or the embedded defaults, --sqlite), then drives it with aiohttp clients on 127.0.0.1 only. Bounded in
requests (--submits, --votes) and time (--seconds per phase). Each client
retries a failed request with the same idempotency key, and the run ends with
the integrity figures: lost, duplicated, over-assigned.

Neither store starts a Celery worker: the cycle measured is the web server's, and work it queues
(the arena's debounced leaderboard refit) waits in the broker, Redis or the embedded SQLite one.

Baseline (same run, same server, same clients): GET /healthz/, a view that
touches nothing, so the ratios show what the real work costs. Every phase prints
its rate, p50, p99 and `xR of baseline rate`, and the CPU milliseconds each
operation cost the server's workers, PostgreSQL, Redis and the clients (from
/proc). Baseline and closed-loop phases run --rounds times, each ratio against
its own round's baseline, and the summary gives the median: the machine's pace
drifts between runs. The closed-loop phases (each client back to back) measure
capacity; the open-loop phases then offer a fixed Poisson arrival rate at
--open-share of that capacity and measure latency from each arrival's scheduled
time, which is what a user sees at that load. A cycle's latency includes its paced
listening. --server wsgi runs the same code on gunicorn's threaded WSGI workers, to
see what the ASGI path costs per request. --profile DIR records one worker with
py-spy during each phase (a dev tool: pip install py-spy; not a requirement).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager

from _setup import ROOT, django_setup, percentile

# Overridable so two runs on one machine do not drop each other's database.
DB_NAME = os.environ.get("BENCH_LOAD_DB", "auditorium_bench_load")
PASSWORD = "load-bench-password"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_tone(path, *, seconds: float, rate: int = 16000) -> None:
    """A mono 16-bit WAV tone: the clip every bench pair and battle serves (real bytes, real ranges)."""
    import numpy as np
    import soundfile as sf

    t = np.arange(int(seconds * rate)) / rate
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), 0.2 * np.sin(2 * np.pi * 440 * t), rate, subtype="PCM_16")


def build_fixtures(args):
    """Users, a study with one pair per expected cycle, and ready arena battles; every clip is a real file, so
    the audio GETs send real bytes and the listening rules run as they do for a browser."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation import services
    from annotation.models import Clip, Pair, Study
    from arena.models import ArenaSystem, Battle, ListenEvent
    from arena.services import visitor_accept_terms

    User = get_user_model()
    write_tone(settings.MEDIA_ROOT / "bench" / "tone.wav", seconds=args.clip_seconds)
    study = Study.objects.create(name="load", overlap_target=1, overlap_share=0.0, min_listen_seconds=args.min_listen, lock_ttl_seconds=3600)
    condition, _ = services.condition_get_or_create(prompt="load test prompt")
    # Room for everyone until the cycle budget is spent in every round and in the open-loop phase.
    n_pairs = (args.rounds + 1) * args.submits + args.clients
    clips = Clip.objects.bulk_create(
        [Clip(sha256=f"{i:064d}", file="bench/tone.wav", duration=args.clip_seconds, sample_rate=16000, channels=1) for i in range(n_pairs + 1)]
    )
    Pair.objects.bulk_create(
        [Pair(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1], clip_key=Pair.key_for(clips[i].pk, clips[i + 1].pk), overlap=1) for i in range(n_pairs)]
    )
    users = []
    for i in range(args.clients):
        user = User.objects.create_user(username=f"load{i}", password=PASSWORD)
        services.study_annotator_add(study=study, user=user)
        services.consent_give(user=user)
        users.append(user.username)

    systems = []
    for name in ("load-a", "load-b"):
        system = services.system_get_or_create(name=name)
        systems.append(ArenaSystem.objects.create(system=system))
    visitors = []
    # Twice the share of each client: open-loop arrivals pick free clients unevenly, and a client
    # out of battles would end its arrivals uncounted.
    per_client = 2 * (args.rounds + 1) * args.votes // args.clients + 1
    ready_at = timezone.now()
    for i in range(args.clients):
        visitor, cookie = visitor_accept_terms(cookie=None, version="1")
        battles = Battle.objects.bulk_create(
            [
                Battle(
                    visitor=visitor, prompt="load", duration_requested=args.clip_seconds, seed=j, system_a=systems[0], system_b=systems[1],
                    clip_a=clips[0], clip_b=clips[1], status=Battle.Status.READY, ready_at=ready_at,
                )
                for j in range(per_client)
            ]
        )
        visitors.append((cookie, [str(b.public_id) for b in battles]))
    services.planner_stats_refresh(Pair, Clip, Battle, ListenEvent)  # as the importer does after a bulk load
    return users, visitors


# The requests of a judgment cycle, counted per phase for the requests-per-cycle figure.
CYCLE_KINDS = ("next", "audio", "listening", "judgment")
PROFILE: dict = {"dir": None, "workers": [], "flags": ["--gil"]}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _our_backend(pid: int) -> bool:
    """A PostgreSQL backend serving this run's database (other work on the machine's server is not ours to count)."""
    database = PROFILE.get("database")
    if not database:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return f" {database} ".encode() in handle.read().replace(b"\0", b" ")
    except OSError:
        return False


def cpu_by_group() -> Counter:
    """CPU seconds used so far by the server's workers, PostgreSQL, Redis and this client (from /proc)."""
    groups = Counter()
    workers = set(PROFILE["workers"])
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        pid = int(entry)
        if pid in workers:
            groups["server"] += seconds
            groups["server (kernel)"] += int(fields[12]) / CLOCK_TICKS
        elif name.startswith("postgres") and _our_backend(pid):
            groups["postgres"] += seconds
        elif name.startswith("redis"):
            groups["redis"] += seconds
        elif pid == os.getpid():
            groups["client"] += seconds
    return groups


def profile_start(name: str, seconds: float):
    """py-spy on one worker for the phase, if asked (--profile DIR) and py-spy is installed; a dev tool, not a requirement."""
    if not PROFILE["dir"] or not PROFILE["workers"]:
        return None
    out = os.path.join(PROFILE["dir"], re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".txt")
    py_spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return subprocess.Popen(
        [py_spy, "record", "--pid", str(PROFILE["workers"][0]), "--duration", str(int(seconds)), "--format", "raw", "--nonblocking", *PROFILE["flags"], "-o", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


@contextmanager
def measured(name: str, seconds: float):
    """A phase's wall time and CPU per group (and its py-spy record, if asked), into the dict it yields."""
    profiler = profile_start(name, min(seconds, 20))
    result = {"name": name}
    cpu_before = cpu_by_group()
    result["start"] = time.perf_counter()
    try:
        yield result
    finally:
        result["wall"] = time.perf_counter() - result.pop("start")
        result["cpu"] = cpu_by_group()
        result["cpu"].subtract(cpu_before)
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(timeout=30)


async def run_phase(name, clients, work, seconds):
    latencies: list[float] = []
    failures = Counter()
    stop_at = time.perf_counter() + seconds
    with measured(name, seconds) as result:
        done = await asyncio.gather(*(work(i, latencies, failures, stop_at) for i in range(clients)))
    return {**result, "count": sum(done), "lat": latencies, "failures": failures}


def rate_of(result) -> float:
    return result["count"] / result["wall"] if result["wall"] else 0.0


def report(result, baseline):
    lat = result["lat"]
    rate = rate_of(result)
    line = (
        f"{result['name']:<30} {result['count']:>6} ok in {result['wall']:5.1f} s = {rate:7.1f}/s   "
        f"p50 {statistics.median(lat) * 1000 if lat else float('nan'):6.1f} ms   p99 {percentile(lat, 99) * 1000:6.1f} ms"
        f"   x{rate / rate_of(baseline):.2f} of baseline rate"
    )
    if "offered" in result:
        line += f"   (offered {result['offered']:.1f}/s, {result['arrival']} arrivals)"
    if result["failures"]:
        line += f"   failures: {dict(result['failures'])}"
    print(line)
    if result["count"]:
        # Where the machine's time went, per operation: what the ratios cannot say on their own.
        cpu = result["cpu"]
        print(
            f"{'':<30} CPU ms per operation: "
            + ", ".join(f"{group} {cpu[group] * 1000 / result['count']:.2f}" for group in ("server", "server (kernel)", "postgres", "redis", "client"))
        )
    return rate


async def drive(args, base_url, users, visitors):
    import aiohttp

    csrf = secrets.token_hex(16)
    connector = aiohttp.TCPConnector(limit=args.clients * 2)
    timeout = aiohttp.ClientTimeout(total=30)
    sessions = []
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, connector_owner=False) as login:
        for username in users:
            jar = aiohttp.CookieJar(unsafe=True)
            session = aiohttp.ClientSession(connector=connector, timeout=timeout, cookie_jar=jar, connector_owner=False, headers={"X-CSRFToken": csrf, "Referer": base_url})
            jar.update_cookies({"csrftoken": csrf})
            async with session.post(f"{base_url}/accounts/login/", data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf}, allow_redirects=False) as r:
                assert r.status == 302, f"login failed for {username}: {r.status}"
            # Login rotates the CSRF cookie; later requests must send the new one.
            rotated = {c.key: c.value for c in jar}.get("csrftoken", csrf)
            session.headers["X-CSRFToken"] = rotated
            sessions.append(session)
        del login

    submitted: list[tuple[str, int]] = []
    following: dict[int, dict] = {}  # per client: the next-pair answer the last judgment carried (--cycle new)
    statuses: Counter = Counter()  # (request kind, status) over the whole run: the 5xx count comes from here
    last_proof: dict[str, str] = {}  # the latest Audio-Proof header per audio URL
    pace = args.min_listen + args.pace_margin

    async def request(session, kind, method, url, failures, **kwargs):
        """(status, body) of one request, retried on network errors (the same body: every write here is safe to repeat)."""
        for attempt in range(3):
            try:
                async with session.request(method, url, **kwargs) as r:
                    body = await r.read()
                    statuses[(kind, r.status)] += 1
                    if "Audio-Proof" in r.headers:
                        last_proof[url] = r.headers["Audio-Proof"]
                    if r.status >= 500:
                        failures[f"{kind} http_{r.status}"] += 1
                        await asyncio.sleep(float(r.headers.get("Retry-After", "1")) if r.status == 503 else 0.2)
                        continue
                    return r.status, body
            except (aiohttp.ClientError, asyncio.TimeoutError):
                # An idle keep-alive connection the server closed (open-loop gaps), or a real fault.
                failures["network"] += 1
        return None, b""

    async def listen(session, url, sides, failures, kind, receipts=None):
        """The page's listening posts while one transport plays A then B for the minimum each: play, switch, pause
        (each sent as it happens, stamped by the server on arrival); the clips' receipts ride with the play, as the page sends them."""
        first, second = sides
        for seq, (side, event) in enumerate(((first, "play"), (second, "switch"), (second, "pause")), start=1):
            if seq > 1:
                await asyncio.sleep(pace)
            body = {"events": [{"seq": seq, "side": side, "kind": event, "position": 0.0}]}
            if seq == 1 and receipts:
                body["receipts"] = receipts
            status, _ = await request(session, kind, "POST", url, failures, json=body)
            if status is None or status >= 400:
                failures[f"{kind} refused {status}"] += 1
                return False
        return True

    async def fetch_audio(session, url, failures, kind, side=None):
        """A clip as the transport fetches it: a ranged GET read to its end. With `side`, the receipt the page answers its
        Audio-Proof header with (common/audio_proof.py), or True when the response has none; False when the GET failed."""
        status, body = await request(session, kind, "GET", url, failures, headers={"Range": "bytes=0-"})
        if status not in (200, 206) or not body:
            failures[f"{kind} {status}"] += 1
            return False
        if side is None or not last_proof.get(url):
            return True
        from common.audio_proof import answer_for

        token = last_proof.pop(url)
        return {"side": side, "token": token, "bytes": answer_for(body, token)}

    async def cycle(i, failures) -> bool | None:
        """One judgment cycle. new, as the listening page makes it: both clips, then the judgment carrying the listening
        (events timed on the client's clock, the receipts), answered with the next pair; next only for the first.
        old, as an API client of the separate endpoints: next, both clips, the three listening posts, the judgment."""
        session, new = sessions[i], args.cycle == "new"
        answer = following.pop(i, None)
        if answer is None:
            status, body = await request(session, "next", "POST", f"{base_url}/api/studies/load/next/", failures)
            if status is None:
                return False
            answer = json.loads(body or b"{}")
        assignment = answer.get("assignment")
        if not assignment:
            failures[f"no_pair: {answer.get('detail', answer.get('error', ''))!s:.60}"] += 1
            return None
        receipts = []
        for side in ("A", "B"):
            got = await fetch_audio(session, f"{base_url}{assignment['clips'][side]['url']}", failures, "audio", side=side)
            if not got:
                return False
            if isinstance(got, dict):
                receipts.append(got)
        payload = {
            "idempotency_key": secrets.token_hex(12), "alignment": "A", "alignment_confidence": 3, "musicality": "B", "musicality_confidence": 3.5,
            "rationale": "load", "listening_log": {"A": {"plays": 1, "seconds": pace}, "B": {"plays": 1, "seconds": pace}, "switches": 1},
        }
        if new:
            # The transport plays A, switches to B, pauses: the events wait on the client, timed by its clock (ms).
            events, seq = [], assignment["listening"]["next_seq"]
            for k, (side, kind) in enumerate((("A", "play"), ("B", "switch"), ("B", "pause"))):
                if k:
                    await asyncio.sleep(pace)
                events.append({"seq": seq + k, "side": side, "kind": kind, "position": 0.0, "client_time": round(time.perf_counter() * 1000, 1)})
            payload["listening"] = {"events": events, "receipts": receipts, "client_now": round(time.perf_counter() * 1000 + 0.5, 1)}
            url = f"{base_url}/api/studies/load/assignments/{assignment['id']}/judgment/"
        else:
            if not await listen(session, f"{base_url}/api/assignments/{assignment['id']}/listening/", ("A", "B"), failures, "listening", receipts):
                return False
            url = f"{base_url}/api/assignments/{assignment['id']}/judgment/"
        # A client retry re-sends the same idempotency key (and the same batch: events already stored are ignored).
        status, body = await request(session, "judgment", "POST", url, failures, json=payload)
        if status in (200, 201):
            submitted.append((users[i], assignment["id"]))
            if new:
                following[i] = json.loads(body)["next"]
            return True
        failures[f"judgment {status}: {body[:80]!r}"] += 1
        return False

    judgment_cycle = cycle
    per_cycle = "3 requests, 4 with next" if args.cycle == "new" else "7 requests"

    voted: list[str] = []
    vote_sessions = []
    for cookie, battles in visitors:
        jar = aiohttp.CookieJar(unsafe=True)
        jar.update_cookies({"csrftoken": csrf, "arena_visitor": cookie})
        vote_sessions.append(
            (aiohttp.ClientSession(connector=connector, timeout=timeout, cookie_jar=jar, connector_owner=False, headers={"X-CSRFToken": csrf, "Referer": base_url}), list(battles))
        )

    async def vote_once(i, failures) -> bool | None:
        """One arena cycle as the page makes it: the battle, both clips, the listening posts, the vote. None: no battle left."""
        session, battles = vote_sessions[i]
        if not battles:
            return None
        battle = battles.pop(0)
        status, _ = await request(session, "battle", "GET", f"{base_url}/arena/api/battles/{battle}/", failures)
        if status != 200:
            failures[f"battle {status}"] += 1
            return False
        receipts = []
        for side in ("a", "b"):
            got = await fetch_audio(session, f"{base_url}/arena/audio/{battle}/{side}/", failures, "arena audio", side=side)
            if not got:
                return False
            if isinstance(got, dict):
                receipts.append(got)
        # The clips' receipts ride with the first events post, as arena.js sends them: only proven audio counts.
        if not await listen(session, f"{base_url}/arena/api/battles/{battle}/events/", ("a", "b"), failures, "arena events", receipts=receipts):
            return False
        status, body = await request(session, "vote", "POST", f"{base_url}/arena/api/battles/{battle}/vote/", failures, json={"vote": "a", "idempotency_key": secrets.token_hex(12)})
        if status in (200, 201):
            voted.append(battle)
            return True
        failures[f"vote {status}: {body[:80]!r}"] += 1
        return False

    def closed_loop(operation, limit):
        """Each client runs `operation` back to back; the budget is taken before each call, so clients cannot overshoot."""
        budget = {"left": limit}

        async def work(i, latencies, failures, stop_at):
            n = 0
            while budget["left"] > 0 and time.perf_counter() < stop_at:
                budget["left"] -= 1
                t0 = time.perf_counter()
                ok = await operation(i, failures)
                if ok is None:
                    break
                latencies.append(time.perf_counter() - t0)
                n += bool(ok)
            return n

        return work

    async def health(i, failures) -> bool:
        try:
            async with sessions[i].get(f"{base_url}/healthz/") as r:
                await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            failures["network"] += 1
            return False
        return r.status == 200

    async def open_loop(name, operation, rate, seconds, limit):
        """Arrivals at a fixed mean rate (Poisson), whatever the server's pace; latency counts from each arrival's
        scheduled time, so time spent waiting for a free client is counted too (no coordinated omission)."""
        rng = random.Random(14)
        free: asyncio.Queue = asyncio.Queue()
        for i in range(args.clients):
            free.put_nowait(i)
        latencies: list[float] = []
        failures = Counter()
        done = {"n": 0}
        tasks = []

        async def one(scheduled):
            i = await free.get()
            try:
                ok = await operation(i, failures)
            finally:
                free.put_nowait(i)
            if ok is None:
                failures["arrival found no work left"] += 1
                return
            latencies.append(time.perf_counter() - scheduled)
            done["n"] += bool(ok)

        with measured(name, seconds) as result:
            start = at = result["start"]
            for _ in range(limit):
                at += rng.expovariate(rate)
                if at - start > seconds:
                    break
                await asyncio.sleep(max(0.0, at - time.perf_counter()))
                tasks.append(asyncio.create_task(one(at)))
            await asyncio.gather(*tasks)
        return {**result, "count": done["n"], "lat": latencies, "failures": failures, "offered": rate, "arrival": "Poisson"}

    # The baseline runs a few seconds, not args.submits requests: at ~800/s that would be one
    # second, short enough for connection set-up and worker warm-up to move the ratio. The
    # machine's pace drifts between runs (a shared VM: the same code gave x0.11-x0.14), so each
    # round measures its own baseline next to its phases, and the ratios are the rounds' median.
    await run_phase("warm-up GET /healthz/", args.clients, closed_loop(health, 10 * args.clients), args.seconds)
    rounds = []
    for n in range(1, args.rounds + 1):
        baseline = await run_phase(f"[{n}] baseline GET /healthz/", args.clients, closed_loop(health, args.baseline_requests), args.seconds)
        report(baseline, baseline)
        before = sum(n for (kind, _), n in statuses.items() if kind in CYCLE_KINDS)
        submits = await run_phase(f"[{n}] judgment cycle ({args.cycle}: {per_cycle})", args.clients, closed_loop(judgment_cycle, args.submits), args.seconds)
        submits["requests"] = sum(n for (kind, _), n in statuses.items() if kind in CYCLE_KINDS) - before
        report(submits, baseline)
        if args.no_arena:
            votes = None
        else:
            votes = await run_phase(f"[{n}] arena cycle (6 requests)", args.clients, closed_loop(vote_once, args.votes), args.seconds)
            report(votes, baseline)
        rounds.append((baseline, submits, votes))
    half = args.open_share
    baseline = rounds[-1][0]
    open_submits = await open_loop(
        "open-loop judgment cycle", judgment_cycle, max(1.0, half * statistics.median(rate_of(r[1]) for r in rounds)), args.open_seconds, args.submits
    )
    report(open_submits, baseline)
    open_results = [open_submits]
    if not args.no_arena:
        open_votes = await open_loop("open-loop arena vote", vote_once, max(1.0, half * statistics.median(rate_of(r[2]) for r in rounds)), args.open_seconds, args.votes)
        report(open_votes, baseline)
        open_results.append(open_votes)
    for session in sessions:
        await session.close()
    for session, _ in vote_sessions:
        await session.close()
    await connector.close()
    return rounds, open_results, submitted, voted, statuses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--submits", type=int, default=3000)
    parser.add_argument("--votes", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=60.0, help="time cap per phase")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--server", choices=["serve", "asgi", "wsgi"], default="serve",
        help="serve: the deployed launch (python -m auditorium.serve, one uvicorn process); asgi: gunicorn + --workers uvicorn workers; wsgi: gunicorn gthread",
    )
    parser.add_argument("--clip-seconds", type=float, default=6.0, help="length of the served clip (16 kHz mono WAV)")
    parser.add_argument("--min-listen", type=float, default=0.5, help="the study's (and the arena's) minimum listening per clip; events are paced to honour it")
    parser.add_argument("--pace-margin", type=float, default=0.05, help="extra seconds per paced step over the minimum")
    parser.add_argument("--pool-size", type=int, default=0, help="DB_POOL_MAX_SIZE for the server (default: sized from its threads)")
    parser.add_argument("--pool-trace", action="store_true", help="attribute every pool checkout to its request and response stage (AUDITORIUM_POOL_TRACE)")
    parser.add_argument("--sqlite", action="store_true", help="the embedded defaults: SQLite, local cache, no Redis (the server is one process)")
    parser.add_argument("--rounds", type=int, default=3, help="baseline + closed-loop phases repeated; ratios are the median of the rounds")
    parser.add_argument("--baseline-requests", type=int, default=4000, help="requests in the /healthz/ baseline phase")
    parser.add_argument("--open-share", type=float, default=0.5, help="open-loop phases offer this share of the closed-loop rate measured just before")
    parser.add_argument("--open-seconds", type=float, default=20.0, help="length of each open-loop phase")
    parser.add_argument("--profile", metavar="DIR", help="record one worker with py-spy during each phase (raw stacks in DIR)")
    parser.add_argument("--cycle", choices=("new", "old"), default="new", help="new: the page's cycle (judgment carries the listening and the next pair); old: the separate endpoints, 7 requests")
    parser.add_argument("--no-arena", action="store_true", help="leave the arena phases out")
    args = parser.parse_args()
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        PROFILE["dir"] = args.profile

    if args.sqlite:
        # The embedded defaults: no DATABASE_URL, no REDIS_URL; one server process (the local cache must see every write).
        os.environ["BENCH_DATABASE_URL"] = "sqlite"
        os.environ.pop("REDIS_URL", None)
        # As `./auditorium demo` runs it: tasks go to kombu's SQLite broker. Without a broker Celery runs each
        # task eagerly inside the request that queued it, and the arena's leaderboard refit (every stored vote,
        # bootstrap included) then ran in a vote's thread every few seconds, its cost growing with the votes.
        os.environ["CELERY_BROKER_URL"] = f"sqla+sqlite:///{ROOT / 'var' / f'{DB_NAME}-celery.sqlite'}"
        if args.server != "serve":
            raise SystemExit("--sqlite runs the embedded defaults, which are served by one process: use --server serve")
    else:
        os.environ["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/3")
    os.environ["MEDIA_ROOT"] = os.environ.get("BENCH_MEDIA_ROOT", str(ROOT / "var" / f"{DB_NAME}-media"))
    # Fixtures (visitor cookies) are hashed here and checked by the server: one salt for both.
    os.environ.setdefault("AUDITORIUM_HASH_SALT", secrets.token_urlsafe(32))
    django_setup(DB_NAME)
    from django.core.cache import cache

    cache.clear()
    users, visitors = build_fixtures(args)
    port = free_port()
    env = dict(os.environ)
    env.pop("DB_POOL_MAX_SIZE", None)  # the server sizes its own pool, as deployed (the in-process fixtures used 64)
    env.update(
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_SECURE_COOKIES="false",
        LOG_LEVEL="WARNING",
        AUDITORIUM_POOL_REPORT="1",
        PYTHONPATH=f"{ROOT}/platform:{ROOT}",
        ARENA_MIN_LISTEN_SECONDS=str(args.min_listen),
        ARENA_VOTE_RATE="100000/60",
        ARENA_IP_VOTE_RATE="100000/60",
        # Every bench client shares one address: the per-address daily caps would refuse the open-loop phase.
        ARENA_IP_DAILY_VOTE_RATE="100000000/86400",
        ARENA_IP_DAILY_BATTLE_RATE="100000000/86400",
        ARENA_DAILY_VOTE_CAP="1000000",
        ARENA_LEADERBOARD_DEBOUNCE_SECONDS="3600",
    )
    if args.pool_trace:
        env["AUDITORIUM_POOL_TRACE"] = "1"
    if args.pool_size:
        env["DB_POOL_MAX_SIZE"] = str(args.pool_size)
    # serve: the deployed launch, one uvicorn process. asgi: gunicorn with uvicorn workers. wsgi: gunicorn's
    # threaded workers (no per-request thread hand-offs, HTTP only), sized as platform/deploy/README.md says.
    threads = 4
    if args.server == "serve":
        command = [sys.executable, "-m", "auditorium.serve", "--port", str(port)]
    elif args.server == "asgi":
        command = [sys.executable, "-m", "gunicorn", "auditorium.asgi:application", "-k", "auditorium.serve.UvicornWorker", "-w", str(args.workers)]
    else:
        env["WEB_THREADS"] = str(threads)
        command = [sys.executable, "-m", "gunicorn", "auditorium.wsgi:application", "-k", "gthread", "--threads", str(threads), "-w", str(args.workers)]
    if args.server != "serve":
        command += ["-b", f"127.0.0.1:{port}", "--log-level", "warning"]
    log_path = ROOT / "var" / f"{DB_NAME}-server.log"
    with open(log_path, "w") as server_log:
        server = subprocess.Popen(command, cwd=ROOT / "platform", env=env, start_new_session=True, stderr=server_log)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for(base_url)
        PROFILE["workers"] = children_of(server.pid) if args.server != "serve" else [server.pid]
        PROFILE["database"] = None if args.sqlite else DB_NAME
        rounds, open_results, submitted, voted, statuses = asyncio.run(drive(args, base_url, users, visitors))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    from annotation.models import Judgment
    from arena.models import Vote

    kind = {"serve": "python -m auditorium.serve (one uvicorn process)", "asgi": f"gunicorn + {args.workers} uvicorn workers", "wsgi": f"gunicorn gthread {args.workers}x{threads}"}[args.server]
    store = "SQLite + local cache (embedded defaults)" if args.sqlite else f"PostgreSQL {DB_NAME}, Redis"
    print(f"server: {kind}; {store}; {args.clients} concurrent clients on 127.0.0.1; {os.cpu_count()} cores shared with the clients")
    print("summary:")
    for phases in rounds:
        for result in phases:
            if result is not None:
                report(result, phases[0])
    for result in open_results:
        report(result, rounds[-1][0])
    for position, name in ((1, f"judgment cycle ({args.cycle})"), (2, "arena cycle")):
        if rounds[0][position] is None:
            continue
        ratios = sorted(rate_of(phases[position]) / rate_of(phases[0]) for phases in rounds)
        cpu = sorted(phases[position]["cpu"]["server"] * 1000 / max(1, phases[position]["count"]) for phases in rounds)
        bare = sorted(phases[0]["cpu"]["server"] * 1000 / max(1, phases[0]["count"]) for phases in rounds)
        pg = sorted(phases[position]["cpu"]["postgres"] * 1000 / max(1, phases[position]["count"]) for phases in rounds)
        print(
            f"{name}: x{statistics.median(ratios):.3f} of baseline rate, median of {len(ratios)} rounds; app CPU per cycle "
            f"{statistics.median(cpu):.1f} ms (= {statistics.median(cpu) / statistics.median(bare):.1f} bare requests of {statistics.median(bare):.2f} ms), "
            f"PostgreSQL CPU per cycle {statistics.median(pg):.1f} ms"
        )
        if position == 1:
            rates = sorted(rate_of(phases[1]) for phases in rounds)
            per = sorted(phases[1]["requests"] / max(1, phases[1]["count"]) for phases in rounds)
            print(f"{name}: {statistics.median(rates):.1f} cycles/s, {statistics.median(per):.2f} requests per cycle (median of {len(rounds)} rounds)")
    errors = {f"{kind} {status}": n for (kind, status), n in sorted(statuses.items()) if status >= 500}
    print(f"responses >= 500: {sum(errors.values())} {errors or ''}; all statuses: {dict(sorted((f'{k} {s}', n) for (k, s), n in statuses.items()))}")
    waits = [json.loads(line.split(" ", 1)[1]) for line in open(log_path) if line.startswith("auditorium-pool ")]
    for figures in waits:
        print(f"pool (process {figures.pop('pid')}): {json.dumps(figures)}")
    stored = Counter(Judgment.objects.filter(pair__study__name="load").values_list("assignment_id", flat=True))
    lost = sum(1 for _, assignment_id in submitted if assignment_id not in stored)
    duplicated = sum(n - 1 for n in stored.values() if n > 1)
    per_pair = Counter(Judgment.objects.filter(pair__study__name="load").values_list("pair_id", flat=True))
    over = sum(1 for n in per_pair.values() if n > 1)
    stored_votes = Counter(Vote.objects.values_list("battle__public_id", flat=True))
    lost_votes = sum(1 for b in voted if stored_votes.get(__import__("uuid").UUID(b), 0) == 0)
    print(f"judgments: {len(submitted)} acknowledged, {sum(stored.values())} stored, lost {lost}, duplicated {duplicated}, over-assigned pairs {over}")
    print(f"votes: {len(voted)} acknowledged, {sum(stored_votes.values())} stored, lost {lost_votes}, duplicated {sum(n - 1 for n in stored_votes.values() if n > 1)}")


def settings_url(settings) -> str:
    return os.environ["DATABASE_URL"]


def children_of(pid: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        children.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return sorted(children)


def wait_for(base_url: str, timeout: float = 60.0) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/healthz/", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the server did not start")


if __name__ == "__main__":
    main()
