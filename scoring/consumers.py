"""Live progress of a scoring run: a thin consumer that forwards progress events to the run page."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from auditorium.roles import is_researcher

from .models import ScoringRun

CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


def run_group(run_id: int) -> str:
    return f"scoring-run-{run_id}"


@database_sync_to_async
def _progress_for(user, run_id: int):
    if not is_researcher(user):
        return "forbidden"
    run = ScoringRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    from .services import run_progress

    return run_progress(run)


class ScoringRunConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def connect(self):
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        found = await _progress_for(self.scope.get("user"), run_id)
        if found == "forbidden":
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = run_group(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        # The state at connect time, so a page opened mid-run is right before the next event.
        await self.send_json({"type": "progress", "progress": found})

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        return

    async def run_progress(self, event):
        await self.send_json({"type": "progress", "progress": event["progress"]})
