"""Arena settings, each read with a default so the one settings module needs no arena block.

Override any of them in the environment-driven settings (or with override_settings in tests).
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings

DEFAULTS = {
    "ARENA_MIN_LISTEN_SECONDS": 5.0,
    "ARENA_CLIP_SECONDS": 8.0,
    "ARENA_SAMPLE_RATE": 32000,
    "ARENA_TARGET_LUFS": -20.0,
    "ARENA_PROMPT_MIN_CHARS": 3,
    "ARENA_PROMPT_MAX_CHARS": 500,
    "ARENA_LYRICS_MAX_CHARS": 2000,
    "ARENA_FEEDBACK_MAX_CHARS": 2000,
    "ARENA_MODERATION_HOOK": "arena.moderation.rule_based",
    "ARENA_TERMS_VERSION": "1",
    # "count/seconds" windows; per visitor and per salted IP hash.
    "ARENA_VOTE_RATE": "20/60",
    "ARENA_IP_VOTE_RATE": "60/60",
    "ARENA_BATTLE_RATE": "10/60",
    "ARENA_IP_BATTLE_RATE": "30/60",
    "ARENA_EVENT_RATE": "600/60",
    "ARENA_DAILY_VOTE_CAP": 200,
    "ARENA_MAX_EVENTS_PER_BATTLE": 3000,
    "ARENA_TRUST_X_FORWARDED_FOR": False,
    # "weighted" or "informative" (pairs whose board intervals overlap most), with a floor of weighted draws.
    "ARENA_SAMPLING": "weighted",
    "ARENA_SAMPLING_FLOOR": 0.25,
    "ARENA_LEADERBOARD_ROUNDS": 1000,
    "ARENA_LEADERBOARD_SEED": 0,
    "ARENA_LEADERBOARD_MIN_VOTES": 20,
    "ARENA_LEADERBOARD_BOTH_BAD": "exclude",
    "ARENA_LEADERBOARD_ANCHOR": None,
    "ARENA_LEADERBOARD_ANCHOR_RATING": 1000.0,
    "ARENA_LEADERBOARD_DEBOUNCE_SECONDS": 10,
    "ARENA_HTTP_TIMEOUT": 120.0,
    "ARENA_HEALTH_TIMEOUT": 5.0,
    "ARENA_VISITOR_COOKIE": "arena_visitor",
}


def get(name: str):
    return getattr(settings, name, DEFAULTS[name])


def parse_rate(value: str) -> tuple[int, int]:
    """'20/60' -> (20 requests, 60 seconds)."""
    count, _, seconds = str(value).partition("/")
    return int(count), int(seconds or 60)


def salted_hash(label: str, value: str, *, length: int = 32) -> str:
    """HMAC of value under the project salt; the label keeps hashes of different things unlinkable."""
    salt = str(getattr(settings, "AUDITORIUM_HASH_SALT", settings.SECRET_KEY)).encode()
    return hmac.new(salt, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()[:length]
