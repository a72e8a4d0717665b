"""DRF API: benchmarks, the leaderboard as the caller may see it, prediction-file submissions, a submission's figures.

Every answer is built from the same visibility rules as the pages (selectors): no field carries an
item's label, and another team's private figures appear only after the close.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api_input import validated
from common.errors import ServiceError
from scoring.evaluation import DIMENSIONS, MODALITIES

from . import runners, selectors, services
from .models import Benchmark, Submission


class CanViewLeaderboard(permissions.BasePermission):
    """Researchers, members of a team, or everyone when BENCHMARK_LEADERBOARD_PUBLIC is on."""

    message = "Judge benchmarks are open to researchers and to members of a benchmark team."

    def has_permission(self, request, view) -> bool:
        return selectors.can_view_leaderboard(request.user)


def _visible_benchmark(request, name: str) -> Benchmark:
    bench = get_object_or_404(Benchmark, name=name)
    if not selectors.can_view_leaderboard(request.user):
        raise Http404("No such benchmark.")
    return bench


def _benchmark_json(bench: Benchmark) -> dict:
    return {"name": bench.name, "title": bench.title, "version": bench.version, "kind": bench.kind, "state": bench.state, "dev": bench.is_dev, "demo": bench.is_demo, "n_items": bench.n_items, "created_at": bench.created_at.isoformat()}


def _row_json(r: dict, figure: str) -> dict:
    """One leaderboard row as the API answers it; `figure` is what the board ranks on (accuracy, or SRCC for MOS)."""
    return {
        "submission": r["submission"],
        "team": r["team"],
        "name": r["name"],
        "kind": r["kind"],
        "group": r["rank"],
        figure: r[figure],
        "interval": r["ci"],
        "n": r["n"],
        "answered": r["answered"],
        "timeouts": r["timeouts"],
        "failures": r["failures"],
        "own_private": r["private"],
    }


def _mos_board_json(bench: Benchmark, board: dict) -> dict:
    rows = [_row_json(r, "srcc") for r in board["rows"]]
    pairs = [{k: v for k, v in pair.items() if k not in ("a_name", "b_name")} for pair in board["pairs"]]
    return {
        "benchmark": _benchmark_json(bench),
        "part": board["part"],
        "dimension": board["dim"],
        "modality": board["modality"],
        "n": board["n"],
        "ceiling": board["ceiling"],
        "rows": rows,
        "pairs": pairs,
        "hidden": board.get("hidden", False),
    }


class BenchmarkListApi(APIView):
    permission_classes = [CanViewLeaderboard]

    @extend_schema(summary="Benchmarks the caller may see", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response({"results": [_benchmark_json(b) for b in selectors.benchmarks_visible(request.user)]})


class LeaderboardApi(APIView):
    permission_classes = [CanViewLeaderboard]

    @extend_schema(
        summary="The judge leaderboard as the caller may see it",
        parameters=[OpenApiParameter("dim", str, enum=list(DIMENSIONS)), OpenApiParameter("modality", str, enum=list(MODALITIES))],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, name: str):
        bench = _visible_benchmark(request, name)
        dim = request.query_params.get("dim", "musicality")
        modality = request.query_params.get("modality") or None
        if dim not in DIMENSIONS or (modality and modality not in MODALITIES):
            raise ServiceError(f"dim must be one of {', '.join(DIMENSIONS)}; modality one of {', '.join(MODALITIES)}.")
        if bench.is_mos:
            return Response(_mos_board_json(bench, selectors.mos_leaderboard(bench, request.user, dim=dim, modality=modality)))
        board = selectors.leaderboard(bench, request.user, dim=dim, modality=modality)
        rows = [_row_json(r, "accuracy") for r in board["rows"]]
        return Response(
            {
                "benchmark": _benchmark_json(bench),
                "part": board["part"],
                "dimension": dim,
                "modality": modality,
                "n": board["n"],
                "chance": board["chance"],
                "ceiling": board["ceiling"],
                "rows": rows,
                "pairwise": board["pairwise"],
                "pairs": [{k: v for k, v in pair.items() if k not in ("a_name", "b_name")} for pair in board["pairs"]],
            }
        )


class SubmissionCreateApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(
        summary="Upload a prediction file (multipart: team, file, label)",
        request={"multipart/form-data": {"type": "object", "properties": {"team": {"type": "string"}, "label": {"type": "string"}, "file": {"type": "string", "format": "binary"}}}},
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request, name: str):
        bench = get_object_or_404(Benchmark, name=name)
        submission = services.submission_upload(benchmark=bench, user=request.user, team=request.data.get("team", ""), upload=request.FILES.get("file"), label=request.data.get("label", ""))
        return Response({"submission": submission.pk, "format": submission.file_format, "answered": submission.predictions.count(), "items": bench.n_items}, status=status.HTTP_201_CREATED)


class SubmissionDetailApi(APIView):
    permission_classes = [CanViewLeaderboard]

    @extend_schema(summary="A submission's figures on the parts the caller may see", responses=OpenApiTypes.OBJECT)
    def get(self, request, submission_id: int):
        submission = get_object_or_404(Submission.objects.select_related("benchmark", "team"), pk=submission_id)
        if not selectors.can_view_submission(request.user, submission):
            raise Http404("No such submission.")
        figures = selectors.submission_figures(request.user, submission)
        return Response(
            {
                "submission": submission.pk,
                "team": submission.team.name,
                "label": submission.label,
                "kind": submission.kind,
                "state": submission.state,
                "timeouts": submission.n_timeouts,
                "errors": submission.n_errors,
                "progress": selectors.run_progress(submission),
                "parts": figures,
            }
        )


class RunSubmissionInput(serializers.Serializer):
    team = serializers.CharField(max_length=200)
    label = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    endpoint = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    judge = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class RunSubmissionApi(APIView):
    """A team's registered outside judge, by name (its members), or an in-platform judge (researchers) as a submission."""

    @extend_schema(
        summary="Run a judge as a submission: `endpoint` (the name of an outside judge the team registered) or `judge` (an in-platform judge key, researchers only)",
        request=RunSubmissionInput,
        responses={202: OpenApiTypes.OBJECT},
    )
    def post(self, request, name: str):
        bench = get_object_or_404(Benchmark, name=name)
        data = validated(RunSubmissionInput, request.data)
        submission = runners.run_submission_request(benchmark=bench, user=request.user, **data)
        return Response({"submission": submission.pk, "kind": submission.kind, "state": submission.state}, status=status.HTTP_202_ACCEPTED)
