"""Test helpers for the crowd-quality steps: play what a browser would play before answering."""

from __future__ import annotations

from django.urls import reverse


def play_screen(client, attempt) -> dict:
    """Fetch every sound of a screening attempt, as the page's players do; returns the form's receipt fields, as the
    page fills them (answers count only for sounds the page proved receiving)."""
    import json

    from common import audio_proof

    fields = {}
    for index in range(attempt.trials):
        response = client.get(reverse("screening-trial", kwargs={"token": attempt.token, "index": index}))
        assert response.status_code == 200
        token = response[audio_proof.HEADER]
        fields[f"receipt-{index}"] = json.dumps({"side": str(index), "token": token, "bytes": audio_proof.answer_for(response.content, token)})
    return fields


def screen_receipts_ready(page, timeout_s: float = 20.0) -> None:
    """In a browser on the screening page: wait until the page holds a receipt for every sound it loaded."""
    import time

    deadline = time.monotonic() + timeout_s
    script = "() => [...document.querySelectorAll('input[id^=\"receipt-\"]')].every((i) => i.value)"
    while time.monotonic() < deadline:
        if page.evaluate(script):
            return
        page.wait_for_timeout(100)
    state = page.evaluate("() => [...document.querySelectorAll('audio[data-trial]')].map((a) => [a.dataset.trial, a.readyState, a.networkState, !!document.getElementById('receipt-' + a.dataset.trial).value])")
    raise AssertionError(f"the screening page holds no receipt for some sounds: (trial, readyState, networkState, receipt) {state}")


def play_practice(client, item, shown_a: str = "a") -> dict:
    """Fetch both clips of a practice item; returns the answer form's receipt fields, as the page fills them."""
    import json

    from common import audio_proof

    fields = {}
    for side, which in (("A", shown_a), ("B", "b" if shown_a == "a" else "a")):
        response = client.get(reverse("practice-audio", kwargs={"item_id": item.pk, "which": which}))
        assert response.status_code == 200
        body = b"".join(response.streaming_content) if response.streaming else response.content
        token = response[audio_proof.HEADER]
        fields[f"receipt_{side}"] = json.dumps({"side": side, "token": token, "bytes": audio_proof.answer_for(body, token)})
    return fields


def hear_practice(page, seconds: float) -> None:
    """In a browser on the practice page: play A, then B, on the A/B transport (keyboard only) until each was
    heard for `seconds` on the audio clock; the first key press is what loads the clips."""
    # The page's scripts are deferred: the markup can be there a moment before they have run. Polled with evaluate,
    # not wait_for_function, whose predicate goes through eval and so is refused by the page's CSP.
    for _ in range(100):
        if page.evaluate("window.auditoriumPractice !== undefined"):
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the practice page's script did not run")
    for side in ("A", "B"):
        for _ in range(200):
            state = page.evaluate("window.auditoriumPractice.snapshot()")
            if state["ready"] and state["log"][side]["seconds"] >= seconds:
                break
            if state["loading"]:
                pass  # the clips are on their way
            elif state["ready"] and state["active"] != side:
                page.keyboard.press(side.lower())
            elif not state["playing"]:
                page.keyboard.press("Space")  # the first press loads both clips; a clip that ended plays again
            page.wait_for_timeout(100)
        else:
            raise AssertionError(f"practice clip {side} was not heard for {seconds} s: {state}")
    if page.evaluate("window.auditoriumPractice.snapshot()")["playing"]:
        page.keyboard.press("Space")


def judge_pair_by_keyboard(page, seconds: float) -> None:
    """On the listening page, as a participant would with the keyboard: read the instruction, play A then B
    for `seconds` each, answer both questions with a confidence, and press Submit."""
    page.wait_for_selector("#btn-read", state="visible")
    page.keyboard.press("Enter")  # "I have read the instruction"
    page.wait_for_selector("#btn-play:not([disabled])", timeout=15_000)
    page.locator("body").focus()
    for side in ("A", "B"):
        for _ in range(200):
            state = page.evaluate("window.auditoriumListening.snapshot()")
            if state["log"][side]["seconds"] >= seconds:
                break
            if state["active"] != side:
                page.keyboard.press(side.lower())
            elif not state["playing"]:
                page.keyboard.press("Space")
            page.wait_for_timeout(100)
        else:
            raise AssertionError(f"clip {side} was not heard for {seconds} s: {state}")
    if page.evaluate("window.auditoriumListening.snapshot()")["playing"]:
        page.keyboard.press("Space")
    for key in ("q", "Digit3", "r", "Digit4"):  # A follows the instruction better (3), B is better music (4)
        page.keyboard.press(key)
    page.wait_for_selector("#btn-submit:not([disabled])")
    page.click("#btn-submit")
