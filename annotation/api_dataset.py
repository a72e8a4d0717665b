"""Dataset export for researchers: GET /api/studies/<name>/export/ returns the study as a zip.

`?include_unvoted=1` adds the pairs without votes (rows with empty preferences and user id).
"""

from __future__ import annotations

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from common.errors import ServiceError
from .access import StudyAccess

from .dataset import dataset_export_archive
from .models import Study
from .services.exports import study_export_record


class ZipRenderer(BaseRenderer):
    """Lets clients send Accept: application/zip; errors are still JSON bodies."""

    media_type = "application/zip"
    format = "zip"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data) if not isinstance(data, bytes) else data


def _flag(value: str | None) -> bool:
    if value in (None, "", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ServiceError(f"include_unvoted must be 1 or 0 (true or false), not {value!r}.", code="bad_parameter")


class StudyExportApi(APIView):
    """The study's votes as CMI-RewardBench JSONL (train.jsonl, test.jsonl), the audio and a datasheet, zipped."""

    permission_classes = [IsAuthenticated, StudyAccess]
    renderer_classes = [JSONRenderer, ZipRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "include_unvoted",
                OpenApiTypes.BOOL,
                description="Also export pairs without votes: one row each with empty user id, preferences, confidences and feedback.",
            ),
            OpenApiParameter("include_seeded", OpenApiTypes.BOOL, description="Also export the demo's seeded votes (no one listened), labelled as demo data."),
        ],
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="zip archive"), 403: None, 404: None},
    )
    def get(self, request, name: str):
        study = get_object_or_404(Study, name=name)
        options = {"include_unvoted": _flag(request.query_params.get("include_unvoted")), "include_seeded": _flag(request.query_params.get("include_seeded"))}
        # Who asked is recorded before the archive is built, so a failed or abandoned download is on record too.
        study_export_record(study=study, user=request.user, options=options)
        archive = dataset_export_archive(studies=[study], **options)
        return FileResponse(archive, as_attachment=True, filename=f"{study.name}-dataset.zip", content_type="application/zip")
