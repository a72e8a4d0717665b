"""Live refresh of open report pages: a thin consumer that forwards "report changed" events."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotation.models import Study
from auditorium.roles import is_researcher

from .report import report_group

# Close codes in the application range, so the page can tell "not allowed" from a dropped connection.
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


@database_sync_to_async
def _study_id_for(user, name: str) -> int | str | None:
    if not is_researcher(user):
        return "forbidden"
    return Study.objects.filter(name=name).values_list("id", flat=True).first()


class StudyReportConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def connect(self):
        found = await _study_id_for(self.scope.get("user"), self.scope["url_route"]["kwargs"]["name"])
        if found == "forbidden":
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = report_group(found)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        # The page only listens; anything it sends is ignored.
        return

    async def report_changed(self, event):
        await self.send_json({"type": "changed", "reason": event.get("reason", ""), "at": event.get("at")})
