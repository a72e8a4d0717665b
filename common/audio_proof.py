"""Proof that a client received a clip's bytes, not only that the server handed them to its socket.

A server can only know what it wrote; a client with a small receive buffer that reads the
headers and leaves is indistinguishable, at the server, from one that read everything, up to the
kernel's buffers. So every audio response carries, in its `Audio-Proof` header, a signed challenge:
byte ranges of that response's body, drawn at random when the response starts, one of them its last
bytes. The page (or an API client) answers with the bytes found there, base64, in a listening post;
a right answer is a receipt for that response's range, and only fetches with a receipt count as
heard (annotation/services/listening.py). Reading the bytes at the ranges means reading the stream
through them: the last range makes it the whole response.

Fetching the challenged bytes again by a small Range request after the challenge does not help:
an answer is refused when the same listener was sent any of the challenged bytes after the
challenge was issued (the overlap rule, checked against the fetch records).

The token names the request path, the response's range, its start time and a keyed digest of the
bytes at the ranges as they were served, signed with the project's secret (django.core.signing); it
names no clip, so a blind page's URLs stay as opaque as before, and the answer is checked against
what that response sent, whatever file the route served (a rendered copy, an arena battle's WAV).
The digest is an HMAC under the secret, so a client cannot test guesses against it. It is valid for
PROOF_MAX_AGE seconds.

`receipts_verify` is the one rule every route that credits listening applies to its receipts; the
route says which URLs serve each of its sides and which bytes it sent each side since.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from datetime import datetime

from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from .errors import ServiceError

HEADER = "Audio-Proof"
SALT = "auditorium.audio-proof"
RANGES = 8  # random ranges, besides the last bytes
RANGE_BYTES = 32
PROOF_MAX_AGE = 6 * 3600
MAX_ANSWER_CHARS = 4 * (RANGE_BYTES * (RANGES + 1) // 3 + 3)
MAX_RECEIPTS = 8


def challenge_ranges(first: int, last: int, *, rng=None) -> list[tuple[int, int]]:
    """(offset, length) pairs inside [first, last]: RANGES at random and the response's last bytes, in order."""
    rng = rng or secrets.SystemRandom()
    size = last - first + 1
    length = min(RANGE_BYTES, size)
    starts = {first + size - length}
    if size > length:
        starts.update(first + rng.randrange(0, size - length + 1) for _ in range(RANGES))
    return [(start, length) for start in sorted(starts)]


def _digest(data: bytes) -> str:
    return salted_hmac(SALT + ".bytes", data, algorithm="sha256").hexdigest()


def challenge_token(
    *, path: str, first: int, last: int, issued: datetime, ranges: list[tuple[int, int]], source: str | None = None, data: bytes | None = None
) -> str:
    """The Audio-Proof header of a response that sends bytes [first, last] at `path`: of file `source`, or of the
    bytes `data` (a sound made per request, served whole)."""
    # Not compressed: the page reads the ranges from the token itself (base64 JSON before the first colon).
    digest = _digest(b"".join(data[o : o + n] for o, n in ranges) if data is not None else expected_bytes(source, ranges))
    return signing.dumps({"p": path, "f": first, "l": last, "t": issued.isoformat(), "r": [list(r) for r in ranges], "d": digest}, salt=SALT)


def challenge_open(token) -> dict:
    """The signed challenge; a ServiceError saying why when it is not one of ours or too old."""
    if not isinstance(token, str) or len(token) > 4000:
        raise ServiceError("A receipt's token must be the Audio-Proof header of an audio response.", code="bad_receipt")
    try:
        data = signing.loads(token, salt=SALT, max_age=PROOF_MAX_AGE)
    except signing.SignatureExpired:
        raise ServiceError("That audio response is too old to prove: fetch the clip again and answer its new Audio-Proof header.", code="receipt_expired") from None
    except signing.BadSignature:
        raise ServiceError("A receipt's token is not an Audio-Proof header this server issued.", code="bad_receipt") from None
    if "d" not in data:  # issued before responses carried their digest
        raise ServiceError("That audio response is too old to prove: fetch the clip again and answer its new Audio-Proof header.", code="receipt_expired")
    return {
        "path": data["p"], "first": int(data["f"]), "last": int(data["l"]), "issued": datetime.fromisoformat(data["t"]),
        "ranges": [(int(o), int(n)) for o, n in data["r"]], "digest": data["d"],
    }


def answer_bytes(answer) -> bytes:
    if not isinstance(answer, str) or len(answer) > MAX_ANSWER_CHARS:
        raise ServiceError("A receipt's bytes must be base64 text of the challenged ranges, in order.", code="bad_receipt")
    try:
        return base64.b64decode(answer, validate=True)
    except (binascii.Error, ValueError):
        raise ServiceError("A receipt's bytes must be base64 text of the challenged ranges, in order.", code="bad_receipt") from None


def expected_bytes(path: str, ranges: list[tuple[int, int]]) -> bytes:
    """The file's bytes at the ranges, concatenated: what a client that holds them answers."""
    out = bytearray()
    with open(path, "rb") as handle:
        for offset, length in ranges:
            handle.seek(offset)
            out += handle.read(length)
    return bytes(out)


def token_ranges(token: str) -> list[tuple[int, int]]:
    """The ranges a token names, read as a client reads them: without the secret (the signature is the server's to check)."""
    payload = json.loads(signing.b64_decode(token.split(":", 1)[0].encode()))
    return [(int(o), int(n)) for o, n in payload["r"]]


def answer_for(data: bytes, token: str, *, offset: int = 0) -> str:
    """A client's answer from the bytes it received (`data` starting at file byte `offset`): for tests and API clients in Python."""
    return base64.b64encode(b"".join(data[o - offset : o - offset + n] for o, n in token_ranges(token))).decode()


def overlaps(ranges: list[tuple[int, int]], first: int, last: int) -> bool:
    return any(o <= last and first <= o + n - 1 for o, n in ranges)


def receipts_verify(*, receipts, sides, serves, sent_after, label: str = "clip") -> list[tuple[str, dict]]:
    """The receipts of one listening post, checked: [(side, challenge)] for each, in order; a ServiceError with the
    reason for the first that fails, so the caller stores nothing of the post.

    `receipts`: [{side, token, bytes}], at most MAX_RECEIPTS, each side one of `sides`. `serves(side, path)`: whether
    `path` (the URL the token names) is a URL that side is served at for this listener. `sent_after(side, issued)`: the (first, last) byte ranges of that side sent to the same listener after
    `issued`; a challenged byte among them refuses the receipt (a Range fetch of just the challenged bytes after
    reading the headers proves nothing)."""
    if receipts in (None, []):
        return []
    if not isinstance(receipts, list) or len(receipts) > MAX_RECEIPTS:
        raise ServiceError(f"receipts must be a list of at most {MAX_RECEIPTS} {{side, token, bytes}} objects.", code="bad_receipt")
    checked = []
    for index, receipt in enumerate(receipts):
        if not isinstance(receipt, dict) or receipt.get("side") not in sides:
            raise ServiceError(f"Receipt {index}: side must be one of {', '.join(sides)}.", code="bad_receipt")
        side = receipt["side"]
        challenge = challenge_open(receipt.get("token"))
        if not serves(side, challenge["path"]):
            raise ServiceError(f"Receipt {index}: its token is for another {label} than {side}.", code="bad_receipt")
        if not constant_time_compare(_digest(answer_bytes(receipt.get("bytes"))), challenge["digest"]):
            raise ServiceError(f"Receipt {index}: the bytes are not those of {label} {side} at the challenged ranges; answer from the bytes received.", code="receipt_wrong")
        if any(overlaps(challenge["ranges"], first, last) for first, last in sent_after(side, challenge["issued"])):
            raise ServiceError(f"Receipt {index}: {label} {side}'s challenged bytes were sent again after the challenge; answer the newest response's Audio-Proof.", code="receipt_refetched")
        checked.append((side, challenge))
    return checked


def whole_response_sides(*, fields: dict[str, str], urls: dict[str, str], label: str = "clip") -> set[str]:
    """The sides proven by receipts posted as form fields (side -> the receipt's JSON, empty when none), for a route
    that sends every response whole and keeps no record of it: no later fetch can have sent the challenged bytes alone,
    so only the receipt itself is checked. `urls`: the URL each side is served at. A malformed, forged or other
    side's receipt raises the ServiceError that says so."""
    given = []
    for side in urls:
        raw = fields.get(side) or ""
        if not raw:
            continue
        try:
            receipt = json.loads(raw)
        except ValueError:
            raise ServiceError(f"{label.capitalize()} {side}'s receipt is not JSON; reload the page.", code="bad_receipt") from None
        # The field names the side: a receipt moved to another side's field is checked as that side's.
        given.append({**receipt, "side": side} if isinstance(receipt, dict) else receipt)
    checked = receipts_verify(receipts=given, sides=tuple(urls), serves=lambda side, path: path == urls[side], sent_after=lambda side, issued: (), label=label)
    return {side for side, _ in checked}


def unproven_sentence(unproven: list[str], *, label: str = "clip") -> str:
    """What a refusal for too little listening adds when audio was sent but never shown received."""
    if not unproven:
        return ""
    verb = "was" if len(unproven) == 1 else "were"
    return (
        f" {label.capitalize()} {' and '.join(unproven)} {verb} sent but never shown received: answer each audio response's"
        " Audio-Proof header with the bytes it names (docs/listening.md)."
    )
