"""Push to open pages over Channels; called after commit by tasks and services."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

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
