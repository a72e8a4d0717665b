"""Dataset export for researchers: GET /api/studies/<name>/export/ returns the study as a zip."""

from __future__ import annotations

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from auditorium.roles import IsResearcher

from .dataset import dataset_export_archive
from .models import Study


class ZipRenderer(BaseRenderer):
    """Lets clients send Accept: application/zip; errors are still JSON bodies."""

    media_type = "application/zip"
    format = "zip"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data) if not isinstance(data, bytes) else data


class StudyExportApi(APIView):
    """The study's votes as CMI-RewardBench JSONL (train.jsonl, test.jsonl), the audio and a datasheet, zipped."""

    permission_classes = [IsAuthenticated, IsResearcher]
    renderer_classes = [JSONRenderer, ZipRenderer]

    @extend_schema(responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="zip archive"), 403: None, 404: None})
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        archive = dataset_export_archive(studies=[study])
        return FileResponse(archive, as_attachment=True, filename=f"{study.name}-dataset.zip", content_type="application/zip")
