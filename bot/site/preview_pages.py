"""GET /repos/{owner}/{name}/preview: what the app would say on a repository's recent issues."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.context import app_context
from bot.speaking.preview import DEFAULT_DAYS, compute_preview


def render_html(preview: dict[str, Any]) -> str:
    from bot.templating import html_env

    return html_env().get_template("preview/preview.html").render(**preview)


async def _preview_page(request: web.Request) -> web.Response:
    ctx = app_context(request)
    repo = f"{request.match_info['owner']}/{request.match_info['name']}"
    try:
        days = max(1, min(int(request.query.get("days", DEFAULT_DAYS)), 90))
    except ValueError:
        days = DEFAULT_DAYS
    preview = await compute_preview(ctx, repo, days)
    # The page shows other people's titles: no script may run, whatever slips through.
    headers = {
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'",
        "X-Content-Type-Options": "nosniff",
    }
    return web.Response(text=render_html(preview), content_type="text/html", headers=headers)


def setup(app: web.Application) -> None:
    """Adds GET /repos/{owner}/{name}/preview."""
    app.router.add_get("/repos/{owner}/{name}/preview", _preview_page)


