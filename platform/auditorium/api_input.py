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
        # is_valid() keeps the errors as a dict (or list); the raised error carries the same.
        raise serializers.ValidationError(exc.detail) from None
