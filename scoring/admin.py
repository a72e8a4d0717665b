from django.contrib import admin

from .models import ClipScore, ExternalResultRow, ExternalResultSet, Judge, ScoringRun, Verdict


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ("key", "kind", "version", "queue", "enabled", "weights")
    list_filter = ("kind", "queue", "enabled")
    search_fields = ("key", "weights")


@admin.register(ScoringRun)
class ScoringRunAdmin(admin.ModelAdmin):
    list_display = ("id", "judge", "study", "state", "done", "failed", "total", "created_at")
    list_filter = ("state", "judge", "study")


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "pair", "status", "created_at")
    list_filter = ("status", "run__judge")
    raw_id_fields = ("pair", "alignment_choice", "musicality_choice")


@admin.register(ClipScore)
class ClipScoreAdmin(admin.ModelAdmin):
    list_display = ("id", "judge", "judge_version", "clip_sha256", "context_key")
    list_filter = ("judge",)
    search_fields = ("clip_sha256",)


@admin.register(ExternalResultSet)
class ExternalResultSetAdmin(admin.ModelAdmin):
    list_display = ("name", "judge_name", "created_at")


@admin.register(ExternalResultRow)
class ExternalResultRowAdmin(admin.ModelAdmin):
    list_display = ("result_set", "row_index", "subset", "audio_a", "audio_b")
    list_filter = ("result_set", "subset")
