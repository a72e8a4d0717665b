"""Validate a request body with a DRF serializer class without building its fields per request.

`Serializer(data=...)` deep-copies every declared field (and builds their validators again)
each time it is made: on the judgment submit, whose input nests two listening-log entries,
that copy was a fifth of a web worker's CPU under load (py-spy). The fields' validation
keeps no per-request state, so one instance per class validates every request, in any
thread, with the same result and the same error shape as `is_valid(raise_exception=True)`.

Only for input serializers that need no context (no request, no view) and no instance.
"""

from __future__ import annotations

import threading

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings

_prototypes: dict[type, serializers.Serializer] = {}
_lock = threading.Lock()


def validated(serializer_class: type[serializers.Serializer], data) -> dict:
    """`serializer_class(data=data)`'s validated_data; raises the same ValidationError (400) on bad input."""
    prototype = _prototypes.get(serializer_class)
    if prototype is None:
        with _lock:
            prototype = _prototypes.get(serializer_class)
            if prototype is None:
                prototype = serializer_class()
                # Built (and bound) once, before another thread can use it.
                prototype.fields  # noqa: B018
                _prototypes[serializer_class] = prototype
    try:
        return prototype.run_validation(data)
    except serializers.ValidationError as exc:
        detail = exc.detail
        if isinstance(detail, list) and len(detail) == 1 and getattr(detail[0], "code", None) == "null":
            # Serializer.errors says this for a null body instead of "may not be null".
            detail = {api_settings.NON_FIELD_ERRORS_KEY: [ErrorDetail("No data provided", code="null")]}
        raise serializers.ValidationError(detail) from None
