"""Reads for the annotation app."""

from __future__ import annotations

from django.db.models import Q

from auditorium.roles import is_researcher

from .models import Assignment, Clip


def clip_audible_by(*, user, clip: Clip) -> bool:
    """Researchers hear everything; an annotator only the clips (and references) of pairs assigned to them."""
    if not getattr(user, "is_authenticated", False):
        return False
    if is_researcher(user):
        return True
    return Assignment.objects.filter(
        Q(pair__clip_a=clip) | Q(pair__clip_b=clip) | Q(pair__condition__reference=clip), annotator=user
    ).exists()
