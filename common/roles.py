"""Roles are Django groups; superusers count as every role."""

from __future__ import annotations

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ALL_ROLES = (ANNOTATOR, RESEARCHER, ADMIN)


def has_role(user, *roles: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name__in=roles).exists()


def is_researcher(user) -> bool:
    """Researchers and admins may read reports, all judgments and any clip."""
    return has_role(user, RESEARCHER, ADMIN) or getattr(user, "is_staff", False)


def is_admin(user) -> bool:
    return has_role(user, ADMIN) or getattr(user, "is_superuser", False)


class IsResearcher:
    """DRF permission: researchers and admins only (reports, scoring, exports)."""

    message = "This is open to researchers and admins only."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)

    def has_object_permission(self, request, view, obj) -> bool:
        return is_researcher(request.user)
