"""Preview before comments: what the app would have said on a repository's issues of the last
30 days, computed in dry run from stored threads, never posted.

- `GET /repos/{owner}/{name}/preview`: the HTML page (autoescaped; issue titles are shown as
  text, the would-be comments as preformatted text).
- `rltracker preview OWNER/NAME [--days N]`: prints the same as Markdown and stores it.
- `run_preview(ctx, repo)`: for the installation handler (or the integrator) to call when the
  app is installed; stores one `preview` action per issue that would get a comment.

The decision is the one the app makes when an issue is opened (failure analysis, confidence,
the repository's config, bots, pull requests), judged as at opening time: later maintainer
replies, labels and the 48-hour rule are about lagging processing, not about whether the
comment would have been useful, and the daily budget is reported, not applied.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import func, select

from bot.actions import compose_for, declined_methods, record_once
from bot.repo_config import RepoConfig
from bot.store.models import Action, Analysis, Repository, Thread
from bot.store.threads import load_comments, thread_record
from bot.store.types import format_datetime, utcnow

DEFAULT_DAYS = 30


async def compute_preview(ctx: Any, repo: str, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    from analyzers.catalog import load_catalog

    cat = load_catalog()
    repo = cat.canonical_repo(repo)
    fw = cat.framework_for_repo(repo)
    since = utcnow() - timedelta(days=days)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(func.lower(Repository.full_name) == repo.lower()))
        config = RepoConfig.from_dict(row.config) if row is not None and not row.config_error else RepoConfig()
        threads = list(await session.scalars(
            select(Thread).where(
                func.lower(Thread.repo) == repo.lower(), Thread.kind == "issue", Thread.created_at >= since,
            ).order_by(Thread.created_at.desc(), Thread.number.desc())
        ))
        analyses = {
            a.thread_id: a.result for a in await session.scalars(
                select(Analysis).where(Analysis.thread_id.in_([t.id for t in threads] or [-1]))
            )
        }
        records = [(t, thread_record(t, await load_comments(session, t))) for t in threads]
    declined = await declined_methods(ctx, repo)
    comments: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for thread, record in records:
        analysis = analyses.get(thread.id)
        if analysis is None:
            from analyzers.analyze import analyze_thread

            analysis = analyze_thread(record)
        failure = analysis.get("failure") or {}
        url = thread.url or f"https://github.com/{repo}/issues/{thread.number}"
        base = {"number": thread.number, "title": thread.title or "", "url": url}
        reason = None
        if not failure.get("is_failure_report"):
            reason = "not a training-failure report"
        elif float(failure.get("confidence") or 0) < config.min_confidence:
            reason = f"confidence {float(failure.get('confidence') or 0):.2f} below {config.min_confidence:.2f}"
        elif not config.failure_comments:
            reason = "failure comments are off in .github/rltracker.yml"
        elif record.get("author_is_bot"):
            reason = "opened by a bot"
        elif fw is None:
            reason = "not one of the tracked frameworks"
        if reason is None:
            composed = compose_for(record, analysis, fw.id, public_url=ctx.settings.public_url,
                                   declined=declined)
            if composed is None:
                reason = "nothing to suggest (already set, declined here, or absent)"
            else:
                comments.append({**base, "body": composed.body, "lang": composed.lang,
                                 "category": composed.category,
                                 "confidence": f"{float(failure.get('confidence') or 0):.2f}"})
                continue
        skipped.append({**base, "reason": reason})
    return {
        "repo": repo, "framework": fw.name if fw else None, "days": days, "total": len(records),
        "comments": comments, "skipped": skipped, "config": config, "budget": config.daily_budget,
        "paused": bool(row.comments_paused) if row is not None else False,
        "paused_reason": row.paused_reason if row is not None else None,
        "generated_at": format_datetime(utcnow()),
    }


async def run_preview(ctx: Any, repo: str, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """Compute the preview and store each would-be comment as a `preview` action (dry run)."""
    preview = await compute_preview(ctx, repo, days)
    for item in preview["comments"]:
        key = f"{preview['repo']}#{item['number']}:preview"
        if not await record_once(ctx, repo=preview["repo"], number=item["number"], kind="preview",
                                 status="dry_run", body=item["body"], dedupe_key=key,
                                 language=item["lang"], details={"category": item["category"]}):
            async with ctx.sessionmaker() as session:
                row = await session.scalar(select(Action).where(Action.dedupe_key == key))
                if row is not None:
                    row.body, row.updated_at = item["body"], utcnow()
                    await session.commit()
    return preview


def render_html(preview: dict[str, Any]) -> str:
    from bot.templating import html_env

    return html_env().get_template("preview/preview.html").render(**preview)


def render_markdown(preview: dict[str, Any]) -> str:
    lines = [f"# rltracker preview: {preview['repo']} (last {preview['days']} days, dry run)", ""]
    lines.append(f"{len(preview['comments'])} of {preview['total']} issues would get a comment.")
    for item in preview["comments"]:
        lines += ["", f"## #{item['number']}", "", item["body"].rstrip()]
    if preview["skipped"]:
        lines += ["", "## No comment", ""]
        lines += [f"- #{s['number']}: {s['reason']}" for s in preview["skipped"]]
    return "\n".join(lines) + "\n"


async def _preview_page(request: web.Request) -> web.Response:
    from bot.web import CTX

    ctx = request.app[CTX]
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


def preview_command(args: argparse.Namespace) -> int:
    from bot.config import Settings
    from bot.context import AppContext

    async def main() -> int:
        ctx = AppContext.create(Settings.from_env(dry_run=True))
        try:
            preview = await run_preview(ctx, args.repo, args.days)
        finally:
            await ctx.close()
        print(render_markdown(preview), end="")
        return 0

    return asyncio.run(main())


__all__ = ["compute_preview", "preview_command", "render_html", "render_markdown", "run_preview", "setup"]
