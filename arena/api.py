"""JSON API of the arena page. Visitors are anonymous: the arena cookie identifies them, and CSRF is enforced for them too."""

from __future__ import annotations

import random
import uuid

from django.conf import settings
from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import BaseAuthentication, CSRFCheck
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api_fields import MAX_ID
from common.api_input import validated
from common.precompiled import Precompiled
from common.proxy import client_address
from common.rates import salted_hash

from . import services
from .models import ArenaPrompt, Battle, ListenEvent
from .selectors import battle_state, leaderboard_latest, rating_history
from .services import ArenaError


def client_ip_hash(request) -> str:
    """Salted hash of the client address; the raw address goes no further than this function."""
    # X-Forwarded-For counts only from a trusted proxy (common/proxy.py); ARENA_TRUST_X_FORWARDED_FOR is the older name of AUDITORIUM_BEHIND_PROXY here.
    ip = client_address(request, trust_forwarded=bool(settings.AUDITORIUM_BEHIND_PROXY or settings.ARENA_TRUST_X_FORWARDED_FOR))
    return salted_hash("ip", ip) if ip else ""


class VisitorAuthentication(BaseAuthentication):
    """request.auth = the Visitor for the arena cookie (or None); unsafe methods need a valid CSRF token."""

    def authenticate(self, request):
        underlying = request._request
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            check = CSRFCheck(lambda req: None)
            check.process_request(underlying)
            reason = check.process_view(underlying, None, (), {})
            if reason:
                raise PermissionDenied(f"CSRF failed: {reason}")
        visitor = services.visitor_for_cookie(underlying.COOKIES.get(settings.ARENA_VISITOR_COOKIE))
        return (None, visitor) if visitor is not None else None


class VisitorAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the arena cookie in the OpenAPI schema."""

    target_class = "arena.api.VisitorAuthentication"
    name = "arenaVisitor"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": settings.ARENA_VISITOR_COOKIE}


class ArenaApi(APIView):
    authentication_classes = [VisitorAuthentication]
    permission_classes = [AllowAny]

    def visitor(self, request):
        return request.auth


class TermsAcceptApi(ArenaApi):
    class TermsInput(serializers.Serializer):
        accept = serializers.BooleanField()
        version = serializers.CharField(max_length=20)

    @extend_schema(request=TermsInput, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        data = self.TermsInput(data=request.data)
        data.is_valid(raise_exception=True)
        if not data.validated_data["accept"]:
            raise ArenaError("The arena can only be used after accepting the terms.", code="terms_required", status=403)
        cookie_name = settings.ARENA_VISITOR_COOKIE
        visitor, cookie = services.visitor_accept_terms(cookie=request.COOKIES.get(cookie_name), version=data.validated_data["version"])
        response = Response({"accepted": True, "terms_version": visitor.terms_version})
        response.set_cookie(cookie_name, cookie, max_age=365 * 24 * 3600, httponly=True, samesite="Lax", secure=request.is_secure())
        return response


class PromptRandomApi(ArenaApi):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        ids = list(ArenaPrompt.objects.filter(is_prebaked=True, is_active=True).values_list("id", flat=True))
        if not ids:
            raise ArenaError("The prompt pool is empty; type a prompt instead.", code="no_prompts", status=404)
        prompt = ArenaPrompt.objects.get(pk=random.SystemRandom().choice(ids))
        return Response({"prompt": prompt.text, "lyrics": prompt.lyrics})


class BattleCreateApi(ArenaApi):
    class BattleInput(serializers.Serializer):
        prompt = serializers.CharField(allow_blank=True, trim_whitespace=True, max_length=20000)
        lyrics = serializers.CharField(allow_blank=True, required=False, default="", max_length=50000)

    @extend_schema(request=BattleInput, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        data = self.BattleInput(data=request.data)
        data.is_valid(raise_exception=True)
        battle = services.battle_create(visitor=self.visitor(request), ip_hash=client_ip_hash(request), **data.validated_data)
        battle.refresh_from_db()
        return Response(battle_state(battle), status=status.HTTP_201_CREATED)


def _battle_query(*, public_id):
    return Battle.objects.select_related("system_a__system", "system_b__system", "clip_a", "clip_b").filter(public_id=public_id).order_by("pk")[:1]


# Every request of an arena cycle but the vote reads its battle this way: compiling this five-table
# query was a quarter of the events post (py-spy, bench/load.py), so it is built once per process.
BATTLE = Precompiled(_battle_query, {"public_id": uuid.UUID("7300a7e1-0000-4000-8000-000000000041")})


def _own_battle(request, public_id) -> Battle:
    battle = BATTLE.first(public_id=public_id)
    if battle is None:
        raise Http404("No such battle.")
    # 404, not 403: someone else's battle id tells a prober nothing.
    if request.auth is None or battle.visitor_id != request.auth.pk:
        raise ArenaError("No such battle.", code="not_found", status=404)
    return battle


class BattleDetailApi(ArenaApi):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, public_id):
        return Response(battle_state(_own_battle(request, public_id)))


class ListenEventsApi(ArenaApi):
    class EventSerializer(serializers.Serializer):
        seq = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="One higher for every event the page sends for this battle; a number already received is ignored.")
        side = serializers.ChoiceField(choices=["a", "b"])
        kind = serializers.ChoiceField(choices=list(ListenEvent.Kind.values))
        client_time = serializers.FloatField(required=False, allow_null=True)
        position = serializers.FloatField(required=False, allow_null=True, min_value=0)

    class EventsInput(serializers.Serializer):
        events = serializers.ListField(child=serializers.DictField(), max_length=50, required=False, default=list)
        receipts = serializers.ListField(
            child=serializers.DictField(), max_length=8, required=False, default=list,
            help_text="Proof of receiving a clip: {side, token: the audio response's Audio-Proof header, bytes: base64 of its bytes at the token's ranges, in order}.",
        )

        def validate(self, attrs):
            if not attrs["events"] and not attrs["receipts"]:
                raise serializers.ValidationError("Send at least one event or one receipt.")
            return attrs

    @extend_schema(request=EventsInput, responses=OpenApiTypes.OBJECT)
    def post(self, request, public_id):
        battle = _own_battle(request, public_id)
        data = self.EventsInput(data=request.data)
        data.is_valid(raise_exception=True)
        events = self.EventSerializer(data=data.validated_data["events"], many=True)
        events.is_valid(raise_exception=True)
        result = services.listen_events_record(
            battle=battle, visitor=self.visitor(request), events=[dict(e) for e in events.validated_data], receipts=data.validated_data["receipts"]
        )
        need = float(settings.ARENA_MIN_LISTEN_SECONDS)
        heard = result["heard"]
        return Response({**result, "min_listen_seconds": need, "can_vote": heard["a"] >= need and heard["b"] >= need})


class VoteApi(ArenaApi):
    class VoteInput(serializers.Serializer):
        vote = serializers.CharField(max_length=20)
        feedback = serializers.CharField(allow_blank=True, required=False, default="", max_length=20000)
        idempotency_key = serializers.CharField(allow_blank=True, required=False, default="", max_length=100)

    @extend_schema(request=VoteInput, responses=OpenApiTypes.OBJECT)
    def post(self, request, public_id):
        if request.auth is None:
            raise ArenaError("No such battle.", code="not_found", status=404)
        data = validated(self.VoteInput, request.data)
        vote_input = {
            "visitor": self.visitor(request),
            "choice": data["vote"],
            "feedback": data["feedback"],
            "ip_hash": client_ip_hash(request),
            "idempotency_key": data["idempotency_key"],
        }
        cast = services.vote_fast(public_id=public_id, **vote_input)
        if cast is not None:
            vote, battle = cast
            return Response(battle_state(battle, vote=vote), status=status.HTTP_201_CREATED)
        # Not a plain vote (a retry, a re-vote, a battle not ready or not theirs): the full path says which.
        battle = _own_battle(request, public_id)
        vote = services.vote_submit(battle=battle, limits_counted=True, **vote_input)
        battle.refresh_from_db()
        replayed = getattr(vote, "replayed", False)
        return Response(battle_state(battle), status=status.HTTP_200_OK if replayed else status.HTTP_201_CREATED)


class LeaderboardApi(ArenaApi):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(leaderboard_latest() or {"boards": {}, "computed_at": None})


class LeaderboardHistoryApi(ArenaApi):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        """Ratings over the boards' snapshots; ?system=NAME for one system."""
        return Response(rating_history(system=request.query_params.get("system") or None))
