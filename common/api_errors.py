"""One error shape for every JSON API: {"detail": sentence, "code": slug, "errors"?: {field: [...]}, ...}.

A person reads `detail`; a program branches on `code`. Validation failures keep DRF's per-field
messages under `errors`. Refusals with context (seconds heard, moderation reasons) add their
keys beside these. The schema documents the shape once as `Error` (see `ErrorSerializer`).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .errors import ServiceError


class ErrorSerializer(serializers.Serializer):
    """What every API answers when it refuses a request (any 4xx)."""

    detail = serializers.CharField(help_text="One sentence a person can act on.")
    code = serializers.CharField(help_text="A stable slug to branch on, e.g. `invalid`, `not_found`, `rate_limited`.")
    errors = serializers.DictField(required=False, help_text="For `invalid`: the messages per input field.")


def first_error(errors, prefix: str = "") -> str:
    """One readable sentence from DRF's nested validation errors."""
    if isinstance(errors, list):
        for item in errors:
            if isinstance(item, (dict, list)):
                return first_error(item, prefix)
            return f"{prefix.rstrip('.')}: {item}" if prefix else str(item)
        return "Invalid input."
    for field, value in errors.items():
        name = f"{prefix}{field}"
        if field == "non_field_errors":
            name = prefix.rstrip(".")
        if isinstance(value, dict):
            return first_error(value, prefix=f"{name}.")
        if isinstance(value, list) and value:
            first = value[0]
            if isinstance(first, (dict, list)):
                return first_error(first, prefix=f"{name}.")
            return f"{name}: {first}" if name else str(first)
        if isinstance(value, str):
            return f"{name}: {value}" if name else value
    return "Invalid input."


def _code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    return codes if isinstance(codes, str) else exc.default_code


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        response = Response({"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.status)
        if exc.retry_after:
            response["Retry-After"] = str(int(exc.retry_after))
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # not an API refusal: a server error, logged and answered by Django
    if isinstance(exc, exceptions.ValidationError):
        errors = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = {"detail": first_error(errors), "code": "invalid", "errors": errors}
    else:
        detail = exc.detail
        if isinstance(detail, (list, dict)):
            detail = first_error(detail)
        response.data = {"detail": str(detail), "code": _code(exc)}
    return response

