from django.contrib import admin

from common.admin import ModelAdmin, TabularInline

from .models import Rating, RatingAssignment, RatingItem, RatingItemClip, RatingSubmission, RatingTask


class RatingItemClipInline(TabularInline):
    model = RatingItemClip
    extra = 0
    raw_id_fields = ("clip",)


@admin.register(RatingTask)
class RatingTaskAdmin(ModelAdmin):
    list_display = ("study", "task", "dimensions")


@admin.register(RatingItem)
class RatingItemAdmin(ModelAdmin):
    list_display = ("id", "study", "kind", "overlap", "n_ratings", "n_live")
    list_filter = ("kind", "study")
    readonly_fields = ("n_ratings", "n_live", "clip_key")
    raw_id_fields = ("condition",)
    inlines = [RatingItemClipInline]


@admin.register(RatingAssignment)
class RatingAssignmentAdmin(ModelAdmin):
    list_display = ("id", "annotator", "item", "state", "served_at")
    list_filter = ("state",)
    raw_id_fields = ("annotator", "item")


class RatingInline(TabularInline):
    model = Rating
    extra = 0
    raw_id_fields = ("clip",)


@admin.register(RatingSubmission)
class RatingSubmissionAdmin(ModelAdmin):
    list_display = ("id", "annotator", "item", "source", "created_at")
    list_filter = ("source",)
    raw_id_fields = ("annotator", "item", "assignment")
    inlines = [RatingInline]
