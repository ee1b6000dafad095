"""`rltracker sync [--repo OWNER/NAME]... [--full]`: backfill or refresh, then analyse what changed."""

from __future__ import annotations

import asyncio
import logging
import sys
from functools import partial
from typing import Any

from bot.cli import printable
from bot.github.sync import Progress, Syncer, SyncError
from bot.pipeline import sync_changed


def sync_command(args: Any) -> int:
    """`rltracker sync [--repo OWNER/NAME]... [--full]`."""
    import json

    from bot.config import SettingError, Settings
    from bot.context import AppContext

    settings = Settings.from_env()
    if not (settings.has_app_credentials or settings.token):
        raise SettingError("GITHUB_TOKEN", None, "sync reads GitHub's GraphQL API, which refuses "
                           "anonymous clients: set GITHUB_TOKEN, or GITHUB_APP_ID and the app's key")
    from bot.logs import configure_logging

    # Plain lines, each record's on one line: GitHub's text (a GraphQL error's message) starts
    # no line of its own (security71)
    configure_logging(logging.INFO, plain=True)

    async def main() -> int:
        from bot.github.client import GitHubClient

        ctx = AppContext.create(settings)
        ctx.github = GitHubClient(ctx.settings)
        stopped: SyncError | None = None
        try:
            await ctx.github.check_access()
            # (bot.github.sync.sync, its Syncer kept: a stopped sync's counts are its stats)
            syncer = Syncer(ctx, args.repo or None, full=args.full, progress=Progress(),
                            on_changed=partial(sync_changed, ctx), recheck=True)
            try:
                stats = await syncer.run()
            except SyncError as exc:
                # What was stored, deleted and moved before the stop is printed as a finished
                # sync's counts are, then the error (they were only in the log; sched61).
                stopped, stats = exc, syncer.stats
        finally:
            await ctx.close()
        # 2: some work failed (a repository not read, a thread not analysed), the rest done;
        # 1: stopped before the end
        status = 1 if stopped else 0 if not (stats.failed_streams or stats.failed_threads) else 2
        try:
            print(json.dumps(stats.as_dict(), indent=2), flush=True)
        except BrokenPipeError:
            if stopped is not None:
                print(f"rltracker sync: stopped: {printable(stopped)} (cursors are stored; run again to "
                      "resume)", file=sys.stderr, flush=True)
            raise  # the reader left (`| head`): bot.cli.main stops quietly, 141
        except OSError as exc:
            # Standard output closed (`>&-`, cron) or its disk full: the sync is done and
            # stored, so its status stands (exit 2 said a repository could not be read, and a
            # full disk was a traceback); the counts lost are said on stderr.
            from bot.cli import discard_stdout

            discard_stdout()
            reason = exc.strerror or type(exc).__name__
            print(f"rltracker sync: synced {stats.threads} threads ({stats.changed} changed); "
                  f"the counts were not written to standard output ({reason})",
                  file=sys.stderr, flush=True)
        if stopped is not None:
            print(f"rltracker sync: stopped: {printable(stopped)} (cursors are stored; run again to resume)",
                  file=sys.stderr, flush=True)
        return status

    return asyncio.run(main())
