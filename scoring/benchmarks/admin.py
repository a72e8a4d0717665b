from django.contrib import admin

from common.admin import ModelAdmin

from .models import Benchmark, JudgeEndpoint, Submission, Team


@admin.register(Benchmark)
class BenchmarkAdmin(ModelAdmin):
    list_display = ("name", "version", "state", "is_dev", "n_items", "created_at")
    list_filter = ("state", "is_dev")
    # Items and labels are frozen at creation; only the description and the state are edited here.
    readonly_fields = ("name", "version", "seed", "public_share", "is_dev", "study", "includes_arena", "manifest", "n_items", "bootstrap_rounds", "created_by", "created_at", "closed_at")


@admin.register(Team)
class TeamAdmin(ModelAdmin):
    list_display = ("name", "benchmark", "created_at")
    filter_horizontal = ("members",)


@admin.register(JudgeEndpoint)
class JudgeEndpointAdmin(ModelAdmin):
    list_display = ("name", "team", "url", "created_at")
    # The secret is shown to the team on its page; the admin does not list it.
    exclude = ("secret",)


@admin.register(Submission)
class SubmissionAdmin(ModelAdmin):
    list_display = ("id", "benchmark", "team", "label", "kind", "state", "n_timeouts", "n_errors", "created_at")
    list_filter = ("kind", "state")
    readonly_fields = ("benchmark", "team", "kind", "file_format", "file_sha256", "judge", "scoring_run", "created_by", "created_at", "finished_at")
