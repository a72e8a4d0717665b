"""static/js/live.js in a real browser, against a scripted socket and poll URL (Playwright's routes, no
server): a socket that opens and drops at once is retried later each time, not every second; the page
polls while the socket is down and not while it is live; a 44xx close is not retried."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ORIGIN = "http://live.test"
LIVE_JS = Path(__file__).resolve().parents[2] / "static" / "js" / "live.js"
PAGE = """<!doctype html><html><head><script src="/static/js/live.js"></script><script src="/page.js"></script></head><body></body></html>"""
# What a page does with the client: every state, message and polled body is kept for the test to read.
PAGE_JS = """
window.seen = { states: [], messages: [], polled: [] };
window.live = AuditoriumLive.connect("/ws/demo/", {
  onMessage: (m) => seen.messages.push(m),
  onStatus: (s) => seen.states.push(s),
  poll: { url: "/poll/", everyMs: 400, onData: (d) => seen.polled.push(d) },
});
"""


def open_page(browser, socket_handler):
    context = browser.new_context()
    page = context.new_page()
    attempts: list[float] = []
    polls: list[float] = []

    def serve(route):
        path = route.request.url[len(ORIGIN) :]
        if path == "/static/js/live.js":
            return route.fulfill(body=LIVE_JS.read_text(), content_type="text/javascript")
        if path == "/page.js":
            return route.fulfill(body=PAGE_JS, content_type="text/javascript")
        if path == "/poll/":
            polls.append(time.monotonic())
            return route.fulfill(body=json.dumps({"n": len(polls)}), content_type="application/json")
        return route.fulfill(body=PAGE, content_type="text/html")

    def socket(ws):
        attempts.append(time.monotonic())
        socket_handler(ws)

    page.route(f"{ORIGIN}/**", serve)
    page.route_web_socket("ws://live.test/ws/demo/", socket)
    page.goto(f"{ORIGIN}/")
    return context, page, attempts, polls


def seen(page) -> dict:
    return page.evaluate("window.seen")


def open_then_drop(ws):
    ws.send(json.dumps({"type": "hello"}))
    ws.close()


def test_a_socket_that_keeps_dropping_is_retried_with_backoff_while_the_page_polls(browser):
    # Each connection opens (one message comes through) and drops at once, as behind a proxy that cuts websockets.
    context, page, attempts, polls = open_page(browser, open_then_drop)
    page.wait_for_timeout(7_500)
    # Retried after 1, 2 and 4 s (started 0, 1, 3, 7 s): a fixed 1 s retry would have made 8 attempts.
    assert 3 <= len(attempts) <= 4, [round(t - attempts[0], 1) for t in attempts]
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert all(later > earlier * 1.5 for earlier, later in zip(gaps, gaps[1:])), gaps
    state = seen(page)
    assert state["states"][:3] == ["connecting", "live", "polling"] and "refused" not in state["states"], state["states"]
    assert len(state["messages"]) == len(attempts)
    assert len(polls) >= 10 and state["polled"][-1]["n"] >= len(polls) - 1  # the bodies reach onData (one may be in flight)
    assert not page.evaluate("window.live.live")
    context.close()


def test_a_live_socket_delivers_messages_and_the_page_does_not_poll(browser):
    context, page, attempts, polls = open_page(browser, lambda ws: ws.send(json.dumps({"type": "progress", "n": 1})))
    page.wait_for_function("window.seen && window.seen.messages.length === 1")
    page.wait_for_timeout(1_500)
    state = seen(page)
    assert state["messages"] == [{"type": "progress", "n": 1}] and state["states"] == ["connecting", "live"]
    assert page.evaluate("window.live.live") and len(attempts) == 1 and polls == []
    context.close()


def test_a_refused_socket_is_not_retried_and_the_page_goes_on_polling(browser):
    context, page, attempts, polls = open_page(browser, lambda ws: ws.close(code=4403, reason="forbidden"))
    page.wait_for_timeout(3_000)
    state = seen(page)
    assert len(attempts) == 1 and state["states"][-1] == "refused", state["states"]
    assert len(polls) >= 4
    page.evaluate("window.live.close()")
    count = len(polls)
    page.wait_for_timeout(1_000)
    assert len(polls) == count  # closed: no more polling
    context.close()
