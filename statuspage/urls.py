from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

from public_site import languages


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    # Browsers ask for /favicon.ico on pages that name no icon (the admin). Resolved per
    # request: the hashed static name is only known once collectstatic has run.
    return HttpResponsePermanentRedirect(static("css/favicon.svg"))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("manage/", include("console.urls")),
    path("favicon.ico", favicon),
    # Staff pages under /manage/: more specific mounts first, before any `manage/` include.
    path("manage/insights/", include("insights.urls")),
    path("manage/portal/", include("portal.staff_urls")),
    path("portal/oidc/", include("portal.oidc_urls")),
    path("", include("api.urls")),
    # One address each, in no language: feeds, badges, the live document, CSV, calendar.
    path("", include("public_site.feed_urls")),
    path("", include("subscriptions.extra_urls")),
    path("language/<str:code>/", languages.switch_language, name="switch-language"),
    path("", include("audiences.json_urls")),
]
# The public pages: English at the bare paths (every existing link keeps working), the
# other languages under their prefix (/fr/). edge.i18n.PathLanguageMiddleware activates
# the language the path names.
urlpatterns += i18n_patterns(
    path("", include("public_site.urls")),
    path("", include("subscriptions.urls")),
    path("", include("audiences.urls")),
    path("", include("portal.urls")),
    prefix_default_language=False,
)

# Under /api/ even Django's own error answers are JSON in the API's error shape.
handler400 = "api.exceptions.handler400"
handler403 = "api.exceptions.handler403"
handler404 = "api.exceptions.handler404"
handler500 = "api.exceptions.handler500"
