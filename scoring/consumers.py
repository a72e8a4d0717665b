"""Live pages: thin consumers that forward pushes (scoring.broadcast) to a run, training or study report page.

Researchers only. Close codes in the application range let a page tell "not allowed" from a
dropped connection. The pages only listen; anything they send is ignored.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotation.access import study_allowed
from annotation.models import Study
from common.roles import is_researcher

from .broadcast import report_group, run_group, training_group
from .models import ScoringRun, TrainingRun
from .selectors import run_allowed, run_progress, training_allowed, training_progress

CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


@database_sync_to_async
def _progress_for(user, run_id: int):
    if not is_researcher(user):
        return "forbidden"
    if not ScoringRun.objects.filter(pk=run_id).exists() or not run_allowed({"run_id": run_id}, user):
        return None
    return run_progress(ScoringRun.objects.get(pk=run_id))


@database_sync_to_async
def _training_progress_for(user, training_id: int):
    if not is_researcher(user):
        return "forbidden"
    if not TrainingRun.objects.filter(pk=training_id).exists() or not training_allowed({"training_id": training_id}, user):
        return None
    return training_progress(TrainingRun.objects.select_related("judge").get(pk=training_id))


@database_sync_to_async
def _study_id_for(user, name: str) -> int | str | None:
    if not is_researcher(user):
        return "forbidden"
    study = Study.objects.filter(name=name).first()
    return study.pk if study_allowed(study=study, user=user) else None


class _GroupConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def join(self, group: str) -> None:
        self.group = group
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def refuse(self, found) -> bool:
        """Close for "forbidden" or a missing object; True when it did."""
        if found == "forbidden":
            await self.close(code=CLOSE_FORBIDDEN)
            return True
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return True
        return False

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        return


class ScoringRunConsumer(_GroupConsumer):
    async def connect(self):
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        found = await _progress_for(self.scope.get("user"), run_id)
        if await self.refuse(found):
            return
        await self.join(run_group(run_id))
        # The state at connect time, so a page opened mid-run is right before the next event.
        await self.send_json({"type": "progress", "progress": found})

    async def run_progress(self, event):
        await self.send_json({"type": "progress", "progress": event["progress"]})


class TrainingConsumer(_GroupConsumer):
    async def connect(self):
        training_id = int(self.scope["url_route"]["kwargs"]["training_id"])
        found = await _training_progress_for(self.scope.get("user"), training_id)
        if await self.refuse(found):
            return
        await self.join(training_group(training_id))
        await self.send_json({"type": "progress", "progress": found})

    async def training_progress(self, event):
        await self.send_json({"type": "progress", "progress": event["progress"]})


class StudyReportConsumer(_GroupConsumer):
    async def connect(self):
        found = await _study_id_for(self.scope.get("user"), self.scope["url_route"]["kwargs"]["name"])
        if await self.refuse(found):
            return
        await self.join(report_group(found))

    async def report_changed(self, event):
        await self.send_json({"type": "changed", "reason": event.get("reason", ""), "at": event.get("at")})
