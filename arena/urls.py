from django.urls import path

from common import converters  # noqa: F401  (registers <id:...>)

from . import api, release_views, views

app_name = "arena"
urlpatterns = [
    # HTML
    path("", views.arena, name="arena"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("leaderboard/history/", views.leaderboard_history, name="leaderboard-history"),
    path("audio/<uuid:public_id>/<str:side>/", views.battle_audio, name="audio"),
    path("release/", release_views.release, name="release"),
    path("release/status/", release_views.release_status, name="release-status"),
    path("release/<id:build_id>/download/", release_views.release_download, name="release-download"),
    # API
    path("api/terms/", api.TermsAcceptApi.as_view(), name="api-terms"),
    path("api/prompts/random/", api.PromptRandomApi.as_view(), name="api-prompt-random"),
    path("api/battles/", api.BattleCreateApi.as_view(), name="api-battle-create"),
    path("api/battles/<uuid:public_id>/", api.BattleDetailApi.as_view(), name="api-battle-detail"),
    path("api/battles/<uuid:public_id>/events/", api.ListenEventsApi.as_view(), name="api-battle-events"),
    path("api/battles/<uuid:public_id>/vote/", api.VoteApi.as_view(), name="api-battle-vote"),
    path("api/leaderboard/", api.LeaderboardApi.as_view(), name="api-leaderboard"),
    path("api/leaderboard/history/", api.LeaderboardHistoryApi.as_view(), name="api-leaderboard-history"),
]
