from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from auditorium import health
from common.api_schema import CachedSpectacularAPIView
from common.login_throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm
from scoring.api_urls import study_urlpatterns as scoring_study_api

admin.site.login_form = ThrottledAdminAuthenticationForm


def favicon(request):
    # Resolved per request: the hashed static name exists only once collectstatic has run.
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page links; the admin and API pages link none.
    path("favicon.ico", favicon),
    path("healthz/", health.healthz, name="healthz"),
    path("readyz/", health.readyz, name="readyz"),
    path("healthz/workers/", health.workers, name="healthz-workers"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="registration/login.html", authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", CachedSpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"), name="api-docs"),
    path("api/studies/<slug:name>/", include(scoring_study_api)),
    path("api/scoring/", include("scoring.api_urls")),
    path("scoring/", include("scoring.urls")),
    path("benchmarks/", include("scoring.benchmarks.urls")),
    path("api/benchmarks/", include("scoring.benchmarks.api_urls")),
    path("arena/", include("arena.urls")),
    path("", include("annotation.ratings.urls")),
    path("", include("annotation.urls")),
]

# A database pool timeout raised outside a view (middleware, sessions, sign-in) answers 503 too.
handler500 = "auditorium.dbpool.server_error"
