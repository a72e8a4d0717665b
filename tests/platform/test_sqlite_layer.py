"""The embedded channel layer (common/sqlite_layer.py): the Channels layer contract, and pushes across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from channels.exceptions import ChannelFull

from common.sqlite_layer import SQLiteChannelLayer


@pytest.fixture
def layer(tmp_path):
    return SQLiteChannelLayer(path=str(tmp_path / "channels.sqlite3"), poll_interval=0.02)


def run(coro):
    return asyncio.run(coro)


def test_send_and_receive_on_a_process_local_channel(layer):
    async def scenario():
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "hello", "n": 1, "raw": b"\x00\x01"})
        await layer.send(channel, {"type": "hello", "n": 2})
        first = await asyncio.wait_for(layer.receive(channel), 2)
        second = await asyncio.wait_for(layer.receive(channel), 2)
        await layer.close()
        return first, second

    first, second = run(scenario())
    assert first == {"type": "hello", "n": 1, "raw": b"\x00\x01"} and second["n"] == 2


def test_groups_reach_members_only_until_they_leave(layer):
    async def scenario():
        a, b = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("board", a)
        await layer.group_add("board", b)
        await layer.group_send("board", {"type": "update", "v": 1})
        got = [await asyncio.wait_for(layer.receive(c), 2) for c in (a, b)]
        await layer.group_discard("board", b)
        await layer.group_send("board", {"type": "update", "v": 2})
        got.append(await asyncio.wait_for(layer.receive(a), 2))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(layer.receive(b), 0.5)
        await layer.close()
        return got

    got = run(scenario())
    assert [m["v"] for m in got] == [1, 1, 2]


def test_a_full_channel_refuses_sends_and_group_sends_skip_it(tmp_path):
    layer = SQLiteChannelLayer(path=str(tmp_path / "c.sqlite3"), capacity=2)

    async def scenario():
        channel = "specific.AAAAAAAAAAAAAAAA!x"  # nobody polls it, so its messages stay
        await layer.group_add("g", channel)
        for i in range(2):
            await layer.send(channel, {"type": "m", "i": i})
        with pytest.raises(ChannelFull):
            await layer.send(channel, {"type": "m", "i": 3})
        await layer.group_send("g", {"type": "m", "i": 4})  # dropped, not raised (the group spec)

    run(scenario())
    import sqlite3

    assert sqlite3.connect(layer.path).execute("SELECT count(*) FROM message").fetchone()[0] == 2


def test_expired_messages_are_not_delivered(tmp_path):
    layer = SQLiteChannelLayer(path=str(tmp_path / "c.sqlite3"), expiry=1, poll_interval=0.02)

    async def scenario():
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "old"})
        await asyncio.sleep(1.2)
        await layer.send(channel, {"type": "new"})
        message = await asyncio.wait_for(layer.receive(channel), 2)
        await layer.close()
        return message

    assert run(scenario())["type"] == "new"


def test_a_worker_channel_gives_each_message_to_one_receiver(layer):
    async def scenario():
        for i in range(3):
            await layer.send("jobs", {"type": "job", "i": i})
        got = await asyncio.gather(*(asyncio.wait_for(layer.receive("jobs"), 2) for _ in range(3)))
        return sorted(m["i"] for m in got)

    assert run(scenario()) == [0, 1, 2]


SENDER = """
import asyncio, sys
sys.path.insert(0, "platform")
from common.sqlite_layer import SQLiteChannelLayer
layer = SQLiteChannelLayer(path=sys.argv[1])
asyncio.run(layer.group_send("run-7", {"type": "run.progress", "done": int(sys.argv[2])}))
"""


@pytest.mark.engine
def test_a_group_send_from_another_process_reaches_a_waiting_receiver(layer):
    """The case the in-memory layer cannot serve: the worker process pushes, the web process's consumer hears it."""

    async def scenario():
        channel = await layer.new_channel()
        await layer.group_add("run-7", channel)
        receiving = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(0.1)
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", SENDER, layer.path, "5")
        assert await proc.wait() == 0
        sent = time.monotonic()
        message = await asyncio.wait_for(receiving, 3)
        await layer.close()
        return message, time.monotonic() - sent

    message, latency = run(scenario())
    assert message == {"type": "run.progress", "done": 5}
    assert latency < 1.0


@pytest.mark.engine
def test_the_embedded_settings_choose_the_file_layer_and_redis_keeps_channels_redis(tmp_path):
    probe = "from django.conf import settings; print(settings.CHANNEL_LAYERS['default']['BACKEND'])"
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "auditorium.settings", "DJANGO_DEBUG": "true", "AUDITORIUM_DATA_DIR": str(tmp_path), "PYTHONPATH": "platform"}
    embedded = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {probe}"], env=env, capture_output=True, text=True, check=True)
    assert embedded.stdout.strip() == "common.sqlite_layer.SQLiteChannelLayer"
    redis = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {probe}"], env={**env, "REDIS_URL": "redis://127.0.0.1:1/0"}, capture_output=True, text=True, check=True
    )
    assert redis.stdout.strip() == "channels_redis.core.RedisChannelLayer"


def test_a_process_local_debounce_flag_lapses_with_its_countdown(settings):
    """On the embedded cache the worker cannot clear the web process's flag: it must lapse by itself when the run starts."""
    import time as clock

    from common.debounce import debounced_apply

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "debounce-test"}}
    queued = []

    class Task:
        def apply_async(self, args, countdown):
            queued.append(countdown)

    assert debounced_apply(Task(), key="k", delay=1)
    assert not debounced_apply(Task(), key="k", delay=1)  # covered by the pending run
    clock.sleep(1.1)
    assert debounced_apply(Task(), key="k", delay=1)  # the run has started: a new change needs a new run
    assert debounced_apply(Task(), key="k0", delay=0) and debounced_apply(Task(), key="k0", delay=0)
    assert queued == [1, 1, 0, 0]


def test_messages_for_a_consumer_that_left_are_dropped_not_kept(layer):
    async def scenario():
        gone, staying = await layer.new_channel(), await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(gone))
        await asyncio.sleep(0.05)
        waiting.cancel()  # what Channels does when a websocket closes
        await asyncio.gather(waiting, return_exceptions=True)
        await layer.send(gone, {"type": "late"})
        await layer.send(staying, {"type": "kept"})
        message = await asyncio.wait_for(layer.receive(staying), 2)
        state = next(iter(layer._loops.values()))
        buffered = set(state.buffers)
        await layer.close()
        return message, buffered, gone

    message, buffered, gone = run(scenario())
    assert message["type"] == "kept" and gone not in buffered
