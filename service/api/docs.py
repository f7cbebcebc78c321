"""`/docs`: Swagger UI served from the app's own files when `swagger-ui-bundle-v2` is installed
(works offline), else FastAPI's default page (which loads Swagger UI from a CDN)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"


def local_swagger_ui() -> Path | None:
    """The folder of a locally installed Swagger UI (5.x: renders OpenAPI 3.1), if any."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    folder = Path(swagger_ui_bundle.swagger_ui_path)
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def install_docs(app: FastAPI) -> None:
    """Call on an app created with `docs_url=None`."""
    folder = local_swagger_ui()
    openapi_url = app.openapi_url or "/openapi.json"
    if folder is None:
        js, css = (
            "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js",
            "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css",
        )
    else:
        app.mount(ASSETS_URL, StaticFiles(directory=folder), name="docs-assets")
        js, css = f"{ASSETS_URL}/swagger-ui-bundle.js", f"{ASSETS_URL}/swagger-ui.css"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API docs",
            swagger_js_url=js,
            swagger_css_url=css,
            swagger_favicon_url="data:,",
        )
