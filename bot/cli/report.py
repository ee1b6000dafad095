"""`rltracker report [--out DIR] [--date YYYY-MM-DD]`: the proposal-status report
(bot.site.report builds, stores, writes and posts it), after the command's own check.

Posting on GitHub (RLTRACKER_REPORT_ISSUE set, dry-run off) without RLTRACKER_PUBLIC_URL is
refused before anything is built, as `rltracker serve` refuses it: every tracker link in the
posted report would lead to this machine's default (http://localhost:PORT). Writing the files
(`--out`) or a dry run posts nothing and needs no public address. An issue to post on without
the app's credentials (the app then runs dry) is said on stderr: nothing will be posted.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from bot.config import SettingError, Settings, public_url_set


def report_command(args: Any) -> int:
    settings = Settings.from_env()
    if settings.report_issue and not settings.dry_run and not public_url_set():
        raise SettingError(
            "RLTRACKER_PUBLIC_URL", None,
            f"the report posted on {settings.report_issue} would link to {settings.public_url}; "
            "set it to where the tracker is reachable (https://...), or RLTRACKER_DRY_RUN=1 to "
            "post nothing (--out writes the files either way)")
    if settings.report_issue and settings.dry_run and not settings.has_app_credentials and not (
            os.environ.get("RLTRACKER_DRY_RUN") or "").strip():
        # The dry run the missing credentials imply, not one the operator chose: the JSON's
        # "posted": "dry_run" alone did not say why the report set to be posted was not.
        print(f"rltracker report: not posted on {settings.report_issue}: the report is posted "
              "as the app, and GITHUB_APP_ID and GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_PATH) "
              "are not both set, so the app runs dry; it is still built and stored",
              file=sys.stderr)
    if getattr(args, "out", None):
        _check_out(args.out)
    from bot.site.report import report_command as build_report

    return build_report(args)


def _check_out(out: str) -> None:
    """--out DIR, made if missing and written to, before anything is built: a folder that could
    not be written failed only after the night's report was built and stored, and before it
    was posted (stored, not written, not posted)."""
    import tempfile
    from pathlib import Path

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise SettingError("--out", out, "is a file; give the folder to write report-DATE.md "
                           "and report-DATE.html into")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise SettingError("--out", out, f"the folder cannot be written ({exc.strerror or exc}); "
                           "nothing was built, stored or posted") from None
