"""`rltracker repos resume OWNER/REPO`: the operator's way to lift the pause of the app's
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
