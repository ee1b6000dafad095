"""`rltracker repos`: the repositories the app comments in, as /api/repos gives them
(`bot.site.data.reception`: paused, suspended, a settings file it cannot use, how its comments
were received), so the operator can find the one to resume without the pages (user82).

`rltracker repos resume OWNER/REPO`: the operator's way to lift the pause of the app's
comments in a repository (the nightly reception check pauses one whose maintainers hid,
deleted or voted down the app's comments; bot.speaking.reception). Its maintainers lift it
with `/rltracker resume` on any issue or discussion there; both record who (`operator` here)
and when, and the check then judges only comments posted after it. Nothing is posted on
GitHub, so a dry run changes nothing here.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from bot.config import UserError


def repos_command(args: Any) -> int:
    if args.repos_command is None:
        return _list_repos(as_json=args.json)
    return _resume(args)


def _list_repos(*, as_json: bool) -> int:
    import json

    from bot.cli import printable
    from bot.config import Settings
    from bot.context import AppContext
    from bot.site.data import reception

    settings = Settings.from_env()

    async def run() -> list[dict[str, Any]]:
        ctx = AppContext.create(settings)
        try:
            async with ctx.sessionmaker() as session:
                return await reception(session)
        finally:
            await ctx.close()

    repos = asyncio.run(run())
    if as_json:
        print(json.dumps(repos, ensure_ascii=False))
        return 0
    for repo in repos:
        print("\t".join([repo["repo"], repo["framework"] or "-", printable(_state(repo)),
                         f"{repo['comments_posted']} comments posted, {repo['thumbs_up']} thumbs up, "
                         f"{repo['thumbs_down']} down, {repo['hidden_or_deleted']} hidden or "
                         "deleted by people"]))
    if not repos:
        print("0 repositories: the app is installed in no public repository this service has "
              "stored")
        return 0
    paused = [r["repo"] for r in repos if r["paused"]]
    print(f"{len(repos)} {'repository' if len(repos) == 1 else 'repositories'}, "
          f"{len(paused)} paused"
          + (f"; lift a pause with `rltracker repos resume {paused[0]}`" if paused else "")
          + ("; this service runs in dry run (RLTRACKER_DRY_RUN, or no app credentials): "
             "nothing is posted anywhere" if settings.dry_run else ""))
    return 0


def _state(repo: dict[str, Any]) -> str:
    """What the app does in the repository now, in words (the /repos/ page's Status cell)."""
    states = []
    if repo["suspended"]:
        states.append("suspended (its owner suspended the app's installation: nothing is "
                      "posted)")
    if repo["paused"]:
        states.append(f"paused: {repo['paused_reason'] or 'no reason recorded'}")
    if repo["settings_problem"]:
        states.append(repo["settings_problem"])
    if repo["framework"] is None:  # (UNKNOWN_FRAMEWORK: bot.speaking.failure_comment)
        states.append("not one of the tracked frameworks: no failure comment or rule summary, "
                      "commands only")
    return "; ".join(states) or "commenting"


def _resume(args: Any) -> int:
    from analyzers.catalog import canonical_repo
    from bot.config import Settings
    from bot.context import AppContext
    from bot.speaking.reception import resume_comments

    repo = canonical_repo(args.repo)

    # The answer below is the operator's; the reception module's own line for the server's
    # log said it again on stderr (Python's last-resort handler, then the command's handler,
    # bot.logs.command_logging): kept from both for this run.
    reception_log = logging.getLogger("bot.speaking.reception")
    if not any(isinstance(h, logging.NullHandler) for h in reception_log.handlers):
        reception_log.addHandler(logging.NullHandler())  # (no handler: the last-resort one)

    async def run() -> tuple[bool, str | None, str] | None:
        ctx = AppContext.create(Settings.from_env())
        try:
            return await resume_comments(ctx, repo, by="operator")
        finally:
            await ctx.close()

    reception_log.propagate = False
    try:
        resumed = asyncio.run(run())
    finally:
        reception_log.propagate = True
    if resumed is None:
        raise UserError(f"{repo} is not a repository this service has stored (the app is not "
                        "installed there, or `rltracker sync` has not read it)")
    was_paused, reason, repo = resumed  # the name as stored (Foo-Org/Bar for foo-org/bar)
    if was_paused:
        print(f"comments in {repo} resumed (they were paused: {reason or 'no reason recorded'}); "
              "the reception check now judges only comments posted from now on")
    else:
        print(f"rltracker repos resume: comments in {repo} are not paused; nothing to resume",
              file=sys.stderr)
    return 0
