"""GET /repos/{owner}/{name}/preview: what the app would say on a repository's recent issues."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.context import app_context
from bot.site.pages import HEADERS
from bot.speaking.preview import (
    DEFAULT_DAYS,
    MAX_DAYS,
    any_thread_stored,
    compute_preview,
    days_text,
    install_problems,
    older_issues,
)
from bot.store.types import parse_count


def render_html(preview: dict[str, Any]) -> str:
    """The page of a computed preview; what only the page adds (the window in words, what it
    left out) has its defaults here, so every caller renders the same page."""
    from bot.templating import html_env

    return html_env().get_template("preview/preview.html").render(
        **{"days_text": days_text(preview["days"]), "older": None, "older_reach": None,
           "install_problems": [], **preview})


async def _preview_page(request: web.Request) -> web.Response:
    ctx = app_context(request)
    repo = f"{request.match_info['owner']}/{request.match_info['name']}"
    # The page shows other people's titles: no script may run, whatever slips through; no
    # other site may frame it, and its address is no referrer (the tracker pages' headers).
    headers = HEADERS
    # ?days=7d or ?days=-3 showed the 30-day preview under a URL asking for something else.
    days = parse_count(request.query.get("days"), DEFAULT_DAYS)
    if not days or days > MAX_DAYS:  # ?days=365 showed 90 days under a URL asking for a year
        return web.Response(status=400, headers=headers, content_type="text/plain",
                            text=f"days must be a whole number from 1 to {MAX_DAYS}")
    if not await any_thread_stored(ctx, repo):
        # It said "0 of 0 issues would get a comment" (200) for any name, as `rltracker
        # preview` did before it said so: a repository with nothing stored is not one to preview.
        return web.Response(status=404, headers=headers, content_type="text/plain",
                            text=f"no thread of {repo} is stored, so there is nothing to preview")
    preview = await compute_preview(ctx, repo, days)
    # What the installation's preview could not read from GitHub: said, not taken for silence.
    preview = {**preview, "install_problems": await install_problems(ctx, repo)}
    if preview["total"] == 0:  # what the window left out, as `rltracker preview` says it
        preview["older"], preview["older_reach"] = await older_issues(ctx, preview["repo"], days)
    return web.Response(text=render_html(preview), content_type="text/html", headers=headers)


def setup(app: web.Application) -> None:
    """Adds GET /repos/{owner}/{name}/preview."""
    app.router.add_get("/repos/{owner}/{name}/preview", _preview_page)


