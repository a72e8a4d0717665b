"""The Prolific API client: the token's encryption at rest, and requests with timeouts, retries and a log row each.

Calls go only to settings.PROLIFIC_API_BASE. Each request carries `Authorization: Token <token>` (Prolific's
documented scheme) and an Idempotency-Key header; Prolific documents no such header, so nothing here relies on
it: callers keep their own state (services/prolific.py) so that a retried call never pays twice.

The token is never logged, never put in an exception or a log row: answers and errors are scrubbed of it, and of
the participant ids an answer carries (a submission list names them), before they are stored.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from dataclasses import dataclass

import requests
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from urllib3.exceptions import NewConnectionError

from .prolific_models import ProlificCall

logger = logging.getLogger(__name__)

ANSWER_KEPT = 2000
# Answers worth asking again for: rate limited or the server failing; the request changed nothing or is safe to repeat.
RETRY_STATUSES = {429, 500, 502, 503, 504}


# --- The token at rest ------------------------------------------------------------------------------


def _fernet() -> Fernet:
    secret = (settings.PROLIFIC_TOKEN_KEY or settings.SECRET_KEY).encode()
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"auditorium.prolific-token").derive(secret)
    return Fernet(base64.urlsafe_b64encode(key))


def token_encrypt(token: str) -> str:
    return _fernet().encrypt(token.encode()).decode()


class TokenUnreadable(Exception):
    pass


def token_decrypt(ciphertext: str) -> str:
    try:
        return _fernet().decrypt(ciphertext.encode()).decode()
    except (InvalidToken, ValueError):
        raise TokenUnreadable("The stored Prolific token can no longer be read (the site's key changed); enter the token again.") from None


# --- Requests ---------------------------------------------------------------------------------------


class ProlificError(Exception):
    """A call that did not succeed. `ambiguous`: the request may have reached Prolific and acted (a timeout, a 5xx)."""

    def __init__(self, message: str, *, status: int | None = None, ambiguous: bool = False, body=None):
        super().__init__(message)
        self.message, self.status, self.ambiguous, self.body = message, status, ambiguous, body


@dataclass
class _Outcome:
    status: int | None
    text: str
    error: str
    ambiguous: bool


_ID_KEYS = ("participant_id", "participant")


def _participant_ids(value) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str) and item:
                found.add(item)
            else:
                found |= _participant_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _participant_ids(item)
    return found


class ProlificClient:
    def __init__(self, *, token: str, study, base: str | None = None):
        self._token = token
        self.study = study
        self.base = (base or settings.PROLIFIC_API_BASE).rstrip("/") + "/"
        self.timeout = float(settings.PROLIFIC_TIMEOUT_S)
        self.retries = int(settings.PROLIFIC_RETRIES)
        self.backoff = float(settings.PROLIFIC_BACKOFF_S)

    def scrub(self, text: str, extra: set[str] = frozenset()) -> str:
        if self._token:
            text = text.replace(self._token, "<token>")
        for pid in sorted(extra, key=len, reverse=True):
            if len(pid) >= 4:
                text = text.replace(pid, "<participant>")
        return text

    def _once(self, method: str, path: str, body, key: str) -> _Outcome:
        headers = {"Authorization": f"Token {self._token}", "Accept": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        try:
            # requests never logs headers; its exceptions name the URL only, which carries no token.
            response = requests.request(method, self.base + path.lstrip("/"), json=body, headers=headers, timeout=self.timeout, allow_redirects=False)
        except requests.exceptions.ConnectTimeout:
            return _Outcome(None, "", f"no connection within {self.timeout:g} s", ambiguous=False)
        except requests.exceptions.Timeout:
            return _Outcome(None, "", f"no answer within {self.timeout:g} s", ambiguous=True)
        except requests.exceptions.ConnectionError as exc:
            # A refused connection sent nothing; a connection dropped mid-answer may have acted.
            reason = getattr(exc.args[0] if exc.args else None, "reason", None)
            sent = not isinstance(reason, NewConnectionError)
            return _Outcome(None, "", "connection failed" + (" after the request was sent" if sent else ""), ambiguous=sent)
        except requests.exceptions.RequestException as exc:
            return _Outcome(None, "", f"request failed: {type(exc).__name__}", ambiguous=False)
        return _Outcome(response.status_code, response.text, "", ambiguous=response.status_code >= 500)

    def call(self, method: str, path: str, *, body=None, key: str = "", retry: bool = True, hide: set[str] = frozenset()):
        """The answer's JSON (or text) for a 2xx; else ProlificError. Every attempt is a ProlificCall row.

        `retry`: the call is safe to repeat (a read, an idempotent transition, a bonus set-up that pays nothing), so a
        timeout, a dropped connection, 429 or 5xx is tried again, up to settings.PROLIFIC_RETRIES more times with
        exponential backoff, with the same idempotency key. Without it (a pay), only a refused connection is retried.
        `hide`: strings (participant ids sent in the body) scrubbed from the stored answer as well."""
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            start = time.monotonic()
            outcome = self._once(method, path, body, key)
            parsed = None
            if outcome.text:
                try:
                    parsed = json.loads(outcome.text)
                except ValueError:
                    parsed = None
            hidden = set(hide) | _participant_ids(parsed)
            ProlificCall.objects.create(
                study=self.study, method=method, endpoint=self.scrub("/" + path.lstrip("/"), hidden)[:300], status_code=outcome.status,
                answer=self.scrub(outcome.text, hidden)[:ANSWER_KEPT], error=self.scrub(outcome.error, hidden)[:300], idempotency_key=key,
                attempt=attempt, duration_ms=int((time.monotonic() - start) * 1000),
            )  # fmt: skip
            if outcome.status is not None and 200 <= outcome.status < 300:
                return parsed if parsed is not None else outcome.text
            unsent = (outcome.status is None and not outcome.ambiguous) or outcome.status == 429
            if attempt == attempts or not (unsent or (retry and (outcome.status is None or outcome.status in RETRY_STATUSES))):
                break
            logger.warning("Prolific %s %s failed (%s), retrying", method, path.split("?")[0], outcome.error or outcome.status, extra={"attempt": attempt})
            time.sleep(self.backoff * (2 ** (attempt - 1)))
        detail = outcome.error or f"HTTP {outcome.status}"
        if outcome.status is not None and parsed is not None:
            detail += ": " + self.scrub(_error_text(parsed), hidden)[:300]
        raise ProlificError(f"Prolific answered {method} {path.split('?')[0]} with {detail}", status=outcome.status, ambiguous=outcome.ambiguous, body=parsed)


def _error_text(parsed) -> str:
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict):
            detail = error.get("detail") or error.get("title") or error
            return detail if isinstance(detail, str) else json.dumps(detail)[:300]
        return str(error)
    return str(parsed)


STUDY_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")
