from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.http import FileResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from common.admin import AnswersKept, ModelAdmin, TabularInline
from common.errors import ServiceError
from common.roles import is_admin, is_researcher

from .dataset import DEFAULT_STUDY, dataset_export_archive, max_upload_bytes, pairs_import_upload
from .forms import PairFilesForm
from .models import AnnotatorProfile, Assignment, Clip, Condition, Judgment, Pair, Study, StudyAnnotator, System


@admin.register(System)
class SystemAdmin(ModelAdmin):
    list_display = ("name", "organisation", "created_at")
    search_fields = ("name", "organisation")


@admin.register(Clip)
class ClipAdmin(ModelAdmin):
    list_display = ("id", "sha256", "kind", "system", "duration", "sample_rate", "channels")
    list_filter = ("kind", "system", "sample_rate", "channels")
    search_fields = ("sha256", "original_sha256", "original_name", "public_id")
    readonly_fields = ("public_id", "sha256", "original_sha256", "created_at")
    raw_id_fields = ("derived_from",)


@admin.register(Condition)
class ConditionAdmin(ModelAdmin):
    list_display = ("id", "__str__", "modality", "external_id")
    list_filter = ("modality",)
    search_fields = ("prompt", "lyrics", "external_id")
    raw_id_fields = ("reference",)


class StudyAnnotatorInline(TabularInline):
    model = StudyAnnotator
    extra = 0
    raw_id_fields = ("annotator",)


class PairImportForm(PairFilesForm):
    study = forms.SlugField(initial=DEFAULT_STUDY, max_length=100, help_text="An existing study, or the name of a new one.")
    field_order = ["study", "jsonl", "archive", "skip_invalid"]


def _can_import(user) -> bool:
    return is_admin(user) or user.has_perms(["annotation.add_pair", "annotation.add_judgment", "annotation.add_clip"])


@admin.register(Study)
class StudyAdmin(ModelAdmin):
    list_display = ("name", "title", "overlap_target", "overlap_share", "min_listen_seconds", "is_active")
    list_filter = ("is_active",)
    search_fields = ("name", "title")
    inlines = [StudyAnnotatorInline]
    actions = ["export_dataset", "export_dataset_with_unvoted"]

    def get_urls(self):
        extra = [path("import-pairs/", self.admin_site.admin_view(self.import_pairs_view), name="annotation_study_import_pairs")]
        return extra + super().get_urls()

    def import_pairs_view(self, request):
        if not _can_import(request.user):
            raise PermissionDenied
        form = PairImportForm(request.POST or None, request.FILES or None, max_bytes=max_upload_bytes())
        report = None
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                report = pairs_import_upload(archive=data["archive"], jsonl=data["jsonl"], study_name=data["study"], skip_invalid=data["skip_invalid"])
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                if report.imported and not report.errors:
                    messages.success(request, "Imported. " + report.summary().replace("\n", "; "))
                    return redirect(reverse("admin:annotation_study_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import pairs",
            "form": form,
            "report": report,
            "max_upload_bytes": max_upload_bytes(),
        }
        # A refused upload (bad form, bad archive, invalid rows) is a 400: the page says why.
        status = 400 if request.method == "POST" and not (report is not None and report.imported) else 200
        return TemplateResponse(request, "admin/annotation/study/import_pairs.html", context, status=status)

    @admin.action(description="Export dataset (zip: JSONL, audio, datasheet)", permissions=["view"])
    def export_dataset(self, request, queryset, include_unvoted=False):
        if not is_researcher(request.user):
            raise PermissionDenied
        studies = list(queryset.order_by("name"))
        try:
            archive = dataset_export_archive(studies=studies, include_unvoted=include_unvoted)
        except ServiceError as exc:
            self.message_user(request, exc.message, level=messages.ERROR)
            return None
        name = studies[0].name if len(studies) == 1 else "studies"
        return FileResponse(archive, as_attachment=True, filename=f"{name}-dataset.zip", content_type="application/zip")

    @admin.action(description="Export dataset with pairs without votes (empty preferences and user id)", permissions=["view"])
    def export_dataset_with_unvoted(self, request, queryset):
        return self.export_dataset(request, queryset, include_unvoted=True)


@admin.register(Pair)
class PairAdmin(ModelAdmin):
    list_display = ("id", "study", "condition", "clip_a", "clip_b", "split", "kind", "overlap")
    list_filter = ("study", "split", "kind", "condition__modality")
    search_fields = ("condition__prompt", "condition__external_id", "clip_a__sha256", "clip_b__sha256")
    raw_id_fields = ("condition", "clip_a", "clip_b", "expected_alignment", "expected_musicality")


@admin.register(Assignment)
class AssignmentAdmin(ModelAdmin):
    list_display = ("id", "annotator", "pair", "state", "served_at", "lock_expires_at")
    list_filter = ("state", "pair__study")
    search_fields = ("annotator__username",)
    raw_id_fields = ("pair", "a_clip", "annotator")


@admin.register(Judgment)
class JudgmentAdmin(ModelAdmin):
    list_display = ("id", "annotator", "pair", "alignment_confidence", "musicality_confidence", "source", "selection", "created_at")
    list_filter = ("source", "selection", "pair__study", "pair__kind", "pair__condition__modality")
    search_fields = ("annotator__username", "rationale", "idempotency_key")
    raw_id_fields = ("pair", "assignment", "a_clip", "alignment_choice", "musicality_choice", "annotator")


@admin.register(AnnotatorProfile)
class AnnotatorProfileAdmin(ModelAdmin):
    list_display = ("pseudonym", "user", "is_imported", "consented_at", "withdrawn_at", "excluded_at")
    list_filter = ("is_imported",)
    search_fields = ("pseudonym", "user__username")


# --- Crowd quality: practice items, recruitment links; screening attempts and external accounts to read ---
from .crowd_models import ExternalParticipant, PracticeItem, RecruitmentLink, ScreeningAttempt  # noqa: E402


@admin.register(PracticeItem)
class PracticeItemAdmin(ModelAdmin):
    list_display = ("study", "position", "from_pair", "explanation")
    list_filter = ("study",)
    raw_id_fields = ("condition", "clip_a", "clip_b", "expected_alignment", "expected_musicality", "from_pair")


@admin.register(RecruitmentLink)
class RecruitmentLinkAdmin(ModelAdmin):
    list_display = ("study", "label", "token", "cap", "expires_at")
    readonly_fields = ("token",)


@admin.register(ScreeningAttempt)
class ScreeningAttemptAdmin(ModelAdmin):
    list_display = ("study", "annotator", "kind", "correct", "trials", "passed", "answered_at")
    list_filter = ("study", "passed")
    readonly_fields = [f.name for f in ScreeningAttempt._meta.fields]


@admin.register(ExternalParticipant)
class ExternalParticipantAdmin(ModelAdmin):
    # The participant id itself is never stored; only its keyed hash.
    list_display = ("study", "user", "duplicate_claim", "created_at", "completed_at", "screened_out_at")
    list_filter = ("duplicate_claim",)
    readonly_fields = [f.name for f in ExternalParticipant._meta.fields]


# A user's assignments and listening events cascade from the user: the stock user admin keeps the answer rule too.
_User = get_user_model()
admin.site.unregister(_User)


@admin.register(_User)
class KeptUserAdmin(AnswersKept, UserAdmin):
    pass


# --- Adjudication: who settles a study's disputed pairs; decisions are read here, made on the study's queue ---
from .adjudication_models import Adjudication, StudyAdjudicator  # noqa: E402


@admin.register(StudyAdjudicator)
class StudyAdjudicatorAdmin(ModelAdmin):
    list_display = ("study", "user", "granted_by", "granted_at")
    list_filter = ("study",)
    search_fields = ("user__username", "study__name")
    raw_id_fields = ("user", "granted_by")


@admin.register(Adjudication)
class AdjudicationAdmin(ModelAdmin):
    """Read-only: a decision is made on the queue page, with its listening proof and its row lock, and is never edited."""

    list_display = ("pair", "adjudicator", "alignment", "musicality", "decided_at")
    list_filter = ("pair__study",)
    search_fields = ("reason", "adjudicator__username")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


# --- Questionnaires: to read; they are written from the study's questionnaire page, which keeps the versions ---
from .questionnaire_models import Questionnaire, QuestionnaireResponse  # noqa: E402


@admin.register(Questionnaire)
class QuestionnaireAdmin(ModelAdmin):
    list_display = ("study", "phase", "version", "created_by", "created_at")
    list_filter = ("phase",)
    readonly_fields = [f.name for f in Questionnaire._meta.fields]


@admin.register(QuestionnaireResponse)
class QuestionnaireResponseAdmin(ModelAdmin):
    list_display = ("study", "phase", "annotator", "questionnaire", "created_at")
    list_filter = ("phase",)
    readonly_fields = [f.name for f in QuestionnaireResponse._meta.fields]
