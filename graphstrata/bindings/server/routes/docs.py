"""``GET /docs`` (Swagger UI) and ``GET /redoc`` (ReDoc): the API's pages, working offline.

FastAPI's own pages load their scripts, styles and favicon from CDNs and are blank without
network. These pages are FastAPI's (``get_swagger_ui_html``, ``get_redoc_html``) pointed at
files served here, under ``/docs-assets/``, from the ``fastapi-offline`` package (``server``
extra; MIT, it ships the Swagger UI and ReDoc bundles and is kept up to date with them; only
its files are used). Open without a token, as ``/openapi.json`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from graphstrata.bindings.server.errors import ApiError

#: URL path -> (file of ``fastapi_offline/static``, media type). Nothing else is served.
#: (Literal paths, here and in the decorators: ``tests/unit/test_docs.py`` reads them.)
FILES = {
    "/docs-assets/swagger-ui-bundle.js": ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    "/docs-assets/swagger-ui.css": ("swagger-ui.css", "text/css; charset=utf-8"),
    "/docs-assets/redoc.standalone.js": ("redoc.standalone.js", "text/javascript; charset=utf-8"),
    "/docs-assets/favicon.png": ("favicon.png", "image/png"),
}
#: Every path of this router (open without a token).
PATHS = ("/docs", "/redoc", *FILES)


def read_asset(name: str) -> bytes:
    """One file of the pages, from the installed ``fastapi_offline`` package."""
    return resources.files("fastapi_offline").joinpath("static", name).read_bytes()


def router(title: str, openapi_url: str) -> APIRouter:
    """The two pages and their files (not in the OpenAPI document).

    Parameters
    ----------
    title:
        The app's title (the pages' ``<title>``).
    openapi_url:
        Where the pages read the API's description.
    """
    api = APIRouter(include_in_schema=False)
    cache: dict[str, bytes] = {}

    @api.get("/docs")
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} - Swagger UI",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon.png",
        )

    @api.get("/redoc")
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} - ReDoc",
            redoc_js_url="/docs-assets/redoc.standalone.js",
            redoc_favicon_url="/docs-assets/favicon.png",
            with_google_fonts=False,
        )

    def endpoint(path: str) -> Callable[[], Response]:
        name, media_type = FILES[path]

        def get() -> Response:
            if name not in cache:
                try:
                    cache[name] = read_asset(name)
                except (OSError, ModuleNotFoundError) as exc:
                    raise ApiError(
                        404, "not_found", "the documentation files are not installed"
                    ) from exc
            return Response(
                cache[name], media_type=media_type, headers={"Cache-Control": "max-age=86400"}
            )

        return get

    for path in FILES:
        api.add_api_route(path, endpoint(path), methods=["GET"])
    return api
