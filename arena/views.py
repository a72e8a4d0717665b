"""HTML pages of the arena and the opaque battle audio."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe

from common.ranged import ranged_file_response

from .audio import battle_audio_fetch_record, battle_audio_path
from .models import Battle
from .release_builds import release_visible
from .selectors import battle_to_resume, leaderboard_latest, rating_history
from .services import visitor_for_cookie


@require_safe
@ensure_csrf_cookie
def arena(request: HttpRequest) -> HttpResponse:
    visitor = visitor_for_cookie(request.COOKIES.get(settings.ARENA_VISITOR_COOKIE))
    context = {
        "terms_version": settings.ARENA_TERMS_VERSION,
        "needs_terms": visitor is None or visitor.terms_version != settings.ARENA_TERMS_VERSION,
        "min_listen_seconds": settings.ARENA_MIN_LISTEN_SECONDS,
        "prompt_max_chars": settings.ARENA_PROMPT_MAX_CHARS,
        "lyrics_max_chars": settings.ARENA_LYRICS_MAX_CHARS,
        # A reload mid-battle brings the same battle back: the server knows it from the visitor cookie.
        "resume": battle_to_resume(visitor),
    }
    return render(request, "arena/arena.html", context)


@require_safe
def leaderboard(request: HttpRequest) -> HttpResponse:
    board = leaderboard_latest() or {"boards": {}, "computed_at": None}
    return render(request, "arena/leaderboard.html", {"board": board, "release_visible": release_visible(request.user)})


@require_safe
def leaderboard_history(request: HttpRequest) -> HttpResponse:
    """Each system's rating over the boards' snapshots (monthly and on demand)."""
    system = request.GET.get("system") or None
    return render(request, "arena/history.html", {"history": rating_history(), "system": system})


@require_safe
def battle_audio(request: HttpRequest, public_id, side: str) -> HttpResponse:
    """/arena/audio/<battle>/<a|b>/: the same URL shape, headers, size and file layout whatever system made the clip."""
    if side not in ("a", "b"):
        raise Http404("No such audio.")
    battle = get_object_or_404(Battle.objects.select_related("clip_a", "clip_b"), public_id=public_id)
    visitor = visitor_for_cookie(request.COOKIES.get(settings.ARENA_VISITOR_COOKIE))
    clip = battle.clip_for(side)
    if visitor is None or visitor.pk != battle.visitor_id or clip is None or battle.status not in (Battle.Status.READY, Battle.Status.VOTED):
        raise Http404("No such audio.")
    # One shape for every system (arena/blind.py): same size, header and type per battle length.
    # The ETag names the battle side, not the clip: a content hash would let a visitor
    # recognise a catalog clip heard before.
    path = battle_audio_path(battle=battle, side=side)
    started = timezone.now()

    def sent(first: int, last: int, total: int) -> None:
        # What reached the visitor is what can have been heard: the vote checks listening against it.
        battle_audio_fetch_record(battle=battle, side=side, served=(first, last, total), now=started)

    response = ranged_file_response(request, str(path), etag=f"{battle.public_id}-{side}", content_type="audio/wav", on_sent=sent, proof_at=started)
    response["Cache-Control"] = "private, no-store"
    return response
