"""The one exception type services raise for requests that cannot be carried out.

Every app's services raise it; the API exception handler (`common.api_errors`) and the HTML
views turn it into the same answer for the person who made the request.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request that cannot be carried out; the message is meant for the person who made it.

    `extra` holds machine-readable context sent beside the message (for example the seconds heard
    so far); `retry_after` (seconds) becomes a Retry-After header.
    """

    status = 400

    def __init__(self, message: str, *, code: str = "invalid", status: int | None = None, extra: dict | None = None, retry_after: int | None = None):
        super().__init__(message)
        self.message, self.code = message, code
        if status is not None:
            self.status = status
        self.extra = dict(extra or {})
        self.retry_after = retry_after
