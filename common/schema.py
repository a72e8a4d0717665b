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
                responses[status] = self._error_body(status, description)
        # A view may declare a refusal without a body (`403: None`); the exception handler still sends one.
        for status, body in responses.items():
            if status.startswith("4") and "content" not in body:
                responses[status] = self._error_body(status, body.get("description") or ERROR_STATUSES.get(status, "Refused."))
        return responses

    def _error_body(self, status: str, description: str) -> dict:
        body = self._get_response_for_code(ErrorSerializer, status, direction="response")
        body["description"] = description
        return body
