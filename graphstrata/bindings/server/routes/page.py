"""``GET /``: the web page (static files of the package, no build step, decision 0028), open
without a token (the page asks for the token once, in a dialog, and keeps it in
``sessionStorage``; its API calls carry it), and ``/favicon.ico`` (the page's icon, open too, so
a browser's automatic request never answers 401)."""

from collections.abc import Callable
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from graphstrata.bindings.server.errors import ApiError

#: Headers of every file of the page: its scripts, styles and API calls come from this origin
#: only (no inline script, no other host) and no other site may frame it (clickjacking).
SECURITY_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

#: The page's files: URL path -> (package file, media type). Nothing else is served.
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/favicon.ico": ("icon.svg", "image/svg+xml"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/ask.js": ("ask.js", "text/javascript; charset=utf-8"),
    "/static/documents.js": ("documents.js", "text/javascript; charset=utf-8"),
    "/static/explore.js": ("explore.js", "text/javascript; charset=utf-8"),
    "/static/overview.js": ("overview.js", "text/javascript; charset=utf-8"),
}


def read_file(name: str) -> bytes:
    """One file of the page, from the package's ``static`` folder."""
    return resources.files("graphstrata.bindings.server").joinpath("static", name).read_bytes()


def router() -> APIRouter:
    """The routes of the page's files (not in the OpenAPI document)."""
    api = APIRouter(include_in_schema=False)
    cache: dict[str, bytes] = {}

    def serve(path: str) -> Response:
        name, media_type = FILES[path]
        if name not in cache:
            try:
                cache[name] = read_file(name)
            except OSError as exc:
                raise ApiError(404, "not_found", "the web page is not installed") from exc
        return Response(cache[name], media_type=media_type, headers=SECURITY_HEADERS)

    def endpoint(path: str) -> Callable[[], Response]:
        def get() -> Response:
            return serve(path)

        return get

    for path in FILES:
        api.add_api_route(path, endpoint(path), methods=["GET"])
    return api
