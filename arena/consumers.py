"""Live leaderboard: the page joins one group and receives every refit, pushed after commit by the refit task and the leaderboard command."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer

from .selectors import leaderboard_latest

LEADERBOARD_GROUP = "arena.leaderboard"
log = logging.getLogger(__name__)


def leaderboard_broadcast(payload: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(LEADERBOARD_GROUP, {"type": "leaderboard.update", "payload": payload})
    except Exception:  # a missing Redis must not fail the refit; pages still load the stored board
        log.exception("leaderboard broadcast failed")


class LeaderboardConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        await self.channel_layer.group_add(LEADERBOARD_GROUP, self.channel_name)
        await self.accept()
        payload = await database_sync_to_async(leaderboard_latest)()
        if payload is not None:
            await self.send_json({"type": "leaderboard", "payload": payload})

    async def disconnect(self, code):
        await self.channel_layer.group_discard(LEADERBOARD_GROUP, self.channel_name)

    async def receive_json(self, content, **kwargs):
        # The socket is one-way; anything the page sends is ignored.
        return

    async def leaderboard_update(self, event):
        await self.send_json({"type": "leaderboard", "payload": event["payload"]})
