"""Every command that reads or writes the store checks the database's migration revision
first, as `rltracker serve` does (ops64): on a database behind this code (not migrated yet) or
ahead of it (a newer version migrated it: a rolled-back deploy, an old version's cron job) it
refuses with serve's one line and exit status, and writes nothing. The commands that use no
database (`analyze`, `rules` on a folder) still run without one. Each command runs as a real
process (`python -m bot.cli`), on SQLite and PostgreSQL; the timeouts are hang guards."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.store.db import make_engine
from bot.store.migrate import head_revision
from tests.test_analyze_command import GOOD_1
from tests.test_cli_errors import _behind, one_line, rltracker
from tests.test_crash_recovery import free_port

NEWER = "0099_from_a_newer_version"
UNREACHABLE = "http://127.0.0.1:9"  # nothing listens: a command reaching it fails at once


def _store_commands(tmp_path: Path) -> list[tuple[str, ...]]:
    """Each subcommand of `rltracker --help` that opens the store, with the arguments it
    needs (GitHub and arXiv are unreachable: the check comes before them)."""
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"id": "2401.00001", "title": "A paper on clipping",
                                  "abstract": "We clip.", "published": "2024-01-01"}) + "\n")
    return [
        ("sync",), ("sync", "--repo", "verl-project/verl", "--full"),
        ("report",), ("report", "--out", str(tmp_path / "out")),
        ("stats",), ("stats", "--json"), ("study",),
        ("deliveries",), ("deliveries", "retry", "--all"),
        ("verdicts", "export"), ("verdicts", "wanted"),
        ("repos", "resume", "o/r"),
        ("papers", "import", str(papers)), ("papers", "fetch"),
        ("preview", "verl-project/verl"),
        ("rules", "verl"),
    ]


SUBCOMMANDS = {"retry", "export", "wanted", "resume", "import", "fetch"}


def _env(url: str) -> dict[str, str]:
    return {"DATABASE_URL": url, "GITHUB_TOKEN": "ghp_not_used", "GITHUB_API_URL": UNREACHABLE,
            "RLTRACKER_ARXIV_API_URL": UNREACHABLE}


async def _counts(url: str) -> dict[str, object]:
    """Every table's row count and the revision: what a refused command must leave as it was."""
    from bot.store.models import Base

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            counts: dict[str, object] = {
                name: (await conn.execute(text(f'SELECT count(*) FROM "{name}"'))).scalar()
                for name in Base.metadata.tables}
            counts["alembic_version"] = (await conn.execute(
                text("SELECT version_num FROM alembic_version"))).scalar()
            return counts
    finally:
        await engine.dispose()


def _ahead(url: str) -> str:
    async def set_it() -> None:
        engine = make_engine(url)
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": NEWER})
        await engine.dispose()

    asyncio.run(set_it())
    return NEWER


def _serve_line(url: str) -> str:
    result = rltracker("serve", "--dev", "--no-backfill", "--no-scheduler", "--port",
                       str(free_port()), env=_env(url))
    line = one_line(result, "serve", 1)
    return line.removeprefix("rltracker serve: ")


@pytest.mark.parametrize("state", ["behind", "ahead"])
def test_every_store_command_refuses_a_database_at_another_revision(
        db_url: str, state: str, tmp_path: Path) -> None:
    """A database behind the code: `sync`, `report`, `papers import` and the rest ran into it
    and failed deep inside (or, for the tables they touch, ran as if nothing were wrong). A
    database ahead of the code (a newer version migrated it): they wrote into the newer schema
    as the older code did, exit 0 (`stats`, `report`, `papers import`, ...). Only `serve` and
    `migrate` refused. Now each says serve's line, exit 1, and the database is as it was."""
    revision = _behind(db_url) if state == "behind" else _ahead(db_url)
    serve = _serve_line(db_url)
    if state == "behind":
        assert "behind" in serve and "rltracker migrate" in serve and revision in serve, serve
    else:
        assert NEWER in serve and "does not know" in serve and str(head_revision()) in serve, serve
    before = asyncio.run(_counts(db_url))
    wrong: list[str] = []
    for argv in _store_commands(tmp_path):
        result = rltracker(*argv, env=_env(db_url), cwd=tmp_path)
        lines = result.stderr.splitlines()
        # A failure line names the subcommand as its usage does (user72): `deliveries retry`.
        named = " ".join(argv[:2]) if argv[1:2] and argv[1] in SUBCOMMANDS else argv[0]
        expected = f"rltracker {named}: {serve}"
        if result.returncode != 1 or lines != [expected]:
            wrong.append(f"{' '.join(argv)} -> exit {result.returncode}: {result.stderr[-400:]!r}")
    assert not wrong, "\n".join(wrong)
    assert asyncio.run(_counts(db_url)) == before
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_store_commands_still_run_on_a_database_at_head(db_url: str, tmp_path: Path) -> None:
    """The check lets a migrated database through: the read-only commands print as before."""
    for argv in (("stats", "--json"), ("study",), ("deliveries",), ("verdicts", "export")):
        result = rltracker(*argv, env=_env(db_url), cwd=tmp_path)
        assert result.returncode == 0 and "rltracker" not in result.stderr, (argv, result.stderr)


def test_commands_without_a_database_still_run_without_one(tmp_path: Path) -> None:
    """`analyze` and `rules` on a folder use no database: they run with DATABASE_URL naming a
    file that does not exist (nothing created), and with one naming a PostgreSQL server that
    does not answer."""
    records = tmp_path / "threads.jsonl"
    records.write_text(json.dumps(GOOD_1) + "\n")
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "CONTRIBUTING.md").write_text("# Contributing\n\nRun `pre-commit run -a` first.\n")
    missing = tmp_path / "absent.db"
    for url in (f"sqlite+aiosqlite:///{missing}", "postgresql+asyncpg://u:p@127.0.0.1:9/none"):
        analysed = rltracker("analyze", str(records), env={"DATABASE_URL": url}, cwd=tmp_path)
        assert analysed.returncode == 0 and analysed.stdout.strip(), analysed.stderr
        rules = rltracker("rules", str(folder), env={"DATABASE_URL": url}, cwd=tmp_path)
        assert rules.returncode == 0 and "pre-commit" in rules.stdout, rules.stderr
    assert not missing.exists()


def test_a_query_meeting_a_migration_run_meanwhile_says_the_same_line(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command already past the check when another version's migrate runs: its query meets
    a column gone. The failure line is the check's (bot.store.migrate), the database's own
    words after it."""
    from bot.cli.errors import explain

    _behind(db_url, NEWER)  # resumed_at dropped, the revision a newer version's

    async def query() -> BaseException:
        engine = make_engine(db_url)
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT resumed_at FROM repositories"))
        except Exception as exc:  # noqa: BLE001 - the error under test
            return exc
        finally:
            await engine.dispose()
        raise AssertionError("the column is still there")

    exc = asyncio.run(query())
    monkeypatch.setenv("DATABASE_URL", db_url)
    explained = explain(exc)
    assert explained is not None and explained[1] == 1
    message = explained[0]
    assert message.startswith("DATABASE_URL=") and NEWER in message, message
    assert "does not know" in message and "resumed_at" in message, message
