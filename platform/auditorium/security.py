"""Security headers on every response: a Content-Security-Policy, a Permissions-Policy and the like.

The pages load scripts and styles only from the site's own static files (no inline code, no CDN),
so the policy allows 'self' alone. Django's own middleware sets X-Content-Type-Options,
Referrer-Policy, Cross-Origin-Opener-Policy (SecurityMiddleware) and X-Frame-Options.
"""

from __future__ import annotations

from django.conf import settings

PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()"


def content_security_policy() -> str:
    return "; ".join(f"{name} {' '.join(values)}" for name, values in settings.AUDITORIUM_CSP.items())


class SecurityHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", content_security_policy())
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response
