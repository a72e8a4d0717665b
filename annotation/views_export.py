"""The study page's export: ask for an archive, watch it being built, download it.

Only the study's owner and admins get in (selectors.study_exportable_by); the archive is built
by a worker (services/exports.py) and served from here, never from a public URL.
"""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from common.errors import ServiceError
from common.guards import forbidden, researcher_required

from . import selectors
from .forms import StudyExportForm
from .models import Study, StudyExport
from .services.exports import export_path, study_export_request
from .access import study_required
from .views import _form_error, _study_manage_render


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _status(export: StudyExport) -> dict:
    name = export.study.name
    status = selectors.study_export_status(export=export)
    status["status_url"] = reverse("study-export-status", args=[name, export.public_id])
    status["download_url"] = reverse("study-export-download", args=[name, export.public_id]) if export.state == StudyExport.State.DONE else None
    return status


def _export_of(request: HttpRequest, name: str, public_id) -> StudyExport:
    export = get_object_or_404(StudyExport.objects.select_related("study"), public_id=public_id, study__name=name)
    # Someone else's export is not found, whoever asks: the id says nothing about who made it.
    if export.requested_by_id != request.user.pk or not selectors.study_exportable_by(study=export.study, user=request.user):
        raise Http404("No such export.")
    return export


@study_required
@require_POST
def study_export(request: HttpRequest, name: str) -> HttpResponse:
    study = get_object_or_404(Study, name=name)
    if not selectors.study_exportable_by(study=study, user=request.user):
        if _wants_json(request):
            return JsonResponse({"detail": f"Only the owner of “{study.name}” or an administrator can export it."}, status=403)
        return forbidden(request, f"Only the owner of “{study.name}” or an administrator can export it.")
    form = StudyExportForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            export = study_export_request(
                study=study, user=request.user, include_unvoted=data["include_unvoted"], include_seeded=data["include_seeded"], balanced_test=data["balanced_test"], seed=data["seed"]
            )
        except ServiceError as exc:
            _form_error(form, exc)
        else:
            if _wants_json(request):
                export.refresh_from_db()
                return JsonResponse(_status(export), status=202)
            return redirect(f"{reverse('study-manage', args=[study.name])}#export")
    if _wants_json(request):
        return JsonResponse({"detail": "The export options need fixing.", "errors": form.errors.get_json_data()}, status=400)
    return _study_manage_render(request, study, None, status=400, export_form=form)


@researcher_required
@require_safe
def study_export_status(request: HttpRequest, name: str, public_id) -> HttpResponse:
    return JsonResponse(_status(_export_of(request, name, public_id)))


@researcher_required
@require_safe
def study_export_download(request: HttpRequest, name: str, public_id) -> HttpResponse:
    export = _export_of(request, name, public_id)
    path = export_path(export)
    if export.state != StudyExport.State.DONE or not path.exists():
        raise Http404("This export is not ready, or was replaced by a newer one.")
    stamp = export.created_at.strftime("%Y%m%d-%H%M%S")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=f"{export.study.name}-dataset-{stamp}.zip", content_type="application/zip")
