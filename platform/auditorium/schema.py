"""OpenAPI: every operation documents its refusals with the one error shape (`Error`)."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

from .api_errors import ErrorSerializer

# 401 only where a login can help: DRF answers 403 to anonymous session clients.
ERROR_STATUSES = {
    "400": "The request is malformed or refused by a rule; `detail` says which.",
    "403": "Not signed in, no permission, or a missing CSRF token.",
    "404": "No such object for you.",
    "429": "Too many requests; see Retry-After.",
}


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for status, description in ERROR_STATUSES.items():
            if status not in responses:
                body = self._get_response_for_code(ErrorSerializer, status, direction=direction)
                body["description"] = description
                responses[status] = body
        return responses
