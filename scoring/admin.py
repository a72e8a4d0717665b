from django import forms
from django.contrib import admin, messages
from django.shortcuts import render

from annotation.models import Study
from common.admin import ModelAdmin
from common.errors import ServiceError

from . import services
from .judges import adapter_for, templates_for
from .models import ClipScore, ExternalResultRow, ExternalResultSet, Judge, ScoringRun, TrainingRun, Verdict
from .tasks import run_start


class LaunchForm(forms.Form):
    study = forms.ModelChoiceField(queryset=Study.objects.order_by("name"), help_text="Score every pair of this study.")
    templates = forms.CharField(
        required=False, help_text="Audio-LLM judges: one template, or several separated by commas for a template-robustness group."
    )
    label = forms.CharField(required=False, max_length=200)


@admin.register(Judge)
class JudgeAdmin(ModelAdmin):
    list_display = ("key", "kind", "version", "queue", "enabled", "weights", "availability")
    list_filter = ("kind", "queue", "enabled")
    search_fields = ("key", "weights")
    actions = ["launch_run"]

    @admin.display(description="Availability")
    def availability(self, obj: Judge) -> str:
        state = adapter_for(obj).availability()
        return "available" if state.available else f"unavailable: {state.reason}"

    @admin.action(description="Launch a scoring run on a study")
    def launch_run(self, request, queryset):
        if "apply" in request.POST:
            form = LaunchForm(request.POST)
            if form.is_valid():
                templates = [t.strip() for t in form.cleaned_data["templates"].split(",") if t.strip()]
                for judge in queryset:
                    try:
                        if len(templates) > 1:
                            runs = services.run_create_templates(
                                judge=judge, templates=templates, study=form.cleaned_data["study"], label=form.cleaned_data["label"], user=request.user
                            )
                        else:
                            runs = [
                                services.run_create(
                                    judge=judge,
                                    study=form.cleaned_data["study"],
                                    template=templates[0] if templates else "",
                                    label=form.cleaned_data["label"],
                                    user=request.user,
                                )
                            ]
                    except ServiceError as exc:
                        self.message_user(request, f"{judge.key}: {exc.message}", level=messages.ERROR)
                    else:
                        self.message_user(request, f"{judge.key}: queued run(s) {', '.join(f'#{r.pk}' for r in runs)} ({runs[0].total} pairs each).")
                return None
        else:
            form = LaunchForm()
        context = {
            **self.admin_site.each_context(request),
            "title": "Launch a scoring run",
            "judges": queryset,
            "templates": sorted({t for j in queryset for t in templates_for(j.kind)}),
            "form": form,
            "action": "launch_run",
            "opts": self.model._meta,
        }
        return render(request, "scoring/admin_launch.html", context)


@admin.register(ScoringRun)
class ScoringRunAdmin(ModelAdmin):
    list_display = ("id", "judge", "study", "template", "state", "done", "failed", "total", "created_at")
    list_filter = ("state", "judge", "study")
    readonly_fields = ("pair_ids", "summary", "done", "failed", "total", "finished_at", "created_at")
    actions = ["resume", "recompare"]

    @admin.action(description="Queue the pairs still without a verdict")
    def resume(self, request, queryset):
        for run in queryset:
            if run.state == ScoringRun.State.DONE:
                continue
            run_start.delay(run.pk)
        self.message_user(request, "Queued.")

    @admin.action(description="Recompute the comparison with human votes")
    def recompare(self, request, queryset):
        for run in queryset:
            services.run_compare(run=run)
        self.message_user(request, f"Recomputed {queryset.count()} run(s).")


@admin.register(Verdict)
class VerdictAdmin(ModelAdmin):
    list_display = ("id", "run", "pair", "status", "created_at")
    list_filter = ("status", "run__judge")
    raw_id_fields = ("pair", "alignment_choice", "musicality_choice")


@admin.register(ClipScore)
class ClipScoreAdmin(ModelAdmin):
    list_display = ("id", "judge", "judge_version", "clip_sha256", "context_key")
    list_filter = ("judge",)
    search_fields = ("clip_sha256",)


@admin.register(ExternalResultSet)
class ExternalResultSetAdmin(ModelAdmin):
    list_display = ("name", "judge_name", "created_at")
    readonly_fields = ("sha256", "published_summary", "computed_summary")


@admin.register(ExternalResultRow)
class ExternalResultRowAdmin(ModelAdmin):
    list_display = ("result_set", "row_index", "subset", "audio_a", "audio_b")
    list_filter = ("result_set", "subset")
    raw_id_fields = ("pair",)


@admin.register(TrainingRun)
class TrainingRunAdmin(ModelAdmin):
    list_display = ("id", "study", "feature_judge", "seed", "state", "stage", "judge", "created_at")
    list_filter = ("state", "feature_judge")
    readonly_fields = ("options", "metrics", "error")
