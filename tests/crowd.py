"""Test helpers for the crowd-quality steps: play what a browser would play before answering."""

from __future__ import annotations

from django.urls import reverse


def play_screen(client, attempt) -> None:
    """Fetch every sound of a screening attempt, as the page's players do (answers count only for sounds played)."""
    for index in range(attempt.trials):
        assert client.get(reverse("screening-trial", kwargs={"token": attempt.token, "index": index})).status_code == 200


def play_practice(client, item) -> None:
    """Fetch both clips of a practice item."""
    for which in ("a", "b"):
        response = client.get(reverse("practice-audio", kwargs={"item_id": item.pk, "which": which}))
        assert response.status_code in (200, 206)
        b"".join(response.streaming_content) if response.streaming else response.content
