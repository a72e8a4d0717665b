"""Study report: the HTML page, the JSON and CSV API, and annotator exclusion. Researchers and admins only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST, require_safe
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import AnnotatorProfile, Study
from auditorium.errors import ServiceError
from auditorium.roles import IsResearcher, is_researcher

from .agreement import DIMENSIONS, THRESHOLD_HELP, Thresholds, annotator_exclude, annotator_include
from .report import BUCKETS, MODALITIES, TABLES, ReportOptions, report_build, report_options_parse, report_tables, table_csv

OPTION_PARAMETERS = [
    OpenApiParameter("min_votes", int, description=f"{THRESHOLD_HELP['min_votes']} (default {Thresholds.min_votes})"),
    OpenApiParameter("agreement_p", float, description=f"{THRESHOLD_HELP['agreement_p']} (default {Thresholds.agreement_p})"),
    OpenApiParameter("gold_min", float, description=f"{THRESHOLD_HELP['gold_min']} (default {Thresholds.gold_min})"),
    OpenApiParameter("straightline_p", float, description=f"{THRESHOLD_HELP['straightline_p']} (default {Thresholds.straightline_p})"),
    OpenApiParameter("bootstrap", int, description="bootstrap resamples of pairs for the 95% intervals, 0-10000 (default 1000)"),
    OpenApiParameter("seed", int, description="bootstrap seed (default 0)"),
    OpenApiParameter("triage", int, description="disagreements listed per judge, 0-500 (default 10)"),
]


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _fixed(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(ci, fmt=_pct) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"{fmt(ci[0])} – {fmt(ci[1])}"


def report_context(report: dict) -> dict:
    """Rows pre-formatted for the template (Django templates cannot index keys such as "<3")."""
    agreement = []
    for dim in DIMENSIONS:
        block = report["agreement"][dim]
        agreement.append(
            {
                "dimension": dim,
                "pairs": block["pairs"],
                "votes": block["votes"],
                "vote_pairs": block["vote_pairs"],
                "agreements": block["agreements"],
                "disagreements": block["disagreements"],
                "rate": _pct(block["agreement_rate"]),
                "rate_ci": _interval(block["agreement_ci"]),
                "alpha": _fixed(block["alpha"]),
                "alpha_ci": _interval(block["alpha_ci"], _fixed),
                "confidence_alpha": _fixed(block["confidence_alpha_ordinal"]),
                "by_confidence": [
                    {**row, "rate": _pct(row["agreement_rate"]), "rate_ci": _interval(row["agreement_ci"]), "alpha_fmt": _fixed(row["alpha"]), "alpha_ci_fmt": _interval(row["alpha_ci"], _fixed)}
                    for row in block["by_confidence"]
                ],
            }
        )
    cross = report["confidence"]["cross_dimension"]
    bias = [{"dimension": d, **report["position_bias"][d], "share_fmt": _pct(report["position_bias"][d]["share"]), "ci_fmt": _interval(report["position_bias"][d]["ci"])} for d in DIMENSIONS]
    annotators = []
    for row in report["annotators"]:
        annotators.append(
            {
                **row,
                "flag_codes_unique": sorted({f["code"] for f in row["flags"]}),
                "agreement_fmt": _pct(row["majority_agreement"]),
                "agreement_alignment_fmt": _pct(row["majority_agreement_alignment"]),
                "agreement_musicality_fmt": _pct(row["majority_agreement_musicality"]),
                "gold_fmt": _pct(row["gold_accuracy"]),
                "a_alignment_fmt": _pct(row["a_share_alignment"]),
                "a_musicality_fmt": _pct(row["a_share_musicality"]),
                "rationale_fmt": _pct(row["rationale_rate"]),
            }
        )
    judges = []
    for judge in report["judges"]:
        dims = []
        for dim in DIMENSIONS:
            block = judge["dimensions"][dim]
            dims.append(
                {
                    "dimension": dim,
                    "n": block["n"],
                    "accuracy": _pct(block["accuracy"]),
                    "ci": _interval(block["ci"]),
                    "modalities": [(m, _pct(block["by_modality"][m]["accuracy"]), block["by_modality"][m]["n"]) for m in MODALITIES],
                    "with_ref": _pct(block["reference"]["with"]["accuracy"]),
                    "without_ref": _pct(block["reference"]["without"]["accuracy"]),
                    "instrumental": _pct(block["type"]["instrumental"]["accuracy"]),
                    "vocal": _pct(block["type"]["vocal"]["accuracy"]),
                    "buckets": [(b, _pct(block["by_confidence"][b]["accuracy"]), block["by_confidence"][b]["n"]) for b in BUCKETS],
                    "w_audio": _pct(block["w_audio"]),
                    "wo_audio": _pct(block["wo_audio"]),
                    "alpha_with_judge": _fixed(block["alpha_with_judge"]),
                    "alpha_humans": _fixed(block["alpha_humans_same_pairs"]),
                    "ties_dropped": block["ties_dropped"],
                }
            )
        judges.append({**judge, "dims": dims, "headline_fmt": _pct(judge["headline"]), "discard_fmt": _pct(judge["discard_rate"]), "failure_fmt": _pct(judge["failure_rate"])})
    external = []
    for result_set in report["external"]:
        # One row per subset, human label and score column; the accuracy or the three correlations side by side.
        grouped: dict[tuple, dict] = {}
        for f in result_set["figures"]:
            row = grouped.setdefault((f["subset"], f["dimension"], f["score"]), {"subset": f["subset"], "dimension": f["dimension"], "score": f["score"], "n": f["n"], "published": []})
            row[f["metric"]] = _fixed(f["value"], 4)
            if f["published"] is not None:
                row["published"].append(f"{f['metric']} {_fixed(f['published'], 4)}")
        rows = [{**r, "published": ", ".join(r["published"])} for r in grouped.values()]
        external.append({**result_set, "table_rows": rows})
    generated = parse_datetime(report["generated_at"])
    return {
        "generated": generated.strftime("%Y-%m-%d %H:%M:%S UTC") if generated else report["generated_at"],
        "agreement": agreement,
        "cross": {**cross, "rate_fmt": _pct(cross["agreement_rate"])},
        "bias": bias,
        "annotators": annotators,
        "judges": judges,
        "external": external,
        "triage": _triage_groups(report["triage"]),
    }


def _triage_groups(items: list[dict]) -> list[dict]:
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(item["source"], []).append(item)
    return [{"source": source, "items": rows} for source, rows in groups.items()]


def _forbidden(request: HttpRequest) -> HttpResponse:
    return render(request, "scoring/report_forbidden.html", {}, status=403)


@login_required
@require_safe
def study_report(request: HttpRequest, name: str) -> HttpResponse:
    if not is_researcher(request.user):
        return _forbidden(request)
    study = get_object_or_404(Study, name=name)
    query = request.GET.urlencode()
    try:
        options = report_options_parse(request.GET)
    except ServiceError as exc:
        defaults = ReportOptions()
        return render(request, "scoring/report.html", {"study": study, "error": exc.message, "options": defaults, "query": ""}, status=400)
    report = report_build(study=study, options=options)
    context = {
        "study": study,
        "report": report,
        "view": report_context(report),
        "options": options,
        "query": query,
        "tables": TABLES,
        "threshold_help": THRESHOLD_HELP,
        "ws_path": f"/ws/scoring/studies/{study.name}/report/",
    }
    template = "scoring/report_body.html" if request.headers.get("X-Report-Refresh") else "scoring/report.html"
    return render(request, template, context)


@login_required
@require_POST
def annotator_exclusion(request: HttpRequest, name: str, pseudonym: str) -> HttpResponse:
    if not is_researcher(request.user):
        return _forbidden(request)
    study = get_object_or_404(Study, name=name)
    profile = get_object_or_404(AnnotatorProfile, pseudonym=pseudonym)
    action = request.POST.get("action")
    try:
        if action == "exclude":
            annotator_exclude(profile=profile, by=request.user, reason=request.POST.get("reason", ""))
            messages.success(request, f"{pseudonym} is now left out of analysis and export.")
        elif action == "include":
            annotator_include(profile=profile, by=request.user, reason=request.POST.get("reason", ""))
            messages.success(request, f"{pseudonym} is included again.")
        else:
            messages.error(request, "Choose exclude or include.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    back = reverse("scoring:study-report", kwargs={"name": study.name})
    query = request.POST.get("query", "")
    return HttpResponseRedirect(f"{back}?{query}#annotators" if query else f"{back}#annotators")


# --- API ---------------------------------------------------------------------------------------


class StudyReportApi(APIView):
    """The whole report as JSON (the same dict `manage.py report --json` prints)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(parameters=OPTION_PARAMETERS, responses=inline_serializer("StudyReport", {"study": serializers.DictField(), "agreement": serializers.DictField()}))
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        options = report_options_parse(request.query_params)
        return Response(report_build(study=study, options=options))


class StudyReportTableApi(APIView):
    """One table of the report as CSV."""

    permission_classes = [IsAuthenticated, IsResearcher]

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

    permission_classes = [IsAuthenticated, IsResearcher]

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
        get_object_or_404(Study, name=name)
        profile = get_object_or_404(AnnotatorProfile, pseudonym=pseudonym)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        service = annotator_exclude if serializer.validated_data["action"] == "exclude" else annotator_include
        profile = service(profile=profile, by=request.user, reason=serializer.validated_data["reason"])
        return Response(
            self.OutputSerializer(
                {"pseudonym": profile.pseudonym, "excluded": profile.excluded_at is not None, "excluded_at": profile.excluded_at, "log": profile.excluded_reason.splitlines()}
            ).data
        )


# Mounted at /api/studies/<name>/ by the root URLconf, next to the annotation app's study API.
api_urlpatterns = [
    path("report/", StudyReportApi.as_view(), name="api-study-report"),
    path("report/<slug:table>.csv", StudyReportTableApi.as_view(), name="api-study-report-table"),
    path("annotators/<str:pseudonym>/exclusion/", AnnotatorExclusionApi.as_view(), name="api-annotator-exclusion"),
]
