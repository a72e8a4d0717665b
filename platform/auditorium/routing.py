"""Websocket routes of every app, collected under /ws/."""

import importlib

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path


class UnknownPath(AsyncWebsocketConsumer):
    """Refuses a handshake to a path no app serves. Without it the router raises, the server logs a
    traceback for every mistyped or probing URL, and the client sees the same refusal anyway."""

    async def connect(self):
        await self.close()


websocket_urlpatterns = []
for _app in ("annotation", "scoring", "arena"):
    try:
        _module = importlib.import_module(f"{_app}.routing")
    except ModuleNotFoundError as exc:
        if exc.name != f"{_app}.routing":
            raise
        continue
    websocket_urlpatterns += _module.websocket_urlpatterns

# Last, so it only catches what no app claimed.
websocket_urlpatterns.append(re_path(r"", UnknownPath.as_asgi()))
