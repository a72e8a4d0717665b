from django.urls import path

from . import consumers

websocket_urlpatterns = [
    path("ws/arena/leaderboard/", consumers.LeaderboardConsumer.as_asgi()),
]
