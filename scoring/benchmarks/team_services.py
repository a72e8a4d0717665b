"""Writes for benchmark teams: a team made for a benchmark, its members, and its registered outside judges.

Only researchers make teams and add members (a user is in exactly the teams a researcher put them
in); a team's members and researchers register its outside judges.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from common.errors import ServiceError
from common.roles import is_researcher

from .endpoint_address import endpoint_address
from .models import Benchmark, JudgeEndpoint, Team

NAME_RULE = "letters, digits, hyphens or underscores"


def _check_name(name: str, what: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100 or not all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        raise ServiceError(f"The {what} name must be 1 to 100 {NAME_RULE}.", code="bad_name")
    return name


def team_for_benchmark(*, name: str, benchmark: Benchmark, user) -> Team:
    if not is_researcher(user):
        raise ServiceError("Teams are made by researchers.", code="forbidden", status=403)
    name = _check_name(name, "team")
    if Team.objects.filter(name=name).exists():
        raise ServiceError(f"A team named {name} exists already; pick another name.", code="exists", status=409)
    try:
        with transaction.atomic():
            return Team.objects.create(name=name, benchmark=benchmark, created_by=user)
    except IntegrityError:
        raise ServiceError(f"A team named {name} exists already; pick another name.", code="exists", status=409) from None


def team_members_add(*, team: Team, usernames: list[str], user) -> list:
    """Add existing accounts by user name; an unknown name refuses the whole list (nothing added)."""
    if not is_researcher(user):
        raise ServiceError("Members are added by researchers.", code="forbidden", status=403)
    wanted = [u.strip() for u in usernames if u.strip()]
    if not wanted:
        raise ServiceError("Give one or more user names, separated by commas.", code="no_users")
    found = {u.username: u for u in get_user_model().objects.filter(username__in=wanted, is_active=True)}
    unknown = [u for u in wanted if u not in found]
    if unknown:
        raise ServiceError(f"No active account named {', '.join(unknown[:10])}; nobody was added.", code="unknown_user")
    team.members.add(*found.values())
    return list(found.values())


def is_member(user, team: Team) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and team.members.filter(pk=user.pk).exists()


def endpoint_url_check(url: str) -> str:
    """An http(s) URL with a host and no credentials, on an allowed host when BENCHMARK_ENDPOINT_HOSTS is set, resolving
    to public addresses only (or networks BENCHMARK_ENDPOINT_PRIVATE_NETWORKS allows)."""
    url = (url or "").strip()
    if len(url) > 500:
        raise ServiceError("The endpoint URL is longer than 500 characters.", code="bad_url")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ServiceError("The endpoint URL is not a valid URL.", code="bad_url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServiceError("The endpoint must be an http:// or https:// URL with a host.", code="bad_url")
    if parts.username or parts.password:
        raise ServiceError("Put no user name or password in the endpoint URL: requests are signed with the endpoint's secret.", code="bad_url")
    if any(c.isspace() for c in url) or port == 0:
        raise ServiceError("The endpoint URL is not a valid URL.", code="bad_url")
    allowed = [h.lower() for h in settings.BENCHMARK_ENDPOINT_HOSTS]
    if allowed and parts.hostname.lower() not in allowed:
        raise ServiceError(f"This server sends judge requests only to {', '.join(allowed)}; ask a researcher to allow {parts.hostname}.", code="host_not_allowed")
    # A name that does not resolve yet is checked again, and pinned, when a run starts.
    endpoint_address(url, unresolved_ok=True)
    return url


def endpoint_register(*, team: Team, name: str, url: str, user) -> JudgeEndpoint:
    if not (is_researcher(user) or is_member(user, team)):
        raise ServiceError(f"You are not a member of team {team.name}.", code="not_member", status=403)
    name = _check_name(name, "endpoint")
    url = endpoint_url_check(url)
    if JudgeEndpoint.objects.filter(team=team, name=name).exists():
        raise ServiceError(f"Team {team.name} has an endpoint named {name} already.", code="exists", status=409)
    try:
        with transaction.atomic():
            return JudgeEndpoint.objects.create(team=team, name=name, url=url, created_by=user)
    except IntegrityError:
        raise ServiceError(f"Team {team.name} has an endpoint named {name} already.", code="exists", status=409) from None
