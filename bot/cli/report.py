"""`rltracker report [--out DIR] [--date YYYY-MM-DD]`: the proposal-status report
(bot.site.report builds, stores, writes and posts it), after the command's own check.

Posting on GitHub (RLTRACKER_REPORT_ISSUE set, dry-run off) without RLTRACKER_PUBLIC_URL is
refused before anything is built, as `rltracker serve` refuses it: every tracker link in the
posted report would lead to this machine's default (http://localhost:PORT). Writing the files
(`--out`) or a dry run posts nothing and needs no public address.
"""

from __future__ import annotations

import os
from typing import Any

from bot.config import SettingError, Settings


def report_command(args: Any) -> int:
    settings = Settings.from_env()
    if settings.report_issue and not settings.dry_run and not (
            os.environ.get("RLTRACKER_PUBLIC_URL") or "").strip():
        raise SettingError(
            "RLTRACKER_PUBLIC_URL", None,
            f"the report posted on {settings.report_issue} would link to {settings.public_url}; "
            "set it to where the tracker is reachable (https://...), or RLTRACKER_DRY_RUN=1 to "
            "post nothing (--out writes the files either way)")
    from bot.site.report import report_command as build_report

    return build_report(args)
