from django.contrib import admin

from .models import Rating, RatingAssignment, RatingItem, RatingItemClip, RatingSubmission, RatingTask


class RatingItemClipInline(admin.TabularInline):
    model = RatingItemClip
    extra = 0
    raw_id_fields = ("clip",)


@admin.register(RatingTask)
class RatingTaskAdmin(admin.ModelAdmin):
    list_display = ("study", "task", "dimensions")


@admin.register(RatingItem)
class RatingItemAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "kind", "overlap", "n_ratings", "n_live")
    list_filter = ("kind", "study")
    readonly_fields = ("n_ratings", "n_live", "clip_key")
    raw_id_fields = ("condition",)
    inlines = [RatingItemClipInline]

    def has_delete_permission(self, request, obj=None):
        # Deleting an item cascades to its submissions: once rated, an item stays, and its ratings with it.
        if obj is not None and obj.submissions.exists():
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        # The bulk delete action skips has_delete_permission(obj); items leave one at a time, checked.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


@admin.register(RatingAssignment)
class RatingAssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "annotator", "item", "state", "served_at")
    list_filter = ("state",)
    raw_id_fields = ("annotator", "item")


class RatingInline(admin.TabularInline):
    model = Rating
    extra = 0
    raw_id_fields = ("clip",)


@admin.register(RatingSubmission)
class RatingSubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "annotator", "item", "source", "created_at")
    list_filter = ("source",)
    raw_id_fields = ("annotator", "item", "assignment")
    inlines = [RatingInline]
