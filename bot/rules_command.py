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
from analyzers.rules_text import file_kind
from bot.config import PROJECT_ROOT, Settings

SHARED_FRAMEWORKS = PROJECT_ROOT.parent / "shared" / "data" / "frameworks"
MAX_FILE_BYTES = 256 * 1024
SKIP_DIRS = {".git", "node_modules", ".venv", "__pycache__"}
# Files of a real checkout that are read besides the kinds file_kind() recognises.
EXTRA_NAMES = {"agents.md", "claude.md", "governance.md"}


def _source_map(folder: Path) -> dict[str, str]:
    """copy name -> repository path, from a snapshot's SOURCE.txt ("copy <- path" lines).
    A path claimed by two copies (files of two repositories) is not used for either."""
    source = folder / "SOURCE.txt"
    if not source.is_file():
        return {}
    pairs = []
    for line in source.read_text(encoding="utf-8", errors="replace").splitlines():
        if "<-" in line:
            copy, _, path = line.partition("<-")
            pairs.append((copy.strip(), path.strip()))
    counts: dict[str, int] = {}
    for _, path in pairs:
        counts[path] = counts.get(path, 0) + 1
    return {copy: path for copy, path in pairs if copy and path and counts[path] == 1}


def load_folder(folder: Path) -> dict[str, str]:
    """{repository path: text} of the contribution files in `folder`."""
    mapping = _source_map(folder)
    snapshot = bool(mapping) or any("__" in p.name for p in folder.iterdir())
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel_parts = path.relative_to(folder).parts
        if not path.is_file() or SKIP_DIRS.intersection(rel_parts) or path.name == "SOURCE.txt":
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        rel = "/".join(rel_parts)
        repo_path = mapping.get(rel) or rel.replace("__", "/")
        kind = file_kind(repo_path)
        if not snapshot and kind in ("doc", "yaml") and path.name.lower() not in EXTRA_NAMES:
            continue  # a checkout: only contribution files, not every document
        files[repo_path] = path.read_text(encoding="utf-8", errors="replace")
    return files


def framework_ids() -> dict[str, str]:
    """framework id -> repository, from the catalog."""
    from analyzers.catalog import load_catalog

    return {fid: f.repo for fid, f in load_catalog().frameworks.items()}


async def _from_database(settings: Settings, repo: str) -> dict[str, Any] | None:
    from sqlalchemy.exc import SQLAlchemyError

    from bot.context import AppContext
    from bot.contribution import cached_rules

    ctx = AppContext.create(settings)
    try:
        row = await cached_rules(ctx, repo)
        return dict(row.summary) if row is not None and row.summary else None
    except (SQLAlchemyError, OSError):
        return None
    finally:
        await ctx.close()


async def _from_api(settings: Settings, repo: str) -> dict[str, Any]:
    from bot.context import AppContext
    from bot.contribution import rules_for_repo
    from bot.github import GitHubClient

    ctx = AppContext.create(settings)
    ctx.github = GitHubClient(settings)
    try:
        return await rules_for_repo(ctx, repo, refresh=True)
    finally:
        await ctx.close()


def summary_for(target: str, settings: Settings | None = None,
                shared: Path = SHARED_FRAMEWORKS) -> dict[str, Any]:
    path = Path(target)
    frameworks = framework_ids()
    if target not in frameworks and path.is_dir():
        fid = path.resolve().name if path.resolve().name in frameworks else None
        summary = summarize_rules(load_folder(path), framework=fid)
        summary["source"] = "folder"
        return summary
    if target not in frameworks:
        raise SystemExit(
            f"unknown framework or folder: {target} (frameworks: {', '.join(frameworks)})"
        )
    settings = settings or Settings.from_env()
    repo = frameworks[target]
    url = settings.database_url
    # An absent SQLite file means no cache: do not create an empty database just to look.
    no_db = url.startswith("sqlite") and not Path(url.split("///", 1)[-1]).is_file()
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
    summary = summary_for(args.target)
    if getattr(args, "json", False):
        json.dump(summary, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_rules_markdown(summary))
    return 0
