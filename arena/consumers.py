"""Live leaderboard: the page joins one group and receives every refit."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .broadcast import LEADERBOARD_GROUP
from .selectors import leaderboard_latest


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
