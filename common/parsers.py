"""A JSON parser with a bounded nesting depth.

Python's json module recurses once per level, so `[[[[...]]]]` a few thousand deep raises
RecursionError deep in the parser (a 500); and a body nested a few hundred deep that does parse
still costs every later recursive walk (validation, JSONField storage). No request the API
understands nests deeper than a handful of levels, so anything past JSON_MAX_DEPTH is refused
as a 400 with a sentence saying why.
"""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils.json import strict_constant

DEFAULT_MAX_DEPTH = 32


def max_depth() -> int:
    return int(getattr(settings, "JSON_MAX_DEPTH", DEFAULT_MAX_DEPTH))


def json_depth(value, *, limit: int) -> int:
    """The nesting depth of a parsed value, walked without recursion; stops counting past limit."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


class JsonTooDeep(ValueError):
    pass


def loads_bounded(text: str | bytes, *, limit: int | None = None, parse_constant=None):
    """json.loads that refuses documents nested deeper than limit (JsonTooDeep) instead of recursing without end."""
    limit = max_depth() if limit is None else limit
    try:
        value = json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise JsonTooDeep(f"the JSON is nested deeper than {limit} levels") from None
    if json_depth(value, limit=limit) > limit:
        raise JsonTooDeep(f"the JSON is nested deeper than {limit} levels")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, refusing bodies nested deeper than JSON_MAX_DEPTH and non-standard numbers."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
        except UnicodeDecodeError:
            raise ParseError(f"The request body is not valid {encoding} text.") from None
        try:
            return loads_bounded(text, parse_constant=strict_constant if self.strict else None)
        except JsonTooDeep as exc:
            raise ParseError(f"JSON parse error: {exc}; send a flatter document.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
