"""`rltracker rules FRAMEWORK_OR_PATH [--json]`: the contribution-rule summary.

A framework name (verl, trl, ...) is looked up in this order: the database cache
(`contribution_rules`), the snapshot in ../shared/data/frameworks/<name>/ (development), the
GitHub contents API. A folder path is read from disk: a checkout of a repository, or a flat
snapshot whose file names use `__` for `/` (with SOURCE.txt mapping copies to repository paths).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from analyzers.rules import format_rules_markdown, summarize_rules
from bot.cli import ensure_open, framework_hint, printable
from bot.config import Settings, UserError, sqlite_path
from bot.speaking.contribution import SHARED_FRAMEWORKS, load_folder, note_partial
from bot.store.types import canonical_id


def framework_ids() -> dict[str, str]:
    """framework id -> repository, from the catalog."""
    from analyzers.catalog import load_catalog

    return {fid: f.repo for fid, f in load_catalog().frameworks.items()}


async def _from_database(settings: Settings, repo: str) -> dict[str, Any] | None:
    from sqlalchemy.exc import SQLAlchemyError

    from bot.context import AppContext
    from bot.speaking.contribution import cached_rules
    from bot.store.migrate import check_revision

    ctx = AppContext.create(settings)
    try:
        # behind or ahead of this code: refused as every command refuses it (SchemaMismatch);
        # a database that does not answer is no cache, as before
        await check_revision(ctx.engine)
        row = await cached_rules(ctx, repo)
        return dict(row.summary) if row is not None and row.summary else None
    except (SQLAlchemyError, OSError):
        return None
    finally:
        await ctx.close()


async def _from_api(settings: Settings, repo: str) -> dict[str, Any]:
    from bot.context import AppContext
    from bot.github.client import GitHubClient
    from bot.speaking.contribution import rules_for_repo

    ctx = AppContext.create(settings)
    ctx.github = GitHubClient(settings)
    try:
        await ctx.github.check_access()
        return await rules_for_repo(ctx, repo, refresh=True)
    finally:
        await ctx.close()


def summary_for(target: str, settings: Settings | None = None,
                shared: Path = SHARED_FRAMEWORKS) -> dict[str, Any]:
    frameworks = framework_ids()
    if not target.strip():
        # Path("") is the current folder: an empty name (an unset shell variable) summarised
        # whatever folder the command ran in as if it had been asked for.
        raise UserError(f"no framework or folder given (frameworks: {', '.join(frameworks)})",
                        exit_code=2)
    path = Path(target)
    if target not in frameworks and not path.is_dir():
        # `rltracker rules VERL`, `NeMo-RL`: the framework as the pages name it
        target = canonical_id(target, frameworks) or target
    if target not in frameworks and path.is_dir():
        fid = path.resolve().name if path.resolve().name in frameworks else None
        partial: dict[str, str] = {}
        files = load_folder(path, partial, frameworks[fid] if fid else None)
        summary = note_partial(summarize_rules(files, framework=fid), partial)
        summary["source"] = "folder"
        return summary
    if target not in frameworks and path.is_file():
        # the file rather than its folder: not a name mistyped (contract66)
        raise UserError(f"{target} is a file: give the folder holding CONTRIBUTING and the "
                        f"templates ({path.parent}), or a framework ({', '.join(frameworks)})",
                        exit_code=2)
    if target not in frameworks:
        # a bad argument: exit 2, as for every command (README, "When something is wrong")
        raise UserError(f"unknown framework or folder: {target}{framework_hint(target)} "
                        f"(frameworks: {', '.join(frameworks)})", exit_code=2)
    settings = settings or Settings.from_env(database_may_be_absent=True)
    repo = frameworks[target]
    # An absent SQLite file means no cache: do not create an empty database just to look.
    # Nor does a 0-byte one (`touch`): opening it wrote SQLite's header, and the revision
    # check called it "behind the migrations" (left80).
    db_file = sqlite_path(settings.database_url)
    no_db = db_file is not None and (not db_file.is_file() or db_file.stat().st_size == 0)
    cached = None if no_db else asyncio.run(_from_database(settings, repo))
    if cached is not None:
        cached["source"] = "database"
        return cached
    if (shared / target).is_dir():
        summary = summarize_rules(load_folder(shared / target), framework=target)
        summary["repo"] = repo
        summary["source"] = "snapshot"
        return summary
    summary = asyncio.run(_from_api(settings, repo))
    summary["source"] = "api"
    return summary


def rules_command(args: argparse.Namespace) -> int:
    ensure_open(sys.stdout)
    summary = summary_for(args.target)
    if getattr(args, "json", False):
        # JSON is UTF-8 (RFC 8259), whatever the locale: the Chinese statements stopped the
        # command with a UnicodeEncodeError under a Latin-1 one.
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8")
        json.dump(summary, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        # Code spans and file names come from third-party files: an escape sequence in one
        # (clear the screen, retitle the window) or a direction override (a command that
        # reads reversed) must not reach the terminal; lines and tabs stay.
        sys.stdout.write(printable(format_rules_markdown(summary), keep="\n\t"))
    return 0
