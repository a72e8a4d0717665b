"""DRF API for researchers: judges with availability, scoring runs (launch, progress, verdicts), imported results,
and a study's report (JSON, CSV tables, annotator exclusion)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import StudyAccess
from annotation.models import AnnotatorProfile, Study
from common.api_fields import id_list_field
from common.errors import ServiceError
from common.roles import IsResearcher

from . import pseudo, selectors, services
from .agreement import THRESHOLD_HELP, Thresholds
from .models import ExternalResultSet, Judge, ScoringRun
from .report import report_build, report_options_parse
from .report_tables import TABLES, report_tables, table_csv
from .results_section import compare_section, plan_section, study_systems


class JudgeSerializer(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.CharField()
    title = serializers.CharField()
    measures = serializers.CharField()
    dimensions = serializers.ListField(child=serializers.CharField())
    modalities = serializers.ListField(child=serializers.CharField())
    pairwise = serializers.BooleanField()
    queue = serializers.CharField()
    weights = serializers.CharField()
    version = serializers.CharField()
    available = serializers.BooleanField()
    reason = serializers.CharField()
    templates = serializers.ListField(child=serializers.CharField())


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField(source="judge.key")
    study = serializers.CharField(source="study.name", allow_null=True, default=None)
    label = serializers.CharField()
    template = serializers.CharField()
    group = serializers.CharField()
    purpose = serializers.CharField()
    state = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    remaining = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.JSONField()

    def get_remaining(self, run) -> int:
        return max(run.total - run.done - run.failed, 0)


class JudgeListApi(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(responses=JudgeSerializer(many=True))
    def get(self, request):
        return Response(JudgeSerializer(selectors.judge_list(), many=True).data)


class RunListApi(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    class InputSerializer(serializers.Serializer):
        judge = serializers.CharField(max_length=100, help_text="Judge key.")
        study = serializers.CharField(max_length=200, required=False, help_text="Study name: score all its pairs.")
        pair_ids = id_list_field(required=False, help_text="A batch of pair ids.")
        external_set = serializers.CharField(max_length=200, required=False, help_text="Imported result set: score its linked pairs.")
        template = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        templates = serializers.ListField(child=serializers.CharField(max_length=200), max_length=50, required=False, help_text="Several templates: one run each, spread measured.")
        label = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)

    @extend_schema(responses=RunSerializer(many=True))
    def get(self, request):
        study = None
        if request.query_params.get("study"):
            study = get_object_or_404(Study, name=request.query_params["study"])
        return Response(RunSerializer(selectors.run_list(study=study, user=request.user), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: RunSerializer(many=True)})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        judge = Judge.objects.filter(key=values["judge"]).first()
        if judge is None:
            raise ServiceError(f"No judge with key {values['judge']!r}.", code="unknown_judge")
        scope = {}
        if "study" in values:
            study = Study.objects.filter(name=values["study"]).first()
            if study is None:
                raise ServiceError(f"No study named {values['study']!r}.", code="unknown_study")
            scope["study"] = study
        if "pair_ids" in values:
            scope["pair_ids"] = values["pair_ids"]
        if "external_set" in values:
            result_set = ExternalResultSet.objects.filter(name=values["external_set"]).first()
            if result_set is None:
                raise ServiceError(f"No imported result set named {values['external_set']!r}.", code="unknown_set")
            scope["external_set"] = result_set
        if values.get("templates"):
            runs = services.run_create_templates(judge=judge, templates=values["templates"], user=request.user, label=values["label"], **scope)
        else:
            runs = [services.run_create(judge=judge, template=values["template"], label=values["label"], user=request.user, **scope)]
        return Response(RunSerializer(runs, many=True).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    permission_classes = [permissions.IsAuthenticated, StudyAccess]
    study_allowed = staticmethod(selectors.run_allowed)

    @extend_schema(responses=RunSerializer)
    def get(self, request, run_id: int):
        run = get_object_or_404(ScoringRun.objects.select_related("judge", "study"), pk=run_id)
        return Response(RunSerializer(run).data)


class RunBiasApi(APIView):
    """The judge's position bias on the run's pairs: per dimension the A / B / tie shares of its answers in both orders and its consistency rate."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]
    study_allowed = staticmethod(selectors.run_allowed)

    @extend_schema(responses=inline_serializer("RunBias", {"judge": serializers.CharField(), "dimensions": serializers.ListField(), "table": serializers.JSONField()}))
    def get(self, request, run_id: int):
        run = get_object_or_404(ScoringRun.objects.select_related("judge"), pk=run_id)
        return Response({"run": run.pk, "purpose": run.purpose, **pseudo.run_bias(run)})


class RunPseudoExportApi(APIView):
    """The run's position-consistent labels as CMI-Pref-Pseudo JSONL with the audio, in a zip."""

    permission_classes = [permissions.IsAuthenticated, IsResearcher, StudyAccess]
    study_allowed = staticmethod(selectors.run_allowed)

    @extend_schema(responses={(200, "application/zip"): bytes})
    def get(self, request, run_id: int):
        run = get_object_or_404(ScoringRun.objects.select_related("judge"), pk=run_id)
        try:
            archive = pseudo.pseudo_export_archive(run=run)
        except ServiceError as exc:
            return Response({"detail": exc.message, "code": exc.code}, status=exc.status)
        response = HttpResponse(archive.read(), content_type="application/zip")
        archive.close()
        response["Content-Disposition"] = f'attachment; filename="pseudo-run-{run.pk}.zip"'
        return response


class VerdictSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pair = serializers.IntegerField(source="pair_id")
    status = serializers.CharField()
    alignment_choice = serializers.UUIDField(source="alignment_choice.public_id", allow_null=True, default=None)
    musicality_choice = serializers.UUIDField(source="musicality_choice.public_id", allow_null=True, default=None)
    alignment_score_a = serializers.FloatField(allow_null=True)
    alignment_score_b = serializers.FloatField(allow_null=True)
    musicality_score_a = serializers.FloatField(allow_null=True)
    musicality_score_b = serializers.FloatField(allow_null=True)
    rationale = serializers.CharField()
    details = serializers.JSONField()


class RunVerdictsApi(APIView):
    permission_classes = [permissions.IsAuthenticated, StudyAccess]
    study_allowed = staticmethod(selectors.run_allowed)

    @extend_schema(responses=VerdictSerializer(many=True))
    def get(self, request, run_id: int):
        run = get_object_or_404(ScoringRun, pk=run_id)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(run.verdicts.select_related("alignment_choice", "musicality_choice").order_by("id"), request, view=self)
        return paginator.get_paginated_response(VerdictSerializer(page, many=True).data)


class ExternalSetSerializer(serializers.Serializer):
    name = serializers.CharField()
    judge_name = serializers.CharField()
    sha256 = serializers.CharField()
    rows = serializers.IntegerField(source="rows.count")
    published_summary = serializers.JSONField()
    computed_summary = serializers.JSONField()


class ExternalSetListApi(APIView):
    permission_classes = [permissions.IsAuthenticated, IsResearcher]

    @extend_schema(responses=ExternalSetSerializer(many=True))
    def get(self, request):
        return Response(ExternalSetSerializer(ExternalResultSet.objects.order_by("name"), many=True).data)


# --- Study report ----------------------------------------------------------------------------------

OPTION_PARAMETERS = [
    OpenApiParameter("min_votes", int, description=f"{THRESHOLD_HELP['min_votes']} (default {Thresholds.min_votes})"),
    OpenApiParameter("agreement_p", float, description=f"{THRESHOLD_HELP['agreement_p']} (default {Thresholds.agreement_p})"),
    OpenApiParameter("gold_min", float, description=f"{THRESHOLD_HELP['gold_min']} (default {Thresholds.gold_min})"),
    OpenApiParameter("straightline_p", float, description=f"{THRESHOLD_HELP['straightline_p']} (default {Thresholds.straightline_p})"),
    OpenApiParameter("bootstrap", int, description="bootstrap resamples of pairs for the 95% intervals, 0-10000 (default 1000)"),
    OpenApiParameter("seed", int, description="bootstrap seed (default 0)"),
    OpenApiParameter("triage", int, description="disagreements listed per judge, 0-500 (default 10)"),
]


class StudyReportApi(APIView):
    """The whole report as JSON (the same dict `manage.py report --json` prints)."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]

    @extend_schema(parameters=OPTION_PARAMETERS, responses=inline_serializer("StudyReport", {"study": serializers.DictField(), "agreement": serializers.DictField()}))
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        options = report_options_parse(request.query_params)
        return Response(report_build(study=study, options=options))


class StudyCompareApi(APIView):
    """Two systems of the study side by side (`?a=&b=`, and the report's bootstrap/seed/include_seeded)."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]

    @extend_schema(
        parameters=[OpenApiParameter("a", str, required=True, description="First system"), OpenApiParameter("b", str, required=True, description="Second system"), *OPTION_PARAMETERS],
        responses=inline_serializer("StudyCompare", {"kind": serializers.CharField(), "system_a": serializers.CharField(), "system_b": serializers.CharField(), "dimensions": serializers.DictField()}),
    )
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not (a or b):
            # Asked with neither system: the ones there are to choose from.
            return Response({"systems": study_systems(study=study), "detail": "Choose two systems to compare: ?a=NAME&b=NAME."})
        options = report_options_parse(request.query_params)
        return Response(compare_section(study=study, a=request.query_params.get("a", ""), b=request.query_params.get("b", ""), rounds=options.rounds, seed=options.seed, include_seeded=options.include_seeded))


class StudyReportTableApi(APIView):
    """One table of the report as CSV."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]

    @extend_schema(parameters=OPTION_PARAMETERS, responses={(200, "text/csv"): str})
    def get(self, request, name: str, table: str):
        study = get_object_or_404(Study, name=name)
        if table not in TABLES:
            raise ServiceError(f"No table {table!r}; choose one of: {', '.join(TABLES)}.", code="unknown_table", status=404)
        options = report_options_parse(request.query_params)
        rows = report_tables(report_build(study=study, options=options))[table]
        response = HttpResponse(table_csv(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{study.name}-{table}.csv"'
        return response


class AnnotatorExclusionApi(APIView):
    """Exclude an annotator from analysis and export, or include them again; every change is logged."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]

    @extend_schema_serializer(component_name="AnnotatorExclusionInput")
    class InputSerializer(serializers.Serializer):
        action = serializers.ChoiceField(choices=["exclude", "include"])
        reason = serializers.CharField(max_length=500, allow_blank=True, required=False, default="")

    @extend_schema_serializer(component_name="AnnotatorExclusion")
    class OutputSerializer(serializers.Serializer):
        pseudonym = serializers.CharField()
        excluded = serializers.BooleanField()
        excluded_at = serializers.DateTimeField(allow_null=True)
        log = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request, name: str, pseudonym: str):
        study = get_object_or_404(Study, name=name)
        profile = get_object_or_404(AnnotatorProfile, pseudonym=pseudonym)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        service = services.annotator_exclude if serializer.validated_data["action"] == "exclude" else services.annotator_include
        profile = service(profile=profile, by=request.user, reason=serializer.validated_data["reason"], study=study)
        return Response(
            self.OutputSerializer(
                {"pseudonym": profile.pseudonym, "excluded": profile.excluded_at is not None, "excluded_at": profile.excluded_at, "log": profile.excluded_reason.splitlines()}
            ).data
        )


PLAN_FIELDS = ("effect", "condition_sd", "tie_rate", "rating_sd", "power", "alpha")


class StudyPlanApi(APIView):
    """How many conditions and votes separate two systems (`?a=&b=&dimension=`), from the study's votes so far or a typed effect."""

    permission_classes = [permissions.IsAuthenticated, StudyAccess]

    @extend_schema(
        parameters=[
            OpenApiParameter("a", str, required=True, description="First system"),
            OpenApiParameter("b", str, required=True, description="Second system"),
            OpenApiParameter("dimension", str, required=True, description="The dimension to plan for"),
            OpenApiParameter("effect", float, description="a's win rate over b (pairwise) or a's mean minus b's (rating); default: the study's own"),
            OpenApiParameter("condition_sd", float, description="Spread between conditions (logit scale, or rating points)"),
            OpenApiParameter("tie_rate", float, description="Share of ties (pairwise)"),
            OpenApiParameter("rating_sd", float, description="Spread of one rating (rating studies)"),
            OpenApiParameter("power", float, description="Power to reach (default 0.8)"),
            OpenApiParameter("alpha", float, description="Level of the test (default 0.05 over the study's number of comparisons)"),
        ],
        responses=inline_serializer("StudyPlan", {"kind": serializers.CharField(), "model": serializers.DictField(), "rows": serializers.ListField()}),
    )
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        params = request.query_params
        if not (params.get("a") or params.get("b")):
            # Asked with neither system: the ones there are to choose from, as the compare API answers.
            return Response({"systems": study_systems(study=study), "detail": "Choose two systems and a dimension to plan for: ?a=NAME&b=NAME&dimension=musicality."})
        return Response(plan_section(study=study, a=params.get("a", ""), b=params.get("b", ""), dimension=params.get("dimension", ""), **{k: params.get(k) for k in PLAN_FIELDS}))
