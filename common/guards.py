"""Role guards for HTML views, one for every app: who is not a researcher gets the same 403 page, saying why.

The study rule (which researchers may reach which study) is annotation.access; this is only the role check
in front of it, and the one forbidden page every refusal renders.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .roles import is_researcher

RESEARCHERS_ONLY = "This page is for researchers. Ask an administrator if you need access."


def forbidden(request: HttpRequest, message: str = RESEARCHERS_ONLY) -> HttpResponse:
    """The 403 page, with the sentence that says who may open it."""
    return render(request, "annotation/forbidden.html", {"message": message, "is_researcher": is_researcher(request.user)}, status=403)


def researcher_required(view=None, *, message: str = RESEARCHERS_ONLY):
    """Signed-in researchers and admins only; anyone else signed in gets the 403 page with `message`."""

    def decorate(inner):
        @login_required
        @wraps(inner)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not is_researcher(request.user):
                return forbidden(request, message)
            return inner(request, *args, **kwargs)

        return wrapped

    return decorate(view) if view is not None else decorate
