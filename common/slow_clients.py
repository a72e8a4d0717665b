"""uvicorn's HTTP protocol with a deadline for the request headers and one for the body.

uvicorn closes idle keep-alive connections but waits for ever on a client that sends half a
request line or a body at a byte a second: a few hundred such clients hold every connection.
Here a client that has not sent complete headers within AUDITORIUM_HEADER_TIMEOUT seconds
(default 15) is closed, and a body not complete within AUDITORIUM_BODY_TIMEOUT seconds
(default 30) after its headers is answered 408 and closed (platform/deploy/README.md).

Both of uvicorn's HTTP parsers get the deadlines: httptools (the default where it is installed, as
for plain uvicorn: it costs about a third of h11's CPU per request) and h11 (AUDITORIUM_HTTP=h11).
"""

from __future__ import annotations

import asyncio
import os

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HTTP_ENV = "AUDITORIUM_HTTP"
HEADER_TIMEOUT_ENV = "AUDITORIUM_HEADER_TIMEOUT"
BODY_TIMEOUT_ENV = "AUDITORIUM_BODY_TIMEOUT"
DEFAULT_HEADER_TIMEOUT = 15.0
DEFAULT_BODY_TIMEOUT = 30.0


def _seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    seconds = float(value)
    if seconds <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return seconds


def _parser() -> str:
    value = os.environ.get(HTTP_ENV, "").strip().lower()
    if value not in ("", "auto", "h11", "httptools"):
        raise ValueError(f"{HTTP_ENV} must be h11, httptools or auto, not {value!r}")
    if value in ("", "auto"):
        try:
            import httptools  # noqa: F401
        except ImportError:
            return "h11"
        return "httptools"
    return value


def protocol_class() -> type:
    """The protocol with the parser and the timeouts read from the environment now (at launch)."""
    header_timeout = _seconds(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT)
    body_timeout = _seconds(BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT)
    base = SlowClientHttpToolsProtocol if _parser() == "httptools" else SlowClientH11Protocol
    return type(base.__name__, (base,), {"header_timeout": header_timeout, "body_timeout": body_timeout})


REQUEST_TIMEOUT_BODY = b"Request body not received in time.\n"


class SlowClientH11Protocol(H11Protocol):
    header_timeout = DEFAULT_HEADER_TIMEOUT
    body_timeout = DEFAULT_BODY_TIMEOUT

    _deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float, handler) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, handler)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, self._headers_late)

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._deadline is None or self._waiting_for != "body":
                self._waiting_for = "body"
                self._arm(self.body_timeout, self._body_late)
        elif state is not h11.IDLE:
            # Headers and body are in (or the connection is done): the application has the request.
            self._disarm()
            self._waiting_for = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request on a kept-alive connection gets its own header deadline.
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._waiting_for = "headers"
            self._arm(self.header_timeout, self._headers_late)

    _waiting_for: str | None = "headers"

    def _headers_late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def _body_late(self) -> None:
        self._deadline = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_started and self.conn.our_state is h11.SEND_RESPONSE:
            body = REQUEST_TIMEOUT_BODY
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
            try:
                self.transport.write(self.conn.send(h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")))
                self.transport.write(self.conn.send(h11.Data(data=body)))
                self.transport.write(self.conn.send(h11.EndOfMessage()))
            except h11.LocalProtocolError:
                pass
        if cycle is not None:
            # The application, waiting in receive(), hears a disconnect; what it sends later is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()


def _httptools_base() -> type:
    # Imported only when chosen: httptools is optional for uvicorn.
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


try:
    _HttpToolsProtocol = _httptools_base()
except ImportError:  # pragma: no cover - httptools is in requirements.txt
    _HttpToolsProtocol = None


if _HttpToolsProtocol is not None:

    class SlowClientHttpToolsProtocol(_HttpToolsProtocol):
        """The same two deadlines on uvicorn's httptools protocol.

        httptools reports a request by callbacks: the header deadline runs from the connection's
        start (or the end of the last response) to on_headers_complete, the body deadline from
        there to on_message_complete, armed only when the request announces a body.
        """

        header_timeout = DEFAULT_HEADER_TIMEOUT
        body_timeout = DEFAULT_BODY_TIMEOUT

        _deadline: asyncio.TimerHandle | None = None
        _waiting_for: str | None = None

        def _arm(self, waiting_for: str, seconds: float, handler) -> None:
            self._disarm()
            self._waiting_for = waiting_for
            self._deadline = self.loop.call_later(seconds, handler)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            self._waiting_for = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm("headers", self.header_timeout, self._headers_late)

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()
            # GETs (no length, not chunked) are complete with their headers: no timer for them.
            for name, value in self.headers:
                if (name == b"content-length" and value.strip() not in (b"", b"0")) or name == b"transfer-encoding":
                    self._arm("body", self.body_timeout, self._body_late)
                    break

        def on_message_complete(self) -> None:
            if self._waiting_for == "body":
                self._disarm()
            super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # The next request on a kept-alive connection gets its own header deadline, unless it is
            # already in (pipelined) or arriving with a body.
            if not self.transport.is_closing() and self._idle() and self._waiting_for is None:
                self._arm("headers", self.header_timeout, self._headers_late)

        def _idle(self) -> bool:
            # A pipelined request that uvicorn has just started is self.cycle, not yet answered.
            return self.cycle is None or self.cycle.response_complete

        def _headers_late(self) -> None:
            self._deadline = None
            if self._waiting_for == "headers" and self._idle() and not self.transport.is_closing():
                self._waiting_for = None
                self.transport.close()

        def _body_late(self) -> None:
            self._deadline = None
            if self._waiting_for != "body" or self.transport.is_closing():
                return
            self._waiting_for = None
            cycle = self.cycle
            if cycle is not None and not cycle.response_started:
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                    b"content-length: " + str(len(REQUEST_TIMEOUT_BODY)).encode() + b"\r\nconnection: close\r\n\r\n" + REQUEST_TIMEOUT_BODY
                )
            if cycle is not None:
                # The application, waiting in receive(), hears a disconnect; what it sends later is dropped.
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()
