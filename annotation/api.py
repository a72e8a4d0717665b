"""DRF API for annotators: next pair, listening events, submit a judgment (idempotent), skip.

The page's own cycle is four requests: next (for the first pair only), the two clips, and the judgment with its
listening riding in the body, answered with the next pair (JudgmentCycleApi). The separate listening and
judgment endpoints stay for API clients. A study asking on separate screens takes one dimension per request
(DimensionAnswerApi), the second answered with the next pair as the judgment is.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api_input import validated
from common.errors import ServiceError

from . import cached, selectors, services
from .models import PASS_ORDER, Assignment, Clip, DimensionPasses


def _audio(clip: Clip | None, *, study, assignment_id: int, label: str) -> dict | None:
    """A clip as the page gets it: where to fetch it (the assignment's own URL for that side), how long it is, and the
    gain the page plays it at (Study.clip_gain_db)."""
    if clip is None:
        return None
    return {
        "url": selectors.pair_audio_path(assignment_id=assignment_id, label=label),
        "duration": round(clip.duration, 3),
        "gain_db": study.clip_gain_db(clip),
    }


def _progress(assignment: Assignment, *, study, annotator) -> dict:
    """The same count as the home page's (selectors.pair_progress), from what the engine already counted when it has."""
    known = getattr(assignment, "progress", None)  # the assignment just served: their live reservation
    if known is None:
        return selectors.annotator_progress(study=study, annotator=annotator)
    return selectors.pair_progress(study=study, annotator=annotator, done=known["done"], planned=known["planned"], reserved=True, recent=True)


def assignment_payload(assignment: Assignment, *, annotator) -> dict:
    """What the page may know: never system names, file names, pair kind or other annotators' answers."""
    pair = assignment.pair
    study = pair.study
    condition = pair.condition
    a_clip = pair.clip_a if assignment.a_clip_id == pair.clip_a_id else pair.clip_b
    b_clip = pair.clip_b if a_clip is pair.clip_a else pair.clip_a
    return {
        "id": assignment.pk,
        "study": study.name,
        "served_at": assignment.served_at.isoformat(),
        "lock_expires_at": assignment.lock_expires_at.isoformat(),
        "instructions": study.instructions,
        "condition": {
            "prompt": condition.prompt,
            "lyrics": condition.lyrics,
            "modality": condition.modality,
            "reference": _audio(condition.reference, study=study, assignment_id=assignment.pk, label=selectors.PAIR_REFERENCE),
        },
        "clips": {side: _audio(clip, study=study, assignment_id=assignment.pk, label=side) for side, clip in (("A", a_clip), ("B", b_clip))},
        "rules": {"min_listen_seconds": study.min_listen_seconds, "rationale_min_length": study.rationale_min_length},
        # Where the page's event numbers continue, and what the server has counted so far.
        "listening": {
            "next_seq": assignment.listening_seq + 1,
            "heard": {side: float((assignment.listening.get(side) or {}).get("seconds", 0.0)) for side in ("A", "B")},
        },
        "progress": _progress(assignment, study=study, annotator=annotator),
        # Separate screens: which dimension this screen asks (services/passes.py); absent when both share one screen.
        **({"passes": services.passes_state(assignment)} if study.dimension_passes == DimensionPasses.SEPARATE else {}),
    }


class StudyListApi(APIView):
    class StudyListOutput(serializers.Serializer):
        name = serializers.CharField()
        title = serializers.CharField()
        instructions = serializers.CharField()
        progress = serializers.DictField()

    @extend_schema(responses=StudyListOutput(many=True))
    def get(self, request):
        data = [
            {"name": s.name, "title": s.title or s.name, "instructions": s.instructions, "progress": selectors.annotator_progress(study=s, annotator=request.user)}
            for s in selectors.studies_open_to(user=request.user)
        ]
        return Response(self.StudyListOutput(data, many=True).data)


class AssignmentNextApi(APIView):
    """Lock and return the annotator's next pair; the same locked pair comes back until its lock expires."""

    @extend_schema(
        request=None,
        responses=inline_serializer(
            "NextPair",
            {
                "assignment": serializers.DictField(allow_null=True),
                "state": serializers.ChoiceField(choices=["finished", "closed", "open"], required=False),
                "detail": serializers.CharField(required=False),
                "progress": serializers.DictField(required=False),
            },
        ),
    )
    def post(self, request, name: str):
        study, consented = cached.study_and_consent(name, request.user.pk)
        if study is None:
            raise NotFound("No such study.")
        return Response(next_answer(study=study, annotator=request.user, consented=consented))


def next_answer(*, study, annotator, consented: bool) -> dict:
    """The next-pair answer: {"assignment": ...}, or {"assignment": None, "state", "detail", "progress"} when none comes."""
    services.crowd_gate_check(study=study, annotator=annotator)
    assignment = services.assignment_next(study=study, annotator=annotator, consented=consented)
    if assignment is None:
        progress = selectors.annotator_progress(study=study, annotator=annotator)
        if progress["state"] == "closed":
            detail = "This study is closed: the researcher has stopped taking judgments. Your judgments so far are kept."
        elif progress["state"] == "open":
            # Counted as open a moment ago but taken by someone else since: a race, not the end.
            detail = "No pair is free for you right now: other annotators hold the remaining pairs. Try again in a few minutes."
        else:
            detail = f"You judged {progress['done']} of {progress['target']} pairs: every pair this study has for you. Thank you."
        return {"assignment": None, "state": progress["state"], "detail": detail, "progress": progress}
    # The engine returns the pair with its content loaded; the study is the one in hand.
    assignment.pair.study = study
    return {"assignment": assignment_payload(assignment, annotator=annotator)}


class _SideLog(serializers.Serializer):
    plays = serializers.IntegerField(min_value=0, max_value=100000, required=False, default=0)
    seconds = serializers.FloatField(min_value=0, max_value=10**6)
    seeks = serializers.IntegerField(min_value=0, max_value=100000, required=False, default=0)
    loops = serializers.IntegerField(min_value=0, max_value=100000, required=False, default=0)


class _ListeningLog(serializers.Serializer):
    A = _SideLog()
    B = _SideLog()
    switches = serializers.IntegerField(min_value=0, max_value=100000, required=False, default=0)


class ListeningEventsApi(APIView):
    """The page's play / pause / seek / switch / tick / ended events, stamped with the server's clock on arrival."""

    class ListeningEventsInput(serializers.Serializer):
        events = serializers.ListField(
            child=serializers.DictField(),
            max_length=1000,
            required=False,
            default=list,
            help_text="At most 50 events stamped on arrival; with client_now, up to 1000 placed by their client_time (a page's last post before it goes away).",
        )
        receipts = serializers.ListField(
            child=serializers.DictField(),
            max_length=8,
            required=False,
            default=list,
            help_text="Proof of receiving a clip: {side, token: the audio response's Audio-Proof header, bytes: base64 of the file's bytes at the token's ranges, in order}.",
        )
        client_now = serializers.FloatField(required=False, allow_null=True, default=None, help_text="The page's clock (ms) as it sent this post.")

        def validate(self, attrs):
            if not attrs["events"] and not attrs["receipts"]:
                raise serializers.ValidationError("Send events, receipts, or both.")
            return attrs

    class ListeningEventsOutput(serializers.Serializer):
        accepted = serializers.IntegerField()
        ignored = serializers.IntegerField(help_text="Events whose seq was already received (a retry or a replay).")
        last_seq = serializers.IntegerField()
        heard = serializers.DictField(child=serializers.FloatField())
        min_listen_seconds = serializers.FloatField()

    @extend_schema(request=ListeningEventsInput, responses=ListeningEventsOutput)
    def post(self, request, assignment_id: int):
        data = validated(self.ListeningEventsInput, request.data)
        result = services.listening_events_record(
            assignment_id=assignment_id, annotator=request.user, events=data["events"], receipts=data["receipts"], client_now=data["client_now"]
        )
        return Response(self.ListeningEventsOutput(result).data)


class JudgmentSubmitApi(APIView):
    class JudgmentInput(serializers.Serializer):
        idempotency_key = serializers.CharField(max_length=100)
        alignment = serializers.ChoiceField(choices=["A", "B"])
        alignment_confidence = serializers.DecimalField(max_digits=2, decimal_places=1, min_value=1, max_value=5)
        musicality = serializers.ChoiceField(choices=["A", "B"])
        musicality_confidence = serializers.DecimalField(max_digits=2, decimal_places=1, min_value=1, max_value=5)
        rationale = serializers.CharField(max_length=5000, allow_blank=True, required=False, default="")
        # The page's own count, stored for reference; the server's record decides.
        listening_log = _ListeningLog(required=False)
        time_on_page_ms = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, allow_null=True, default=None)

    class JudgmentOutput(serializers.Serializer):
        judgment = serializers.IntegerField()
        pair = serializers.IntegerField()
        created_at = serializers.CharField()

    @extend_schema(request=JudgmentInput, responses={201: JudgmentOutput, 200: JudgmentOutput})
    def post(self, request, assignment_id: int):
        data = validated(self.JudgmentInput, request.data)
        answer, created = services.judgment_submit(assignment_id=assignment_id, annotator=request.user, **data)
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class AssignmentSkipApi(APIView):
    class SkipInput(serializers.Serializer):
        reason = serializers.CharField(max_length=1000)

    @extend_schema(request=SkipInput, responses=inline_serializer("Skipped", {"state": serializers.CharField()}))
    def post(self, request, assignment_id: int):
        serializer = self.SkipInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment = Assignment.objects.filter(pk=assignment_id, annotator=request.user).first()
        if assignment is None:
            raise NotFound("No such task for you.")
        services.assignment_skip(assignment=assignment, annotator=request.user, reason=serializer.validated_data["reason"])
        return Response({"state": "skipped"})



class _ListeningBatch(serializers.Serializer):
    events = serializers.ListField(
        child=serializers.DictField(),
        max_length=1000,
        required=False,
        default=list,
        help_text="Every event since the page's last listening post, each with its client_time (the page's clock, ms).",
    )
    receipts = serializers.ListField(
        child=serializers.DictField(), max_length=8, required=False, default=list, help_text="As in the listening post: {side, token, bytes} per audio response."
    )
    client_now = serializers.FloatField(required=False, allow_null=True, default=None, help_text="The page's clock (ms) as it sent this request; required with events.")


class JudgmentCycleApi(APIView):
    """The page's judgment: its listening since the last post rides in the body, and the answer carries the next pair.

    The events, receipts and judgment are checked and stored in one transaction, with the same rules as the
    listening post and the judgment endpoint: a refused judgment stores none of it. The events' server times come
    from the arrival of this request and the page's clock (common/listening.py, `events_anchored`).
    """

    class CycleInput(JudgmentSubmitApi.JudgmentInput):
        listening = _ListeningBatch(required=False, allow_null=True, default=None)

    class CycleOutput(JudgmentSubmitApi.JudgmentOutput):
        next = serializers.DictField(help_text="What POST /api/studies/<name>/next/ answers now, or {error: {status, code, detail}} when it refuses.")

    @extend_schema(request=CycleInput, responses={201: CycleOutput, 200: CycleOutput})
    def post(self, request, name: str, assignment_id: int):
        study, consented = cached.study_and_consent(name, request.user.pk)
        if study is None:
            raise NotFound("No such study.")
        try:
            data = validated(self.CycleInput, request.data)
        except serializers.ValidationError:
            # Whoever holds no such assignment in this study learns nothing from how the body is wrong.
            if not Assignment.objects.filter(pk=assignment_id, annotator=request.user, pair__study=study).exists():
                raise NotFound("No such task for you.") from None
            raise
        answer, created = services.judgment_submit(assignment_id=assignment_id, annotator=request.user, study_id=study.pk, listening_batch=data.pop("listening"), **data)
        try:
            following = next_answer(study=study, annotator=request.user, consented=consented)
        except ServiceError as exc:
            # The judgment is stored either way; the page shows why no pair follows (consent, the gate, membership).
            following = {"error": {"status": exc.status, "code": exc.code, "detail": exc.message}}
        return Response({**answer, "next": following}, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class DimensionAnswerApi(APIView):
    """One dimension's answer on a study that asks them on separate screens (services/passes.py).

    The first answer is held on the assignment and answered {"complete": false, "next_dimension"}; the second makes the
    judgment and is answered as JudgmentCycleApi answers, with the next pair. The listening rides in the body as there.
    """

    class AnswerInput(serializers.Serializer):
        idempotency_key = serializers.CharField(max_length=100)
        dimension = serializers.ChoiceField(choices=list(PASS_ORDER))
        choice = serializers.ChoiceField(choices=["A", "B"])
        confidence = serializers.DecimalField(max_digits=2, decimal_places=1, min_value=1, max_value=5)
        rationale = serializers.CharField(max_length=5000, allow_blank=True, required=False, default="")
        listening_log = _ListeningLog(required=False)
        time_on_page_ms = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, allow_null=True, default=None)
        listening = _ListeningBatch(required=False, allow_null=True, default=None)

    class AnswerOutput(serializers.Serializer):
        complete = serializers.BooleanField(help_text="True once both dimensions are answered and the judgment is stored.")
        next_dimension = serializers.CharField(required=False, help_text="The dimension the next screen asks (first answer only).")
        judgment = serializers.IntegerField(required=False)
        next = serializers.DictField(required=False, help_text="With the judgment: what POST /api/studies/<name>/next/ answers now.")

    @extend_schema(request=AnswerInput, responses={201: AnswerOutput, 200: AnswerOutput})
    def post(self, request, name: str, assignment_id: int):
        study, consented = cached.study_and_consent(name, request.user.pk)
        if study is None:
            raise NotFound("No such study.")
        try:
            data = validated(self.AnswerInput, request.data)
        except serializers.ValidationError:
            if not Assignment.objects.filter(pk=assignment_id, annotator=request.user, pair__study=study).exists():
                raise NotFound("No such task for you.") from None
            raise
        answer, created = services.dimension_answer_submit(
            assignment_id=assignment_id, annotator=request.user, study_id=study.pk, listening_batch=data.pop("listening"), **data
        )
        if answer["complete"]:
            try:
                answer["next"] = next_answer(study=study, annotator=request.user, consented=consented)
            except ServiceError as exc:
                answer["next"] = {"error": {"status": exc.status, "code": exc.code, "detail": exc.message}}
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
