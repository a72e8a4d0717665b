"""A Channels layer in one SQLite file: pushes cross processes on one machine without Redis.

The embedded set-up runs the web server and the Celery worker as separate processes; the in-memory
layer lives inside one process, so a push sent by the worker never reached an open page. This layer
keeps messages and group memberships in a small SQLite file of its own (WAL mode, never the app's
database, so it works beside PostgreSQL too) that every process on the machine opens.

Receiving: each event loop owns a random prefix; its channels are named "<prefix>!<uuid>" and one
poller per loop reads the rows addressed to the prefix every `poll_interval` seconds (an indexed
read of a near-empty table) and hands them to the waiting consumers. Only that poller deletes its
rows, so delivery needs no locking. Memberships of live channels are refreshed by their poller; a
process that died without leaving its groups drops out after `group_expiry` seconds.
Messages are msgpack, as channels_redis writes them, so what works over Redis works here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sqlite3
import string
import threading
import time
from pathlib import Path

import msgpack
from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

logger = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS message (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    address TEXT NOT NULL,   -- the poller's prefix for process-local channels, else the channel itself
    channel TEXT NOT NULL,
    body BLOB NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS message_address ON message (address, id);
CREATE INDEX IF NOT EXISTS message_channel ON message (channel);
CREATE TABLE IF NOT EXISTS membership (
    grp TEXT NOT NULL,
    channel TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (grp, channel)
);
CREATE INDEX IF NOT EXISTS membership_channel ON membership (channel);
"""


PREFIX_LENGTH = 16


def _address(channel: str) -> str:
    """Where a message for channel is filed: "<loop prefix>!" for a process-local channel, else the channel."""
    if "!" not in channel:
        return channel
    head = channel[: channel.index("!")]
    return head[-PREFIX_LENGTH:] + "!"


class _Loop:
    """What one event loop receives: its prefix, the buffered messages per channel, and its poller."""

    def __init__(self) -> None:
        self.prefix = "".join(random.choices(string.ascii_letters + string.digits, k=PREFIX_LENGTH))
        self.buffers: dict[str, asyncio.Queue] = {}
        # Channels whose consumer has gone (monotonic time it went): late messages for them are dropped,
        # not buffered for no one. Kept past any membership of theirs could expire, then forgotten.
        self.gone: dict[str, float] = {}
        self.waiting = 0
        self.poller: asyncio.Task | None = None


class SQLiteChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        path: str,
        expiry: int = 60,
        group_expiry: int = 120,
        capacity: int = 100,
        channel_capacity=None,
        poll_interval: float = 0.1,
    ):
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity)
        self.path = str(path)
        self.group_expiry = group_expiry
        self.poll_interval = poll_interval
        self._local = threading.local()
        self._loops: dict[asyncio.AbstractEventLoop, _Loop] = {}
        self._last_clean = 0.0

    # --- storage (runs in worker threads: a busy file must not stall the event loop) ---------------

    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _write(self, statements) -> None:
        conn = self._db()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _send_rows(self, targets: list[str], body: bytes, *, strict: bool) -> None:
        """Queue body for each target channel; a full channel raises (send) or is skipped (group_send)."""
        conn = self._db()
        expires = time.time() + self.expiry
        conn.execute("BEGIN IMMEDIATE")
        try:
            for channel in targets:
                pending = conn.execute("SELECT count(*) FROM message WHERE channel = ? AND expires >= ?", (channel, time.time())).fetchone()[0]
                if pending >= self.get_capacity(channel):
                    if strict:
                        raise ChannelFull(channel)
                    continue
                address = _address(channel)
                conn.execute("INSERT INTO message (address, channel, body, expires) VALUES (?, ?, ?, ?)", (address, channel, body, expires))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _group_members(self, group: str) -> list[str]:
        rows = self._db().execute("SELECT channel FROM membership WHERE grp = ? AND expires >= ?", (group, time.time())).fetchall()
        return [r[0] for r in rows]

    def _take(self, address: str) -> list[tuple[str, bytes]]:
        """The live messages addressed to a poller's prefix, oldest first, removed as they are read."""
        conn = self._db()
        rows = conn.execute("SELECT id, channel, body, expires FROM message WHERE address = ? ORDER BY id LIMIT 500", (address,)).fetchall()
        if not rows:
            return []
        self._write([("DELETE FROM message WHERE address = ? AND id <= ?", (address, rows[-1][0]))])
        now = time.time()
        return [(channel, body) for _, channel, body, expires in rows if expires >= now]

    def _take_one(self, channel: str) -> bytes | None:
        """One message of a channel shared by several receivers (a worker channel): claimed under the write lock."""
        conn = self._db()
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT id, body FROM message WHERE address = ? AND expires >= ? ORDER BY id LIMIT 1", (channel, time.time())
            ).fetchone()
            if row is not None:
                conn.execute("DELETE FROM message WHERE id = ?", (row[0],))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return None if row is None else row[1]

    def _keep_alive(self, address: str) -> None:
        now = time.time()
        statements = [("UPDATE membership SET expires = ? WHERE instr(channel, ?) > 0", (now + self.group_expiry, "." + address))]
        if now - self._last_clean > 30:
            self._last_clean = now
            statements += [("DELETE FROM message WHERE expires < ?", (now,)), ("DELETE FROM membership WHERE expires < ?", (now,))]
        self._write(statements)

    # --- the layer API ------------------------------------------------------------------------------

    def _loop(self) -> _Loop:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            # A loop that has closed (async_to_sync makes one per call) leaves nothing behind.
            for old in [old for old in self._loops if old.is_closed()]:
                del self._loops[old]
            state = self._loops[loop] = _Loop()
        return state

    async def new_channel(self, prefix: str = "specific") -> str:
        return f"{prefix}.{self._loop().prefix}!{os.urandom(12).hex()}"

    async def send(self, channel: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        body = msgpack.packb(message, use_bin_type=True)
        await asyncio.to_thread(self._send_rows, [channel], body, strict=True)

    async def receive(self, channel: str) -> dict:
        self.require_valid_channel_name(channel)
        if "!" not in channel:
            while True:
                body = await asyncio.to_thread(self._take_one, channel)
                if body is not None:
                    return msgpack.unpackb(body, raw=False)
                await asyncio.sleep(self.poll_interval)
        state = self._loop()
        assert _address(channel) == state.prefix + "!", "channel was not made by this event loop"
        queue = state.buffers.setdefault(channel, asyncio.Queue())
        state.waiting += 1
        try:
            if state.poller is None or state.poller.done():
                state.poller = asyncio.get_running_loop().create_task(self._poll(state))
            return await queue.get()
        except asyncio.CancelledError:
            # The consumer is gone (its socket closed): what is or will be buffered for it has no reader.
            state.buffers.pop(channel, None)
            state.gone[channel] = time.monotonic()
            raise
        finally:
            state.waiting -= 1

    async def _poll(self, state: _Loop) -> None:
        address = state.prefix + "!"
        idle_since, refreshed, pruned = time.monotonic(), 0.0, 0.0
        while True:
            try:
                if time.monotonic() - refreshed > self.group_expiry / 3:
                    await asyncio.to_thread(self._keep_alive, address)
                    refreshed = time.monotonic()
                for channel, body in await asyncio.to_thread(self._take, address):
                    if channel not in state.gone:
                        state.buffers.setdefault(channel, asyncio.Queue()).put_nowait(msgpack.unpackb(body, raw=False))
                if state.gone and time.monotonic() - pruned > 30:
                    pruned = time.monotonic()
                    forget = pruned - 2 * max(self.group_expiry, self.expiry)
                    state.gone = {c: at for c, at in state.gone.items() if at > forget}
            except sqlite3.Error:
                # A locked or briefly missing file: the rows stay put and the next round reads them.
                logger.warning("channel layer file %s could not be read", self.path, exc_info=True)
            if state.waiting:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 30:
                return
            await asyncio.sleep(self.poll_interval)

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await asyncio.to_thread(
            self._write,
            [("INSERT OR REPLACE INTO membership (grp, channel, expires) VALUES (?, ?, ?)", (group, channel, time.time() + self.group_expiry))],
        )

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await asyncio.to_thread(self._write, [("DELETE FROM membership WHERE grp = ? AND channel = ?", (group, channel))])

    async def group_send(self, group: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        members = await asyncio.to_thread(self._group_members, group)
        if members:
            body = msgpack.packb(message, use_bin_type=True)
            await asyncio.to_thread(self._send_rows, members, body, strict=False)

    async def flush(self) -> None:
        await asyncio.to_thread(self._write, [("DELETE FROM message", ()), ("DELETE FROM membership", ())])
        await self.close()

    async def close(self) -> None:
        for state in self._loops.values():
            if state.poller is not None and not state.poller.done() and state.poller.get_loop() is asyncio.get_running_loop():
                state.poller.cancel()
        self._loops = {loop: state for loop, state in self._loops.items() if loop is not asyncio.get_running_loop()}
