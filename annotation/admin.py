from django.contrib import admin

from .models import Assignment, AnnotatorProfile, Clip, Condition, Judgment, Pair, Study, StudyAnnotator, System


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "organisation", "created_at")
    search_fields = ("name", "organisation")


@admin.register(Clip)
class ClipAdmin(admin.ModelAdmin):
    list_display = ("id", "sha256", "kind", "system", "duration", "sample_rate", "channels")
    list_filter = ("kind", "system", "sample_rate", "channels")
    search_fields = ("sha256", "original_name", "public_id")
    readonly_fields = ("public_id", "sha256", "created_at")
    raw_id_fields = ("derived_from",)


@admin.register(Condition)
class ConditionAdmin(admin.ModelAdmin):
    list_display = ("id", "__str__", "modality", "external_id")
    list_filter = ("modality",)
    search_fields = ("prompt", "lyrics", "external_id")
    raw_id_fields = ("reference",)


class StudyAnnotatorInline(admin.TabularInline):
    model = StudyAnnotator
    extra = 0
    raw_id_fields = ("annotator",)


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "title", "overlap_target", "overlap_share", "min_listen_seconds", "is_active")
    list_filter = ("is_active",)
    search_fields = ("name", "title")
    inlines = [StudyAnnotatorInline]


@admin.register(Pair)
class PairAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "condition", "clip_a", "clip_b", "split", "kind", "overlap")
    list_filter = ("study", "split", "kind", "condition__modality")
    search_fields = ("condition__prompt", "condition__external_id", "clip_a__sha256", "clip_b__sha256")
    raw_id_fields = ("condition", "clip_a", "clip_b", "expected_alignment", "expected_musicality")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "annotator", "pair", "state", "served_at", "lock_expires_at")
    list_filter = ("state", "pair__study")
    search_fields = ("annotator__username",)
    raw_id_fields = ("pair", "a_clip", "annotator")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("id", "annotator", "pair", "alignment_confidence", "musicality_confidence", "source", "created_at")
    list_filter = ("source", "pair__study", "pair__kind", "pair__condition__modality")
    search_fields = ("annotator__username", "rationale", "idempotency_key")
    raw_id_fields = ("pair", "assignment", "a_clip", "alignment_choice", "musicality_choice", "annotator")


@admin.register(AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    list_display = ("pseudonym", "user", "is_imported", "consented_at", "withdrawn_at", "excluded_at")
    list_filter = ("is_imported",)
    search_fields = ("pseudonym", "user__username")
