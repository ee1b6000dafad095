"""Upgrades as an operator lives them (upgrade64): a deployment's database at each older
revision, holding what the app of that time stored, migrated to head keeps every row and
the current app reads it (a page, the worker on a delivery queued before, the nightly
re-analysis of old findings); each migration goes down and up again on such a database;
two replicas' `rltracker migrate` at once; a database migrated by a newer version (a rolled
back deploy); a migration that fails halfway. SQLite and PostgreSQL.

The rows are written as the app wrote them then (its column types, only the columns the
revision had), not through today's models, whose columns a past revision lacks."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestClient, TestServer
from alembic import command
from alembic.script import ScriptDirectory

from bot.config import Settings
from bot.context import AppContext
from bot.store import migrate
from bot.store.db import make_engine
from bot.store.models import Base
from tests.conftest import (
    _pg_execute,
    _with_database,
    database_backends,
    no_postgres,
)
from tests.test_migrations import downgrade

HEAD = migrate.head_revision()
SCRIPT = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
REVISIONS = [r.revision for r in reversed(list(SCRIPT.walk_revisions()))]  # 0001 ... head
OLDER = REVISIONS[:-1]
HANG_GUARD = 120  # seconds: a hang guard for the subprocesses, no speed assertion

REPO = "huggingface/trl"  # a catalog framework's repository: its pages are served
RID = 101  # its GitHub id
T0 = datetime(2026, 11, 2, 3, 4, 5, tzinfo=UTC)
OLD_VERSION = "2026.11.01-3"  # an analyzer version older than this code's
RESULT = {"failure": {"is_failure_report": True, "category": "entropy_collapse",
                      "confidence": 0.61, "categories": ["entropy_collapse", "kl_growth"]},
          "proposal": {"is_proposal": False}, "papers": []}
REPORT_TEXT = ("GRPO entropy collapses to zero after 200 steps. The policy entropy drops to "
               "almost 0 and the model keeps generating the same answer for every prompt.")


def _payload(action: str, number: int, title: str) -> str:
    """An `issues` delivery's body as GitHub sends it (compact JSON, `"private":false`)."""
    return json.dumps({
        "action": action,
        "issue": {"number": number, "id": 9000 + number, "node_id": f"I_{number}", "title": title,
                  "body": REPORT_TEXT, "state": "open", "user": {"login": "alice", "type": "User"},
                  "author_association": "NONE", "labels": [], "assignees": [],
                  "created_at": "2026-11-02T03:04:05Z", "updated_at": "2026-11-02T03:04:05Z",
                  "html_url": f"https://github.com/{REPO}/issues/{number}", "comments": 0},
        "repository": {"id": RID, "full_name": REPO, "name": "trl", "private": False,
                       "owner": {"login": "huggingface"}, "updated_at": "2026-11-01T00:00:00Z",
                       "default_branch": "main"},
        "sender": {"login": "alice", "type": "User"}}, separators=(",", ":"))


# What a deployment holds, every column the schema has had. A column a revision lacks is left
# out of its rows; after the upgrade it holds what its migration gives it (FILLED), else None.
def full_rows() -> dict[str, list[dict[str, Any]]]:
    common = {"created_at": T0, "updated_at": T0}
    thread = {"repo": REPO, "github_id": None, "node_id": None, "body": REPORT_TEXT,
              "author": "alice", "author_association": "NONE", "author_is_bot": False,
              "state": "open", "state_reason": None, "closed_by": None, "labels": ["bug"],
              "assignees": [], "complete": True, "muted": False, "answered": None,
              "answer_chosen_by": None, "category": None, "closed_at": None, "stored_at": T0,
              "first_repo": REPO, "first_repo_id": None, **common}
    return {
        "installations": [{"id": 7, "account": "huggingface", "account_type": "Organization",
                           "suspended": False, "deleted": False, "suspension_changed_at": T0,
                           "deleted_at": None, **common}],
        "repositories": [{"id": 1, "full_name": REPO, "github_id": RID, "framework": "trl",
                          "installation_id": 7, "removed_installation_id": None,
                          "name_seen_at": T0, "default_branch": "main",
                          "config": {"comments": {"failure": True}}, "config_error": None,
                          "config_fetched_at": T0, "comments_paused": False,
                          "paused_reason": None, "resumed_at": None, "resumed_by": None,
                          "private": False, **common}],
        "threads": [
            {**thread, "id": 1, "number": 1, "first_number": 1, "kind": "issue",
             "title": "GRPO entropy collapses to zero", "github_id": 9001},
            {**thread, "id": 2, "number": 2, "first_number": 2, "kind": "discussion", "title": "How to read KL?",
             "answered": True, "answer_chosen_by": "bob", "category": "Q&A"},
            {**thread, "id": 3, "number": 3, "first_number": 3, "kind": "pull_request", "title": "Fix the KL term",
             "state": "merged", "closed_at": T0},
        ],
        "comments": [
            {"id": 1, "thread_id": 1, "kind": "comment", "github_id": 10, "node_id": "IC_10",
             "author": "bob", "author_association": "MEMBER", "author_is_bot": False,
             "body": "Which learning rate?", "path": None, "minimized_reason": None, **common},
            {"id": 2, "thread_id": 2, "kind": "discussion_comment", "github_id": 12,
             "node_id": "DC_12", "author": "bob", "author_association": "MEMBER",
             "author_is_bot": False, "body": "Read it per token.", "path": None,
             "minimized_reason": None, **common},
            {"id": 3, "thread_id": 3, "kind": "review_comment", "github_id": 11,
             "node_id": "RC_11", "author": "carol", "author_association": "NONE",
             "author_is_bot": False, "body": "Nit: the sign.", "path": "trl/kl.py",
             "minimized_reason": "outdated", **common},
        ],
        "analyses": [{"id": 1, "thread_id": 1, "analyzer_version": OLD_VERSION,
                      "result": RESULT, "is_failure_report": True,
                      "failure_category": "entropy_collapse", "failure_confidence": 0.61,
                      "failure_runner_up": "kl_growth", "is_proposal": False,
                      "review_state": None, "methods": ["grpo"], "arxiv_ids": [],
                      # (None: as first stored; a time is dropped by a downgrade below 0022)
                      "analyzed_at": T0, "review_state_changed_at": None}],
        "verdicts": [{"id": 1, "thread_id": 1, "is_failure_report": True,
                      "category": "entropy_collapse", "login": "alice", "role": "author",
                      "comment_id": 77, "analyzer_category": "entropy_collapse",
                      "analyzer_is_failure_report": True, "analyzer_version": OLD_VERSION,
                      "given_at": T0}],
        "analysis_failures": [{"thread_id": 3, "analyzer_version": OLD_VERSION, "attempts": 1,
                               "error": "RuntimeError: x", "failed_at": T0}],
        "deletions": [{"id": 1, "key": "comment:comment:13", "created_at": T0,
                       "deleted_at": T0}],
        "actions": [{"id": 1, "repo": REPO, "number": 1, "kind": "failure_comment",
                     "status": "posted", "dedupe_key": f"failure:{REPO}#1",
                     "body": "Entropy collapse: options ...", "reason": None,
                     "details": {"category": "entropy_collapse"}, "language": "en",
                     "comment_id": 555, "comment_node_id": "IC_555", "reactions_up": 2,
                     "reactions_down": 0, "is_minimized": False, "minimized_reason": None,
                     "comment_deleted": False, "frozen": False, "delivery_id": "d-done",
                     **common}],
        "deliveries": [
            {"id": 1, "delivery_id": "d-done", "event": "issues", "action": "opened",
             "repo": REPO, "repo_id": RID, "installation_id": 7,
             "payload": _payload("opened", 1, "GRPO entropy collapses to zero"),
             "status": "done", "attempts": 1, "last_error": None, "received_at": T0,
             "next_attempt_at": None, "started_at": T0, "finished_at": T0, "claimed_by": None},
            {"id": 2, "delivery_id": "d-pending", "event": "issues", "action": "opened",
             "repo": REPO, "repo_id": RID, "installation_id": 7,
             "payload": _payload("opened", 4, "Entropy collapse again after 200 steps"),
             "status": "pending", "attempts": 0, "last_error": None, "received_at": T0,
             "next_attempt_at": None, "started_at": None, "finished_at": None,
             "claimed_by": None},
        ],
        "job_runs": [{"id": 1, "name": "nightly", "started_at": T0, "finished_at": T0,
                      "outcome": "ok", "counts": {"reanalyse": {"reanalysed": 3}},
                      "error": None, "heartbeat_at": T0}],
        "reports": [{"id": 1, "date": "2026-11-01", "data": {"date": "2026-11-01"},
                     "markdown": "# Report of 2026-11-01\n", "created_at": T0}],
        "papers": [{"id": 1, "arxiv_id": "2402.03300", "title": "DeepSeekMath",
                    "aliases": ["GRPO"], "method": "grpo", "first_public": "2024-02-05",
                    "categories": "cs.CL", "source": "import", "added_at": T0}],
        "sync_cursors": [{"id": 1, "repo": REPO, "kind": "issue", "cursor": "Y3Vyc29y",
                          "updated_since": T0, "full_done": True, "last_run_at": T0}],
        "contribution_rules": [{"id": 1, "repo": REPO, "files": {"CONTRIBUTING.md": "Be kind."},
                                "summary": {"rules": []}, "fetched_at": T0}],
    }


# A column added after the rows were stored: what its migration fills it with (else None).
FILLED = {("repositories", "private"): False,
          ("analyses", "failure_confidence"): 0.61,  # 0007, from the stored JSON
          ("analyses", "failure_runner_up"): "kl_growth",
          ("deliveries", "repo_id"): RID,  # 0017, from the stored payload
          ("threads", "first_repo"): REPO,  # 0022, from the thread's repository name
          ("threads", "first_number"): lambda row: row["number"]}  # 0023, from its number


def _stored_then(table: str, row: dict[str, Any], rev: str) -> dict[str, Any]:
    """A row as the app of revision `rev` stored it (before 0013 a discussion's comment was
    of kind `comment`)."""
    if table == "comments" and row["kind"] == "discussion_comment" and rev < "0013":
        return {**row, "kind": "comment"}
    return row


def _filled(table: str, col: str, row: dict[str, Any]) -> Any:
    """What `col`'s migration fills a row stored before it with (FILLED: a value, or what it
    takes from the row's other columns)."""
    value = FILLED.get((table, col))
    return value(row) if callable(value) else value


def expected(rev: str, schema: dict[str, set[str]]) -> dict[str, list[dict[str, Any]]]:
    """The rows stored at `rev` (tables and columns `schema` had) as head holds them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table, rows in full_rows().items():
        if table not in schema:
            out[table] = []
            continue
        out[table] = [{col: (value if col in schema[table] else _filled(table, col, row))
                       for col, value in row.items()} for row in rows]
    if rev < "0013" and out["deletions"]:  # a comment deletion noted before: for both kinds since
        out["deletions"] = out["deletions"] + [
            {**out["deletions"][0], "id": None, "key": "comment:discussion_comment:13"}]
    return out


# ------------------------------------------------------------------------- the databases
@pytest.fixture(params=database_backends())
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no table): a SQLite file not made yet, or a new PostgreSQL one."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'deploy.db'}"
        return
    if request.param is None:
        no_postgres()
    name = f"rlt_up_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_execute(request.param, f'CREATE DATABASE "{name}"'))
    yield _with_database(request.param, name)
    asyncio.run(_pg_execute(request.param, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _run(url: str, fn: Any) -> Any:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def run(url: str, fn: Any) -> Any:
    return asyncio.run(_run(url, fn))


def schema_of(url: str) -> dict[str, set[str]]:
    def read(conn: Any) -> dict[str, set[str]]:
        with warnings.catch_warnings():  # SQLite: "skipped unsupported reflection" (lower(repo))
            warnings.simplefilter("ignore")
            inspector = sa.inspect(conn)
            return {t: {c["name"] for c in inspector.get_columns(t)}
                    for t in inspector.get_table_names() if t != "alembic_version"}
    return run(url, read)


def indexes_of(url: str) -> dict[str, set[str]]:
    """Each table's index names (SQLite: from sqlite_master, the expression ones too)."""
    def read(conn: Any) -> dict[str, set[str]]:
        if conn.dialect.name == "sqlite":
            rows = conn.execute(sa.text("SELECT tbl_name, name FROM sqlite_master WHERE "
                                        "type = 'index' AND name NOT LIKE 'sqlite_%'")).all()
        else:
            rows = conn.execute(sa.text("SELECT tablename, indexname FROM pg_indexes WHERE "
                                        "schemaname = 'public'")).all()
        out: dict[str, set[str]] = {}
        for table, name in rows:
            out.setdefault(table, set()).add(name)
        return out
    return run(url, read)


def populate(url: str, rev: str) -> dict[str, set[str]]:
    """The rows a deployment at `rev` holds, written as its app wrote them: only the columns
    the revision has, in the models' column types. Returns the schema."""
    schema = schema_of(url)

    def write(conn: Any) -> None:
        for table, rows in full_rows().items():
            if table not in schema:
                continue
            types = Base.metadata.tables[table].c
            for row in rows:
                row = _stored_then(table, row, rev)
                kept = {c: v for c, v in row.items() if c in schema[table]}
                t = sa.table(table, *(sa.column(c, types[c].type) for c in kept))
                conn.execute(sa.insert(t).values(**kept))
        if conn.dialect.name == "postgresql":  # ids given: the sequences after them
            for table in schema:
                if "id" in schema[table] and table != "installations":
                    conn.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                         f"(SELECT coalesce(max(id), 1) FROM {table}))"))

    run(url, write)
    if rev < "0014":
        run(url, lambda conn: _a_private_repository(conn, schema))
    return schema


SECRET, SECRET_ID = "o/secret", 202


def _a_private_repository(conn: Any, schema: dict[str, set[str]]) -> None:
    """Before 0014 the app stored a private repository's threads like any other: its thread
    and a finished delivery whose payload says `"private":true`. 0014 forgets the thread
    and marks the repository, 0016 empties the delivery's payload."""
    payload = json.loads(_payload("opened", 1, "secret"))
    payload["repository"].update(id=SECRET_ID, full_name=SECRET, private=True)
    raw = json.dumps(payload, separators=(",", ":"))
    threads = Base.metadata.tables["threads"].c
    thread = {c: v for c, v in {**full_rows()["threads"][0], "id": 50, "repo": SECRET}.items()
              if c in schema["threads"]}
    conn.execute(sa.insert(sa.table("threads", *(sa.column(c, threads[c].type) for c in thread)))
                 .values(**thread))
    delivery = {c: v for c, v in {**full_rows()["deliveries"][0], "id": 50, "repo": SECRET,
                                  "delivery_id": "d-secret", "payload": raw}.items()
                if c in schema["deliveries"]}
    deliveries = Base.metadata.tables["deliveries"].c
    conn.execute(sa.insert(sa.table("deliveries", *(sa.column(c, deliveries[c].type)
                                                    for c in delivery))).values(**delivery))


def assert_forgotten(url: str) -> None:
    """The private repository's thread gone, its row marked, its delivery's payload emptied."""
    from bot.store.privacy import EMPTIED_PAYLOAD

    def read(conn: Any) -> tuple[Any, ...]:
        return (conn.execute(sa.text("SELECT count(*) FROM threads WHERE repo = :r"),
                             {"r": SECRET}).scalar(),
                conn.execute(sa.text("SELECT private FROM repositories WHERE full_name = :r"),
                             {"r": SECRET}).scalar(),
                conn.execute(sa.text("SELECT payload FROM deliveries WHERE id = 50")).scalar())
    count, private, payload = run(url, read)
    assert (count, bool(private), payload) == (0, True, EMPTIED_PAYLOAD)


def stored(url: str) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows as today's models read them (their types), in id order."""
    def read(conn: Any) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for table, rows in full_rows().items():
            t = Base.metadata.tables[table]
            cols = list(rows[0])
            order = t.c.id if "id" in t.c else t.c.thread_id
            out[table] = [dict(r._mapping) for r in conn.execute(
                sa.select(*(t.c[c] for c in cols)).order_by(order)).all()]
        return out
    return run(url, read)


def assert_kept(url: str, want: dict[str, list[dict[str, Any]]]) -> None:
    got = stored(url)
    for table, rows in want.items():
        have = [r for r in got[table] if r.get("full_name") != SECRET and r.get("id") != 50]
        if any(r.get("id", 0) is None for r in rows):  # a row a migration made: its id is its own
            have = [{**r, "id": None} if r["id"] not in {w.get("id") for w in rows} else r
                    for r in have]
        assert have == rows, table


def settings_for(url: str) -> Settings:
    return Settings.from_env({}, database_url=url, webhook_secret="test-secret", dry_run=True)


async def the_app_reads_it(url: str) -> None:
    """Today's app on the upgraded database: the pages of the old threads, the worker on the
    delivery queued before the upgrade, the nightly re-analysis of the old findings."""
    from analyzers.version import ANALYZER_VERSION
    from bot.app import create_app
    from bot.scheduler import step_reanalyse
    from bot.store.models import Analysis, Delivery, Thread
    from bot.webhooks.worker import Worker

    ctx = AppContext.create(settings_for(url))
    try:
        client = TestClient(TestServer(create_app(ctx, worker=False)))
        await client.start_server()
        try:
            page = await client.get(f"/threads/{REPO}/1")
            assert page.status == 200 and "GRPO entropy collapses to zero" in await page.text()
            page = await client.get(f"/threads/{REPO}/2")
            assert page.status == 200 and "How to read KL?" in await page.text()
            api = await client.get(f"/api/threads/{REPO}/3")
            assert api.status == 200
            assert (await client.get("/")).status == 200
        finally:
            await client.close()
        await Worker(ctx, backoff=lambda attempt: 0.0).run_until_idle()
        async with ctx.sessionmaker() as session:
            status = await session.scalar(sa.select(Delivery.status).where(
                Delivery.delivery_id == "d-pending"))
            assert status == "done"
            assert await session.scalar(sa.select(Thread.title).where(Thread.number == 4)) == (
                "Entropy collapse again after 200 steps")
        counts = await step_reanalyse(ctx)
        assert counts["failed_total"] == 0, counts
        async with ctx.sessionmaker() as session:
            versions = set(await session.scalars(sa.select(Analysis.analyzer_version)))
        assert versions == {ANALYZER_VERSION}
    finally:
        await ctx.close()


# ------------------------------------------------------------------------- populated upgrades
@pytest.mark.parametrize("rev", OLDER)
def test_a_deployment_at_an_older_revision_upgrades_keeping_its_rows(empty_url: str, rev: str
                                                                      ) -> None:
    """Each older revision, holding the rows its app stored, migrated to head: every row and
    value kept (the conversions the migrations document: a discussion's comments their own
    kind, a comment's deletion noted for both kinds, the analysis' uncertainty and the
    delivery's repository id read from what was stored; before 0014, a private repository's
    thread forgotten and its delivery emptied), the schema the models', the indexes
    of both (the SQLite table copies included), and today's app reads it."""
    migrate.upgrade(empty_url, rev)
    schema = populate(empty_url, rev)
    migrate.upgrade(empty_url)
    assert_kept(empty_url, expected(rev, schema))
    if rev < "0014":
        assert_forgotten(empty_url)
    from tests.test_migrations import EXPRESSION_INDEXES, schema_differences

    assert schema_differences(empty_url) == []
    indexes = set().union(*indexes_of(empty_url).values())
    assert EXPRESSION_INDEXES <= indexes
    asyncio.run(the_app_reads_it(empty_url))


@pytest.fixture
def populated(empty_url: str) -> str:
    """A database at head holding a deployment's rows."""
    migrate.upgrade(empty_url)
    populate(empty_url, HEAD)
    return empty_url


@pytest.mark.parametrize("rev", OLDER)
def test_each_downgrade_then_upgrade_round_trips_a_populated_database(populated: str, rev: str
                                                                      ) -> None:
    """Down to each older revision and up again, on a database holding rows: what the older
    revision has is kept on the way down, and head then holds what an upgrade from that
    revision gives (a table or column the older revision lacks comes back empty, as its
    migration makes it)."""
    indexes = indexes_of(populated)
    downgrade(populated, rev)
    schema = schema_of(populated)
    migrate.upgrade(populated)
    assert_kept(populated, expected(rev, schema))
    assert indexes_of(populated) == indexes


# ------------------------------------------------------------------------- as a command
def rltracker(*args: str, url: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_", "PORT"))}
    return subprocess.Popen([sys.executable, "-m", "bot.cli", *args], text=True,
                            env={**env, "DATABASE_URL": url, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


ROOT = Path(__file__).resolve().parent.parent


def finished(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=HANG_GUARD)
    return proc.returncode, out, err


def one_line(err: str, command_name: str, *names: str) -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"rltracker {command_name}: "), lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def version_of(url: str) -> str | None:
    return run(url, lambda conn: conn.execute(sa.text(
        "SELECT version_num FROM alembic_version")).scalar())


def set_version(url: str, version: str) -> None:
    run(url, lambda conn: conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"),
                                       {"v": version}))


NEWER = "0019_from_a_newer_version"


def test_migrate_on_a_database_a_newer_version_migrated_is_one_line(populated: str) -> None:
    """A rolled-back deploy: the database at a revision this code does not know (a newer
    release migrated it). `rltracker migrate` ended in alembic's CommandError traceback and
    "this is a bug". One line now, exit 1, saying what the revision is and to run the newer
    version; nothing is written."""
    set_version(populated, NEWER)
    before = stored(populated), schema_of(populated)
    status, out, err = finished(rltracker("migrate", url=populated))
    line = one_line(err, "migrate", NEWER, HEAD, "newer version")
    assert status == 1 and out == ""
    assert "behind" not in line
    assert version_of(populated) == NEWER
    assert (stored(populated), schema_of(populated)) == before


def test_serve_on_a_database_a_newer_version_migrated_says_so(populated: str) -> None:
    """`rltracker serve` on that database refused, but said the database is "behind the
    migrations ... run `rltracker migrate` first": a command that cannot help (it failed with
    a traceback). It says now that a newer version migrated it, exit 1."""
    set_version(populated, NEWER)
    from tests.test_crash_recovery import free_port

    serve = rltracker("serve", "--dev", "--no-backfill", "--port", str(free_port()), url=populated)
    status, out, err = finished(serve)
    line = err.strip().splitlines()[-1]
    assert status == 1 and "Traceback" not in err, err
    assert line.startswith("rltracker serve: ") and NEWER in line and "newer version" in line, line
    assert "behind" not in line and "rltracker migrate" not in line, line


def _waiting_sessions(url: str) -> int:
    return int(run(url, lambda conn: conn.execute(sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
        "wait_event_type = 'Lock' AND pid <> pg_backend_pid()")).scalar()))


def _holding_a_write_lock(url: str) -> Any:
    """Another session holding what 0018's first statement needs (PostgreSQL: the actions
    table; SQLite: the database's write lock) until `.release()`."""
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")

        class Held:
            def release(self) -> None:
                conn.execute("ROLLBACK")
                conn.close()
        return Held()
    import asyncpg

    loop = asyncio.new_event_loop()
    conn = loop.run_until_complete(asyncpg.connect(
        url.replace("postgresql+asyncpg://", "postgresql://")))
    tx = conn.transaction()
    loop.run_until_complete(tx.start())
    loop.run_until_complete(conn.execute("LOCK TABLE actions IN ACCESS EXCLUSIVE MODE"))

    class HeldPg:
        def release(self) -> None:
            loop.run_until_complete(tx.rollback())
            loop.run_until_complete(conn.close())
            loop.close()
    return HeldPg()


def only_waiting(err: str) -> bool:
    """Nothing on stderr but, for a migrate that waited for the other, the line saying so
    (ops64: tests/test_migrate_wait.py)."""
    return all(line.startswith("rltracker migrate: waiting for another migrate")
               for line in err.splitlines())


def _both_started(url: str, procs: list[subprocess.Popen[str]]) -> None:
    """Bounded wait until both migrations are under way: on PostgreSQL both sessions wait
    for a lock (pg_stat_activity); on SQLite both processes have the file open."""
    import time

    for _ in range(600):
        if any(p.poll() is not None for p in procs):
            return
        if url.startswith("postgresql"):
            if _waiting_sessions(url) >= 2:
                return
        else:
            path = os.path.realpath(url.split("///", 1)[1])
            opened = 0
            for p in procs:
                fds = Path(f"/proc/{p.pid}/fd")
                try:
                    opened += any(os.path.realpath(fd) == path for fd in fds.iterdir())
                except OSError:
                    pass
            if opened == 2:
                time.sleep(2)  # (then each reads the revision and meets the lock)
                return
        time.sleep(0.1)


def test_two_replicas_migrating_at_once_end_at_head(populated: str) -> None:
    """Two replicas start together and each runs `rltracker migrate` (the image's command)
    on one database at 0017. Both met 0018's first statement: on PostgreSQL the second
    failed with DuplicateTable, a traceback and "this is a bug" (the container restarts); on
    SQLite "index ... already exists", exit 1. Now one migrates and the other waits for it,
    then finds the database at head: both exit 0, one schema, no half-applied state."""
    downgrade(populated, "0017")
    held = _holding_a_write_lock(populated)
    try:
        procs = [rltracker("migrate", url=populated) for _ in range(2)]
        _both_started(populated, procs)
    finally:
        held.release()
    results = [finished(p) for p in procs]
    for status, out, err in results:
        assert status == 0 and only_waiting(err), err
        assert out == f"database at {HEAD}\n"
    assert version_of(populated) == HEAD
    from tests.test_migrations import schema_differences

    assert schema_differences(populated) == []
    assert_kept(populated, expected(HEAD, schema_of(populated)))


def test_two_migrations_of_a_new_database_at_once(empty_url: str) -> None:
    """Two first starts at once on an empty database: both exit 0 at head."""
    procs = [rltracker("migrate", url=empty_url) for _ in range(2)]
    for status, _out, err in (finished(p) for p in procs):
        assert status == 0 and only_waiting(err), err
    assert version_of(empty_url) == HEAD


def test_a_migration_failing_halfway_leaves_the_previous_revision(populated: str) -> None:
    """0018's second statement fails (an index of that name made by hand). On SQLite the
    first statement's index stayed, alembic_version said 0017, and every rerun failed on the
    index it had made ("index ix_actions_lower_repo_number already exists"), fixed or not; on
    PostgreSQL a traceback. Now: one line naming the migration and what failed, exit 1, the
    database as it was at 0017 (nothing of the failed upgrade kept), and once the cause is
    gone a rerun reaches head."""
    downgrade(populated, "0017")
    run(populated, lambda conn: conn.execute(sa.text(
        "CREATE INDEX ix_deliveries_lower_repo ON deliveries (repo)")))
    indexes = indexes_of(populated)
    status, out, err = finished(rltracker("migrate", url=populated))
    one_line(err, "migrate", "0018", "ix_deliveries_lower_repo", "0017")
    assert status == 1
    assert version_of(populated) == "0017"
    assert indexes_of(populated) == indexes  # ix_actions_lower_repo_number not left behind
    run(populated, lambda conn: conn.execute(sa.text("DROP INDEX ix_deliveries_lower_repo")))
    status, out, err = finished(rltracker("migrate", url=populated))
    assert (status, err, out) == (0, "", f"database at {HEAD}\n")
    assert_kept(populated, expected(HEAD, schema_of(populated)))


def test_a_refused_row_is_named_in_the_failure_line(populated: str) -> None:
    """What a migration's failure line says of a row a constraint refuses: the database's
    first line, and on PostgreSQL its DETAIL (the key and value), which the first line
    lacks."""
    from sqlalchemy.exc import IntegrityError

    from bot.store.migrate import _failure_message

    def duplicate(conn: Any) -> None:
        conn.execute(sa.text("INSERT INTO deletions (key, deleted_at) VALUES "
                             "('comment:comment:13', CURRENT_TIMESTAMP)"))

    with pytest.raises(IntegrityError) as refused:
        run(populated, duplicate)
    line = _failure_message(SCRIPT.get_revision(HEAD), "0017", refused.value)
    assert line.startswith(f"migration {HEAD} (") and "still at 0017" in line
    assert "deletions" in line or "uq_deletions_key" in line, line
    if populated.startswith("postgresql"):
        assert "(key)=(comment:comment:13) already exists" in line, line


NEXT_MIGRATION = '''"""A later migration that copies `threads` on SQLite (a test's own).

Revision ID: 9001
Revises: {head}
"""
import sqlalchemy as sa
from alembic import op

revision = "9001"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads", recreate="always") as batch:
        batch.add_column(sa.Column("extra", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("threads", recreate="always") as batch:
        batch.drop_column("extra")
'''


def test_a_later_migration_copying_a_parent_table_keeps_its_children(populated: str,
                                                                     tmp_path: Path) -> None:
    """A migration that copies `threads` (SQLite's way to alter a table: make a new one, copy,
    drop the old, rename) dropped the old table with foreign keys on: SQLite deletes its rows
    first, and ON DELETE CASCADE took every comment, analysis, verdict and re-analysis
    failure with them (0009 avoided it for `installations` with a plain ALTER; a migration
    could not turn the check off inside the one transaction an upgrade now is). The
    migrations' connection has foreign keys off: the children stay. (PostgreSQL alters a
    table in place.)"""
    import shutil

    if not populated.startswith("sqlite"):
        pytest.skip("SQLite's table copy; PostgreSQL alters in place")

    scripts = tmp_path / "migrations"
    shutil.copytree(Path(migrate.MIGRATIONS_DIR), scripts,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "9001_copy_threads.py").write_text(NEXT_MIGRATION.format(head=HEAD))
    cfg = migrate.alembic_config(populated)
    cfg.set_main_option("script_location", str(scripts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        command.upgrade(cfg, "9001")
    counts = run(populated, lambda conn: {t: conn.execute(sa.text(f"SELECT count(*) FROM {t}"))
                                          .scalar() for t in ("threads", "comments", "analyses",
                                                              "verdicts", "analysis_failures")})
    assert counts == {"threads": 3, "comments": 3, "analyses": 1, "verdicts": 1,
                      "analysis_failures": 1}


def test_a_migration_leaving_rows_pointing_nowhere_keeps_nothing(populated: str,
                                                                 tmp_path: Path) -> None:
    """With foreign keys off for the migrations (above), a migration deleting a thread but
    not its comments would leave them pointing nowhere: the upgrade fails whole, naming a
    row, and the database stays as it was."""
    import shutil

    from bot.store.migrate import MigrationFailed

    if not populated.startswith("sqlite"):
        pytest.skip("SQLite's foreign keys; PostgreSQL's stay on")
    scripts = tmp_path / "migrations"
    shutil.copytree(Path(migrate.MIGRATIONS_DIR), scripts,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "9001_orphans.py").write_text(
        NEXT_MIGRATION.format(head=HEAD).split("def upgrade")[0]
        + 'def upgrade() -> None:\n    op.execute("DELETE FROM threads WHERE id = 1")\n')
    cfg = migrate.alembic_config(populated)
    cfg.set_main_option("script_location", str(scripts))
    with pytest.raises(MigrationFailed) as failed:
        command.upgrade(cfg, "9001")
    assert "3 row(s) pointing nowhere, e.g. analyses rowid 1 (its threads row is gone)" in (
        failed.value.message)
    assert f"still at {HEAD}" in failed.value.message
    assert version_of(populated) == HEAD
    assert_kept(populated, expected(HEAD, schema_of(populated)))
