"""`rltracker verdicts export [--out FILE]`: people's verdicts (`/rltracker kind`,
`/rltracker not-a-failure`) as labelled threads, one JSON object a line, in the shape of the
labelled threads the failure models are fitted on (../shared/eval/train/threads.jsonl): the
stored thread (id, repo, number, kind, url, title, state, author, created_at, body, comments)
with `labels: {is_failure_report, category}`, and beside it `verdict` (who, as author or
maintainer, in which comment, when, and what the analyzer said then) for the review.

The comments are the thread's up to the command comment, as the app's analyzers read them
(`bot.analysis.analysis_input`: command lines left out, and comments that were nothing but
commands): the command itself, what follows it and the app's own comments are left out (a
comment saying `/rltracker kind kl_growth` names the label; what follows it answers the verdict). Review the file, then fit on it:
`python -m training --extra FILE`.

`rltracker verdicts wanted [--framework F] [--limit N]`: the open threads where a verdict would
teach the failure analyzer most (`bot.site.verdicts.wanted_verdicts`, the list `/verdicts`
shows), with what the analyzer said and the commands to type.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from bot.analysis import analysis_input
from bot.speaking.render import is_app_comment
from bot.store.models import Comment, Thread, Verdict
from bot.store.threads import load_comments
from bot.store.types import format_datetime
from bot.store.verdicts import all_verdicts


def _day(value: Any) -> str | None:
    text = format_datetime(value)
    return text[:10] if text else None


def labelled_thread(thread: Thread, comments: list[Comment], verdict: Verdict) -> dict[str, Any]:
    """One verdict as a labelled thread: the comments up to the command comment, or, when
    that comment is gone (deleted once the app acted on it), up to when the verdict was given."""
    before: list[dict[str, Any]] = []
    for c in comments:
        if verdict.comment_id is not None and c.github_id == verdict.comment_id:
            break
        if c.created_at is not None and verdict.given_at is not None and c.created_at >= verdict.given_at:
            break
        if not is_app_comment(c.body, c.author, c.author_is_bot):
            before.append({"author": c.author, "created_at": _day(c.created_at), "body": c.body or ""})
    # as the app's analyzers read them: without command lines, nor comments of commands only
    read = analysis_input({"body": thread.body or "", "comments": before})
    kept = read["comments"]
    # url left out when not stored: the contract types it a string, missing = not known
    return {
        "id": f"{thread.repo}#{thread.number}", "repo": thread.repo, "number": thread.number,
        "kind": thread.kind, **({"url": thread.url} if thread.url is not None else {}),
        "title": thread.title or "", "state": thread.state,
        "author": thread.author, "created_at": _day(thread.created_at), "body": read["body"],
        "comments": kept, "complete": bool(thread.complete),
        "labels": {"is_failure_report": bool(verdict.is_failure_report),
                   "category": verdict.category if verdict.is_failure_report else None},
        "verdict": {"login": verdict.login, "role": verdict.role, "comment_id": verdict.comment_id,
                    "given_at": format_datetime(verdict.given_at),
                    "analyzer_is_failure_report": verdict.analyzer_is_failure_report,
                    "analyzer_category": verdict.analyzer_category,
                    "analyzer_version": verdict.analyzer_version},
    }


async def export_verdicts(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.sessionmaker() as session:
        out = []
        for verdict, thread in await all_verdicts(session):
            out.append(labelled_thread(thread, await load_comments(session, thread), verdict))
    return out


def _line_text(text: str) -> str:
    """Text from GitHub on one terminal line: control characters (escape sequences, line
    breaks) become spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def format_wanted(found: dict[str, Any]) -> str:
    """`rltracker verdicts wanted`: the list `/verdicts` shows, as text."""
    lines = [f"Where a verdict would teach the failure analyzer most (threshold "
             f"{found['threshold']}, band {found['band']}; {found['score']}):"]
    if not found["frameworks"]:
        lines.append("none: no open thread without a verdict in an installed repository has an "
                     "uncertain failure finding")
    for group in found["frameworks"]:
        lines.append("")
        lines.append(f"{group['framework'] or 'other repositories'}:")
        for t in group["threads"]:
            said = (f"{t['category']}" + (f" (or {t['runner_up']})" if t["runner_up"] else "")
                    if t["is_failure_report"] else "not a failure report")
            lines.append(f"  {t['score']:.3f}  {t['repo']}#{t['number']}  {_line_text(t['title'])}")
            lines.append(f"         analyzer: {said}, confidence {t['confidence']}")
            lines.append(f"         {t['url']}  (tracker: {t['page']})")
            lines.append("         type: " + "  |  ".join(t["commands"]))
    return "\n".join(lines) + "\n"


def _with_context(work: Callable[[Any], Awaitable[Any]]) -> Any:
    """`work(ctx)` with the app's context from the environment, closed afterwards."""
    from bot.config import Settings
    from bot.context import AppContext

    async def run() -> Any:
        ctx = AppContext.create(Settings.from_env())
        try:
            return await work(ctx)
        finally:
            await ctx.close()

    return asyncio.run(run())


def verdicts_command(args: Any) -> int:
    if args.verdicts_command == "wanted":
        return _wanted_command(args)
    rows = _with_context(export_verdicts)
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    if args.out and args.out != "-":
        from bot.files import replaced_whole

        with replaced_whole(args.out) as fh:  # whole, or the previous export as it was
            fh.write(text)
    else:
        from bot.cli import utf8_stdout

        utf8_stdout()
        sys.stdout.write(text)
    print(f"{len(rows)} verdict{'' if len(rows) == 1 else 's'} exported", file=sys.stderr)
    return 0


def _wanted_command(args: Any) -> int:
    from analyzers.catalog import load_catalog
    from bot.cli import framework_hint, framework_id
    from bot.site.verdicts import wanted_verdicts

    framework = None
    if args.framework is not None:  # in any spelling the pages and `rltracker rules` read
        framework = framework_id(args.framework)
        if framework is None:
            print(f"rltracker verdicts wanted: unknown framework {args.framework!r}"
                  f"{framework_hint(args.framework)} (one of "
                  + ", ".join(load_catalog().frameworks) + ")", file=sys.stderr)
            return 2

    async def wanted(ctx: Any) -> dict[str, Any]:
        async with ctx.sessionmaker() as session:
            return await wanted_verdicts(session, framework=framework, limit=args.limit)

    sys.stdout.write(format_wanted(_with_context(wanted)))
    return 0
