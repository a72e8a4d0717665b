from django.contrib import admin, messages

from common.admin import ModelAdmin

from .models import ArenaPrompt, ArenaSystem, Battle, BoardSnapshot, CatalogClip, LeaderboardSnapshot, RejectedVote, Visitor, Vote
from .services import system_health_check


@admin.register(ArenaSystem)
class ArenaSystemAdmin(ModelAdmin):
    list_display = (
        "system", "adapter_kind", "weight", "is_active", "is_private", "withhold_audio", "open_weights", "licence", "supports_vocals", "supports_instrumental",
        "max_duration_seconds", "health", "health_checked_at",
    )
    list_filter = ("adapter_kind", "is_active", "is_private", "withhold_audio", "open_weights", "health", "supports_vocals", "supports_instrumental")
    list_editable = ("weight", "is_active", "is_private")
    search_fields = ("system__name", "system__organisation")
    readonly_fields = ("health", "health_detail", "health_checked_at", "created_at")
    actions = ["check_health"]

    @admin.action(description="Check health now (unhealthy systems leave the sampling pool)")
    def check_health(self, request, queryset):
        results = {str(s): system_health_check(arena_system=s) for s in queryset.select_related("system")}
        bad = [name for name, ok in results.items() if not ok]
        level = messages.WARNING if bad else messages.SUCCESS
        self.message_user(request, f"{len(results) - len(bad)} healthy, {len(bad)} unhealthy{': ' + ', '.join(bad) if bad else ''}.", level)


@admin.register(ArenaPrompt)
class ArenaPromptAdmin(ModelAdmin):
    list_display = ("id", "__str__", "is_prebaked", "is_active")
    list_filter = ("is_prebaked", "is_active")
    search_fields = ("text", "lyrics")
    readonly_fields = ("prompt_key",)


@admin.register(CatalogClip)
class CatalogClipAdmin(ModelAdmin):
    list_display = ("id", "arena_system", "prompt", "clip")
    list_filter = ("arena_system",)
    search_fields = ("prompt",)
    raw_id_fields = ("clip",)


@admin.register(Battle)
class BattleAdmin(ModelAdmin):
    list_display = ("public_id", "status", "system_a", "system_b", "is_instrumental", "is_prebaked", "created_at")
    list_filter = ("status", "is_instrumental", "is_prebaked")
    search_fields = ("public_id", "prompt")
    raw_id_fields = ("visitor", "clip_a", "clip_b")
    readonly_fields = ("public_id", "ip_hash", "created_at", "ready_at")


@admin.register(Vote)
class VoteAdmin(ModelAdmin):
    list_display = ("id", "battle", "choice", "source", "listen_seconds_a", "listen_seconds_b", "created_at")
    list_filter = ("source", "choice")
    raw_id_fields = ("battle", "visitor")


@admin.register(RejectedVote)
class RejectedVoteAdmin(ModelAdmin):
    list_display = ("id", "battle", "reason", "choice", "created_at")
    list_filter = ("reason",)
    raw_id_fields = ("battle", "visitor")


@admin.register(Visitor)
class VisitorAdmin(ModelAdmin):
    list_display = ("pseudonym", "terms_version", "terms_accepted_at", "is_banned", "created_at")
    list_filter = ("is_banned", "terms_version")
    list_editable = ("is_banned",)
    search_fields = ("pseudonym",)
    readonly_fields = ("cookie_hash", "pseudonym", "created_at")


@admin.register(LeaderboardSnapshot)
class LeaderboardSnapshotAdmin(ModelAdmin):
    list_display = ("id", "computed_at", "votes")


@admin.register(BoardSnapshot)
class BoardSnapshotAdmin(ModelAdmin):
    list_display = ("id", "kind", "period", "cutoff", "votes", "computed_at")
    list_filter = ("kind",)
    readonly_fields = ("kind", "period", "cutoff", "votes", "payload", "computed_at")
