"""Websocket routes of every app, collected under /ws/."""

import importlib

websocket_urlpatterns = []
for _app in ("annotation", "scoring", "arena"):
    try:
        _module = importlib.import_module(f"{_app}.routing")
    except ModuleNotFoundError as exc:
        if exc.name != f"{_app}.routing":
            raise
        continue
    websocket_urlpatterns += _module.websocket_urlpatterns
