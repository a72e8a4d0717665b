"""/api/schema/ built once per process for each format and language, then served from memory.

Generating the schema walks every endpoint and costs tens of milliseconds of CPU; anonymous
clients asking for it in parallel queue behind one another. The schema changes only with the
code, so one rendering per process is enough; the ETag lets clients revalidate for free.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse
from django.utils import translation
from django.utils.cache import get_conditional_response, patch_vary_headers
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.settings import api_settings

# Bounded: a client cycling ?lang= through every language must not grow the process without end.
MAX_ENTRIES = 16
CACHE_CONTROL = "public, max-age=300"


@dataclass(frozen=True)
class _Rendered:
    body: bytes
    content_type: str
    etag: str
    filename: str


_entries: OrderedDict[tuple, _Rendered] = OrderedDict()
_lock = threading.Lock()


def clear() -> None:
    with _lock:
        _entries.clear()


def _language(request) -> str | None:
    lang = request.GET.get("lang") if settings.USE_I18N else None
    if not lang:
        return None
    try:
        return translation.get_supported_language_variant(lang)
    except LookupError:
        # An unknown language renders as the default one; one entry serves them all.
        return None


class CachedSpectacularAPIView(SpectacularAPIView):
    @extend_schema(**SCHEMA_KWARGS)
    def get(self, request, *args, **kwargs):
        if not self.serve_public:
            # A non-public schema depends on who asks; it cannot be shared.
            return super().get(request, *args, **kwargs)
        renderer = request.accepted_renderer
        lang = _language(request)
        version = self.api_version or request.version or self._cached_version(request)
        key = (type(renderer), lang, version)
        with _lock:
            rendered = _entries.get(key)
            if rendered is None:
                rendered = self._render(request, renderer, lang, version)
                _entries[key] = rendered
                while len(_entries) > MAX_ENTRIES:
                    _entries.popitem(last=False)
            else:
                _entries.move_to_end(key)
        response = HttpResponse(rendered.body, content_type=rendered.content_type)
        response["ETag"] = rendered.etag
        response["Cache-Control"] = CACHE_CONTROL
        response["Content-Disposition"] = f'inline; filename="{rendered.filename}"'
        patch_vary_headers(response, ("Accept",))
        return get_conditional_response(request, etag=rendered.etag, response=response)

    def _cached_version(self, request):
        # Without ALLOWED_VERSIONS drf-spectacular echoes any ?version= into the schema; keyed on it,
        # every made-up value would be a fresh generation and a fresh entry.
        if not api_settings.ALLOWED_VERSIONS:
            return None
        return self._get_version_parameter(request)

    def _render(self, request, renderer, lang, version) -> _Rendered:
        with translation.override(lang) if lang else contextlib.nullcontext():
            generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
            # Without the caller's request: the cached schema must not carry one client's user or headers.
            data = generator.get_schema(request=None, public=True)
            body = renderer.render(data, renderer.media_type, self.get_renderer_context())
        content_type = renderer.media_type + (f"; charset={renderer.charset}" if renderer.charset else "")
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        return _Rendered(body, content_type, etag, self._get_filename(request, version))

