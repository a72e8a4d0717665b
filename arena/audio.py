"""A battle side's audio as sent to its visitor, and the visitor's proof of receiving it (common/audio_proof.py).

The listening rules (common/listening.py) count only audio sent and proven: the audio endpoint notes each response
(BattleAudioFetch), the page answers each response's Audio-Proof header with a receipt (BattleAudioReceipt).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from common import audio_proof
from common.deferred import deferred_rows

from .blind import blind_wav
from .models import Battle, BattleAudioFetch, BattleAudioReceipt
from .selectors import SIDES, battle_audio_url


def receipts_store(*, battle: Battle, receipts, now=None) -> int:
    """Check the receipts by the proof's one rule (common.audio_proof.receipts_verify) and keep them; how many were new."""
    if not receipts:
        audio_proof.receipts_verify(receipts=receipts, sides=(), serves=None, sent_after=None)  # a non-list is refused with the reason
        return 0
    urls = {side: battle_audio_url(battle, side) for side in SIDES}

    def sent_after(side, issued):
        return BattleAudioFetch.objects.filter(battle=battle, side=side, served_at__gt=issued).values_list("first_byte", "last_byte")

    new = 0
    for side, challenge in audio_proof.receipts_verify(receipts=receipts, sides=SIDES, serves=lambda side, path: path == urls[side], sent_after=sent_after):
        _, created = BattleAudioReceipt.objects.get_or_create(
            battle=battle, side=side, first_byte=challenge["first"], last_byte=challenge["last"], defaults={"received_at": now or timezone.now()}
        )
        new += created
    return new


def battle_audio_path(*, battle: Battle, side: str):
    """The side's clip in the one shape every battle clip is served in (arena/blind.py)."""
    return blind_wav(battle.clip_for(side), seconds=battle.duration_requested, rate=int(settings.ARENA_SAMPLE_RATE))


def battle_audio_fetch_record(*, battle: Battle, side: str, served: tuple[int, int, int] | None, now=None) -> None:
    """Note the bytes of a side's audio sent to the battle's visitor (nothing for a 304 or HEAD)."""
    if served is None:
        return
    first, last, total = served
    # Queued under the ASGI server and written in batches; readers flush first (common/deferred.py).
    deferred_rows.add(BattleAudioFetch(battle=battle, side=side, first_byte=first, last_byte=last, total_bytes=total, served_at=now or timezone.now()))
