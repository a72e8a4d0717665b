"""How many project files one vote runs through: the POST, the leaderboard refit it queues, the push to an open page.

Every file on that path is one more place a reader opens to follow a vote, so the count is held
down. A profiler records which project files (outside tests and migrations) have Python code
running between the POST and the page receiving the new board; the second vote of the test is
measured, so module imports of the first one do not count.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from arena.models import LeaderboardSnapshot, Vote

from .conftest import arena_system, listen, ready_battle, visitor_client, visitor_with_terms

ROOT = Path(__file__).resolve().parents[2]
# Files the path may run through; the number it was brought down to, not a target to grow into. 21 until the
# refit gained the style-controlled, category and screened boards: arena/style.py, arena/boards.py and the
# language rule studies use (scoring/results_section.py script_of), pure computations with no I/O.
MAX_FILES = 24
SKIPPED = {".venv", "tests", "migrations"}


def project_file(filename: str) -> str | None:
    """The file's path inside the project, or None for library, test and migration code."""
    try:
        relative = Path(filename).relative_to(ROOT)
    except ValueError:
        return None
    if relative.suffix != ".py" or SKIPPED & set(relative.parts):
        return None
    return str(relative)


class PathRecorder:
    """Project files whose code runs while recording, and the calls from one such file into another.

    A call's caller is the nearest project frame above it (library frames between them, such as
    Django's request handling, are skipped); the profiler is set in this thread and in any thread
    started while it records (the event loop that runs the websocket consumer)."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.calls: Counter[tuple[str, str]] = Counter()
        self.recording = False

    def _profile(self, frame, event, arg):
        if event != "call" or not self.recording:
            return
        callee = project_file(frame.f_code.co_filename)
        if callee is None:
            return
        self.files.add(callee)
        caller = frame.f_back
        while caller is not None:
            name = project_file(caller.f_code.co_filename)
            if name is not None:
                if name != callee:
                    self.calls[(name, callee)] += 1
                return
            caller = caller.f_back

    def __enter__(self):
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        threading.setprofile(None)


def area(path: str) -> str:
    """The layer a file belongs to: an app, the shared package, or the project package (the wiring)."""
    parts = Path(path).parts
    return "auditorium" if parts[0] == "platform" else parts[0]


def heard_battle(visitor, a, b):
    battle = ready_battle(visitor, a, b, ready_ago=120)
    start = timezone.now() - timedelta(seconds=100)
    need = float(settings.ARENA_MIN_LISTEN_SECONDS) + 1
    listen(battle, visitor, side="a", seconds=need, start=start)
    listen(battle, visitor, side="b", seconds=need, start=start + timedelta(seconds=need + 1))
    return battle


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_a_vote_its_refit_and_push_run_through_few_project_files(settings):
    settings.ARENA_LEADERBOARD_DEBOUNCE_SECONDS = 0
    if not settings.REDIS_URL:
        # The layer the test settings name, set again: a live-process test earlier in the same worker may have left
        # the embedded file layer's backend behind, which adds its file to the count.
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    from auditorium.asgi import application

    visitor, cookie = visitor_with_terms()
    a, b = arena_system("path-a"), arena_system("path-b")
    battles = [heard_battle(visitor, a, b), heard_battle(visitor, a, b)]
    client = visitor_client(cookie)

    def vote(battle, choice):
        response = client.post(reverse("arena:api-battle-vote", kwargs={"public_id": battle.public_id}), {"vote": choice}, content_type="application/json")
        assert response.status_code == 201, response.content

    recorder = PathRecorder()

    async def scenario():
        page = WebsocketCommunicator(application, "/ws/arena/leaderboard/", headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")])
        connected, _ = await page.connect()
        assert connected
        # The first vote loads whatever the path imports lazily; its board reaches the page too.
        await sync_to_async(vote)(battles[0], "a")
        assert (await page.receive_json_from(timeout=10))["payload"]["boards"]["instrumental"]["rows"][0]["votes"] == 1
        recorder.recording = True
        await sync_to_async(vote)(battles[1], "b")
        pushed = await page.receive_json_from(timeout=10)
        recorder.recording = False
        await page.disconnect()
        return pushed

    with recorder:
        pushed = async_to_sync(scenario)()

    # The path ran: the vote is stored, refitted into a snapshot, and that snapshot reached the page.
    assert Vote.objects.count() == 2
    latest = LeaderboardSnapshot.objects.order_by("-id").first()
    assert latest.votes == 2 and pushed["type"] == "leaderboard" and pushed["payload"]["computed_at"] == latest.payload["computed_at"]

    files = sorted(recorder.files)
    crossing = {pair: n for pair, n in recorder.calls.items() if area(pair[0]) != area(pair[1])}
    print(f"\nvote path: {len(files)} project files")
    print("\n".join(f"  {name}" for name in files))
    print(f"calls between files: {len(recorder.calls)} caller/callee pairs, {sum(recorder.calls.values())} calls")
    print(f"calls between an app, common/ and the wiring: {len(crossing)} pairs, {sum(crossing.values())} calls")
    print("\n".join(f"  {src} -> {dst}: {n}" for (src, dst), n in sorted(crossing.items())))
    # The recorder saw the ends of the path: the API view, the task, the consumer that pushes.
    assert {"arena/api.py", "arena/tasks.py", "arena/consumers.py"} <= set(files), files
    assert len(files) <= MAX_FILES, f"the vote path runs through {len(files)} project files (at most {MAX_FILES}): {files}"
