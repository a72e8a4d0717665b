"""DRF API of the rating page: next item, listening events, submit (idempotent), skip."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import cached
from annotation.services import crowd_gate_check
from common.api_input import validated

from . import selectors, services


class RatingNextApi(APIView):
    """Lock and return the annotator's next item of a rating study; the same one comes back until rated, skipped or lapsed."""

    @extend_schema(
        request=None,
        responses=inline_serializer("NextRatingItem", {"assignment": serializers.DictField(allow_null=True), "detail": serializers.CharField(required=False)}),
    )
    def post(self, request, name: str):
        study = cached.study_by_name(name)
        if study is None:
            raise NotFound("No such study.")
        crowd_gate_check(study=study, annotator=request.user)
        assignment = services.rating_next(study=study, annotator=request.user)
        progress = selectors.rating_progress(study=study, annotator=request.user)
        if assignment is None:
            detail = "This study is closed." if not study.is_active else f"You rated {progress['done']} of {progress['target']} items: every item this study has for you. Thank you."
            return Response({"assignment": None, "detail": detail, "progress": progress})
        return Response({"assignment": selectors.assignment_payload(assignment, progress=progress)})


class RatingListeningApi(APIView):
    @extend_schema_serializer(component_name="RatingListeningInput")
    class Input(serializers.Serializer):
        events = serializers.ListField(child=serializers.DictField(), max_length=50, required=False, default=list)
        # Answers to the clips' Audio-Proof headers (docs/listening.md): only proven fetches count as heard.
        receipts = serializers.ListField(child=serializers.DictField(), max_length=8, required=False, default=list)

        def validate(self, attrs):
            if not attrs["events"] and not attrs["receipts"]:
                raise serializers.ValidationError("Send events, receipts, or both.")
            return attrs

    @extend_schema(request=Input, responses=inline_serializer("RatingListening", {"accepted": serializers.IntegerField(), "heard": serializers.DictField()}))
    def post(self, request, assignment_id: int):
        data = validated(self.Input, request.data)
        return Response(services.rating_listening_record(assignment_id=assignment_id, annotator=request.user, events=data["events"], receipts=data["receipts"]))


class RatingSubmitApi(APIView):
    @extend_schema_serializer(component_name="RatingSubmitInput")
    class Input(serializers.Serializer):
        idempotency_key = serializers.CharField(max_length=100)
        ratings = serializers.DictField(child=serializers.DictField(), help_text='{"A": {"musicality": 4, "alignment": 3}, ...} by the letters shown.')
        rationale = serializers.CharField(max_length=5000, allow_blank=True, required=False, default="")
        listening_log = serializers.DictField(required=False, default=None, allow_null=True)
        time_on_page_ms = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, allow_null=True, default=None)

    @extend_schema(request=Input, responses={201: inline_serializer("RatingStored", {"submission": serializers.IntegerField(), "item": serializers.IntegerField()})})
    def post(self, request, assignment_id: int):
        data = validated(self.Input, request.data)
        answer, created = services.rating_submit(assignment_id=assignment_id, annotator=request.user, **data)
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RatingSkipApi(APIView):
    @extend_schema_serializer(component_name="RatingSkipInput")
    class Input(serializers.Serializer):
        reason = serializers.CharField(max_length=1000)

    @extend_schema(request=Input, responses=inline_serializer("RatingSkipped", {"state": serializers.CharField()}))
    def post(self, request, assignment_id: int):
        data = validated(self.Input, request.data)
        services.rating_skip(assignment_id=assignment_id, annotator=request.user, reason=data["reason"])
        return Response({"state": "skipped"})
