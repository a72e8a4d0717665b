"""The `<id:...>` path converter: a database id, or no match (404).

Django's `int` converter takes any run of digits; a number past what a 64-bit key holds then
reaches the database driver (precompiled SQL passes it straight through) and fails there as a
500 instead of missing. Ids past the range cannot name a row, so the URL does not match.
"""

from __future__ import annotations

from django.urls import register_converter

from .api_fields import MAX_ID


class IdConverter:
    regex = "[0-9]{1,20}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError("not a database id")  # the pattern does not match: 404
        return number

    def to_url(self, value) -> str:
        return str(int(value))


register_converter(IdConverter, "id")
