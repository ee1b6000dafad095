"""Every migration goes down and up again on SQLite and PostgreSQL, keeping the rows, and the
migrated schema is the one the models describe (what the app reads is what the migrations
made)."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from bot.store import migrate
from bot.store.db import make_engine
from bot.store.models import Base


async def _inspect(url: str, fn: Any) -> Any:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def columns(url: str, table: str) -> set[str]:
    return asyncio.run(_inspect(
        url, lambda conn: {c["name"] for c in inspect(conn).get_columns(table)}))


def indexes(url: str, table: str) -> set[str]:
    """The names of `table`'s indexes (SQLite warns that it skips reflecting the expression
    indexes, which EXPRESSION_INDEXES names: they are not asked about here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped unsupported reflection")
        return asyncio.run(_inspect(
            url, lambda conn: {i["name"] for i in inspect(conn).get_indexes(table)}))


# Made by migrations 0002 and 0018 on lower(repo), and 0020 on the threads' date newest first:
# expression indexes, which the models do not declare (the lookups that use it are written in
# bot/store/threads.py).
EXPRESSION_INDEXES = {"ix_threads_lower_repo_number", "ix_actions_lower_repo_number",
                      "ix_deliveries_lower_repo", "ix_threads_created_at_id"}


def downgrade(url: str, rev: str) -> None:
    """alembic downgrade (SQLite's table copies warn that they skip reflecting `threads`'
    expression index, which they leave alone: bot.store.migrate.upgrade filters the same)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipped unsupported reflection")
        command.downgrade(migrate.alembic_config(url), rev)


def schema_differences(url: str) -> list[Any]:
    def include_name(name: str | None, type_: str, parent: Any) -> bool:
        return not (type_ == "index" and name in EXPRESSION_INDEXES)

    def compare(conn: Any) -> list[Any]:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_name": include_name})
        with warnings.catch_warnings():  # SQLite: "skipped unsupported reflection" of it
            warnings.simplefilter("ignore")
            return compare_metadata(context, Base.metadata)

    return asyncio.run(_inspect(url, compare))


async def _execute(url: str, statement: str) -> list[Any]:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(statement))
            return list(result.all()) if result.returns_rows else []
    finally:
        await engine.dispose()


def test_the_migrated_schema_is_the_models_schema(db_url: str) -> None:
    assert schema_differences(db_url) == []


def test_0004_removed_installation_goes_down_and_up_keeping_the_repositories(db_url: str) -> None:
    assert "removed_installation_id" in columns(db_url, "repositories")
    asyncio.run(_execute(db_url, "INSERT INTO installations (id, account, suspended, deleted, "
                                 "created_at, updated_at) VALUES (7, 'o', false, false, "
                                 "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    asyncio.run(_execute(db_url, "INSERT INTO repositories (full_name, installation_id, "
                                 "removed_installation_id, comments_paused, created_at, "
                                 "updated_at) VALUES ('o/a', 7, NULL, false, CURRENT_TIMESTAMP, "
                                 "CURRENT_TIMESTAMP), ('o/b', NULL, 7, false, "
                                 "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0003")
    assert "removed_installation_id" not in columns(db_url, "repositories")
    assert sorted(asyncio.run(_execute(
        db_url, "SELECT full_name, installation_id FROM repositories"))) == [("o/a", 7), ("o/b", None)]
    migrate.upgrade(db_url)
    assert "removed_installation_id" in columns(db_url, "repositories")
    assert sorted(asyncio.run(_execute(
        db_url, "SELECT full_name, installation_id, removed_installation_id FROM repositories"
    ))) == [("o/a", 7, None), ("o/b", None, None)]
    assert schema_differences(db_url) == []


def test_0005_deletions_goes_down_and_up(db_url: str) -> None:
    """The deletions table (what GitHub deleted stays deleted) is dropped on the way down and
    made again, empty, on the way up; the threads are kept."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (repo, number, kind, title, labels, "
                                 "assignees, complete, muted, state, stored_at) VALUES ('o/a', 1, "
                                 "'issue', 't', '[]', '[]', true, false, 'open', CURRENT_TIMESTAMP)"))
    asyncio.run(_execute(db_url, "INSERT INTO deletions (key, deleted_at) "
                                 "VALUES ('thread:issue:o/a#2', CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0004")
    assert "deletions" not in asyncio.run(_inspect(db_url, lambda c: inspect(c).get_table_names()))
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT key FROM deletions")) == []
    assert asyncio.run(_execute(db_url, "SELECT repo, number FROM threads")) == [("o/a", 1)]
    assert schema_differences(db_url) == []


def test_0006_verdicts_goes_down_and_up(db_url: str) -> None:
    """The verdicts table (people's `/rltracker kind` / `not-a-failure`) is dropped on the
    way down and made again, empty, on the way up; the threads are kept. One verdict a thread:
    the unique thread_id holds, and deleting the thread deletes its verdict."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (repo, number, kind, title, labels, "
                                 "assignees, complete, muted, state, stored_at) VALUES ('o/a', 1, "
                                 "'issue', 't', '[]', '[]', true, false, 'open', CURRENT_TIMESTAMP)"))
    [(thread_id,)] = asyncio.run(_execute(db_url, "SELECT id FROM threads"))
    verdict = ("INSERT INTO verdicts (thread_id, is_failure_report, category, login, role, "
               f"comment_id, given_at) VALUES ({thread_id}, true, 'kl_growth', 'alice', 'author', "
               "9, CURRENT_TIMESTAMP)")
    asyncio.run(_execute(db_url, verdict))
    with pytest.raises(IntegrityError):
        asyncio.run(_execute(db_url, verdict))
    downgrade(db_url, "0005")
    assert "verdicts" not in asyncio.run(_inspect(db_url, lambda c: inspect(c).get_table_names()))
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT thread_id FROM verdicts")) == []
    assert asyncio.run(_execute(db_url, "SELECT repo, number FROM threads")) == [("o/a", 1)]
    assert schema_differences(db_url) == []
    asyncio.run(_execute(db_url, verdict))
    asyncio.run(_execute(db_url, "DELETE FROM threads"))
    assert asyncio.run(_execute(db_url, "SELECT thread_id FROM verdicts")) == []


def test_0007_analysis_uncertainty_is_filled_from_the_stored_json(db_url: str) -> None:
    """The failure confidence and the kind listed second (a split kind) become columns of
    the analyses: the upgrade fills them from each stored analysis' JSON (none where the JSON
    has none), the downgrade drops them and keeps the rows."""
    for number in (1, 2, 3):
        asyncio.run(_execute(db_url, "INSERT INTO threads (repo, number, kind, title, labels, "
                                     "assignees, complete, muted, state, stored_at) VALUES "
                                     f"('o/a', {number}, 'issue', 't', '[]', '[]', true, false, "
                                     "'open', CURRENT_TIMESTAMP)"))
    results = {
        1: '{"failure": {"confidence": 0.61, "categories": ["entropy_collapse", "kl_growth"]}}',
        2: '{"failure": {"confidence": 0.9, "categories": ["kl_growth"]}}',
        3: '{"papers": []}',
    }
    for number, result in results.items():
        asyncio.run(_execute(db_url, "INSERT INTO analyses (thread_id, analyzer_version, result, "
                                     "is_failure_report, is_proposal, methods, arxiv_ids, "
                                     f"analyzed_at) SELECT id, 'v', '{result}', true, false, '[]', "
                                     f"'[]', CURRENT_TIMESTAMP FROM threads WHERE number = {number}"))
    downgrade(db_url, "0006")
    assert not {"failure_confidence", "failure_runner_up"} & columns(db_url, "analyses")
    migrate.upgrade(db_url)
    assert sorted(asyncio.run(_execute(
        db_url, "SELECT t.number, a.failure_confidence, a.failure_runner_up FROM analyses a "
                "JOIN threads t ON t.id = a.thread_id"))) == [
        (1, 0.61, "kl_growth"), (2, 0.9, None), (3, None, None)]
    assert schema_differences(db_url) == []


def test_0008_repository_name_seen_at_goes_down_and_up(db_url: str) -> None:
    """When the repository's stored name was seen (a stale name must not undo a rename): the
    column is dropped on the way down and made again, empty, on the way up; the rows are
    kept."""
    asyncio.run(_execute(db_url, "INSERT INTO repositories (full_name, github_id, name_seen_at, "
                                 "comments_paused, created_at, updated_at) VALUES ('o/a', 5, "
                                 "'2019-05-15 16:00:00+00:00', false, CURRENT_TIMESTAMP, "
                                 "CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0007")
    assert "name_seen_at" not in columns(db_url, "repositories")
    assert asyncio.run(_execute(db_url, "SELECT full_name, github_id FROM repositories")) == [
        ("o/a", 5)]
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(
        db_url, "SELECT full_name, github_id, name_seen_at FROM repositories")) == [
        ("o/a", 5, None)]
    assert schema_differences(db_url) == []


def test_0009_installation_event_times_go_down_and_up(db_url: str) -> None:
    """The times installation events are ordered by: dropped on the way down, made again,
    empty, on the way up; the installations are kept."""
    asyncio.run(_execute(db_url, "INSERT INTO installations (id, account, suspended, deleted, "
                                 "suspension_changed_at, deleted_at, created_at, updated_at) "
                                 "VALUES (7, 'o', false, true, '2021-04-29 02:32:50+00:00', "
                                 "'2021-05-01 00:00:00+00:00', CURRENT_TIMESTAMP, "
                                 "CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0008")
    assert not {"suspension_changed_at", "deleted_at"} & columns(db_url, "installations")
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(
        db_url, "SELECT id, deleted, suspension_changed_at, deleted_at FROM installations")) == [
        (7, True, None, None)]
    assert schema_differences(db_url) == []


def test_0012_analysis_failures_goes_down_and_up(db_url: str) -> None:
    """The re-analysis failures: dropped on the way down (the step then tries those threads
    again), made again, empty, on the way up; a failure row goes with its thread."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, "
                                 "labels, assignees, complete, muted, stored_at) VALUES (5, 'o/r', "
                                 "1, 'issue', 't', 'open', '[]', '[]', true, false, CURRENT_TIMESTAMP)"))
    asyncio.run(_execute(db_url, "INSERT INTO analysis_failures (thread_id, analyzer_version, "
                                 "attempts, error, failed_at) VALUES (5, '2026.12.04-1', 2, "
                                 "'RuntimeError: x', CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0011")
    tables = asyncio.run(_inspect(db_url, lambda conn: set(inspect(conn).get_table_names())))
    assert "analysis_failures" not in tables and "threads" in tables
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT count(*) FROM analysis_failures")) == [(0,)]
    assert schema_differences(db_url) == []


def _thread_row(url: str, number: int, kind: str) -> int:
    asyncio.run(_execute(url, "INSERT INTO threads (repo, number, kind, title, labels, assignees, "
                              f"complete, muted, state, stored_at) VALUES ('o/a', {number}, "
                              f"'{kind}', 't', '[]', '[]', true, false, 'open', CURRENT_TIMESTAMP)"))
    [(thread_id,)] = asyncio.run(_execute(url, f"SELECT id FROM threads WHERE number = {number}"))
    return int(thread_id)


def _comment_row(url: str, thread_id: int, kind: str, github_id: int, body: str) -> None:
    asyncio.run(_execute(url, "INSERT INTO comments (thread_id, kind, github_id, body) VALUES "
                              f"({thread_id}, '{kind}', {github_id}, '{body}')"))


def test_0013_discussion_comments_get_their_own_kind_without_loss(db_url: str) -> None:
    """Discussion comments were stored as `comment`, the kind of issue comments, which GitHub
    numbers apart: the upgrade gives the comments of discussions the kind
    `discussion_comment`, and a comment's deletion noted before (its kind unknown then) stays
    noted for both kinds; review comments get `path`, discussions `answered`,
    `answer_chosen_by` and `category` (empty). The downgrade puts the kind back; of an issue
    comment and a discussion comment with the same id, which the old schema cannot hold
    both, the issue comment stays (a sync reads the discussion's back)."""
    downgrade(db_url, "0012")
    assert "path" not in columns(db_url, "comments")
    issue, disc = _thread_row(db_url, 1, "issue"), _thread_row(db_url, 2, "discussion")
    _comment_row(db_url, issue, "comment", 10, "issue comment")
    _comment_row(db_url, issue, "review_comment", 11, "review comment")
    _comment_row(db_url, disc, "comment", 12, "discussion comment")
    asyncio.run(_execute(db_url, "INSERT INTO deletions (key, deleted_at) VALUES "
                                 "('comment:comment:13', CURRENT_TIMESTAMP), "
                                 "('thread:issue:o/a#9', CURRENT_TIMESTAMP)"))
    migrate.upgrade(db_url)
    assert schema_differences(db_url) == []
    assert sorted(asyncio.run(_execute(
        db_url, "SELECT github_id, kind, body, path FROM comments"))) == [
        (10, "comment", "issue comment", None), (11, "review_comment", "review comment", None),
        (12, "discussion_comment", "discussion comment", None)]
    assert sorted(k for (k,) in asyncio.run(_execute(db_url, "SELECT key FROM deletions"))) == [
        "comment:comment:13", "comment:discussion_comment:13", "thread:issue:o/a#9"]
    assert sorted(asyncio.run(_execute(
        db_url, "SELECT number, answered, answer_chosen_by, category FROM threads"))) == [
        (1, None, None, None), (2, None, None, None)]
    # Both kinds of one id, as the new schema holds them; then down and up again.
    _comment_row(db_url, disc, "discussion_comment", 10, "discussion comment, same id")
    downgrade(db_url, "0012")
    assert sorted(asyncio.run(_execute(db_url, "SELECT github_id, kind, body FROM comments"))) == [
        (10, "comment", "issue comment"), (11, "review_comment", "review comment"),
        (12, "comment", "discussion comment")]
    assert sorted(k for (k,) in asyncio.run(_execute(db_url, "SELECT key FROM deletions"))) == [
        "comment:comment:13", "thread:issue:o/a#9"]
    migrate.upgrade(db_url)
    assert sorted(asyncio.run(_execute(db_url, "SELECT github_id, kind FROM comments"))) == [
        (10, "comment"), (11, "review_comment"), (12, "discussion_comment")]
def test_0014_forgets_the_repositories_the_inbox_last_called_private(db_url: str) -> None:
    """The data step of 0014 (review54): threads stored before the privacy check from a
    repository whose latest stored payload says `"private":true` (GitHub's compact JSON) are
    forgotten and its row marked; one called public by a later payload (made public again)
    and a public one keep their threads."""
    downgrade(db_url, "0013")
    assert "private" not in columns(db_url, "repositories")

    def payload(repo: str, private: bool) -> str:
        return json.dumps({"action": "opened", "repository": {
            "id": len(repo), "full_name": repo, "private": private}, "issue": {"number": 1}},
            separators=(",", ":"))

    deliveries = [("o/secret", True), ("o/again", True), ("o/again", False), ("o/open", False)]
    for k, (repo, private) in enumerate(deliveries):
        asyncio.run(_execute(db_url, "INSERT INTO deliveries (delivery_id, event, action, repo, "
                                     "payload, status, attempts, received_at) VALUES "
                                     f"('d{k}', 'issues', 'opened', '{repo}', "
                                     # (text(): a colon escaped is no bind parameter)
                                     f"'{payload(repo, private)}', 'done', 1, CURRENT_TIMESTAMP)"
                                     .replace(":", "\\:")))
    for repo in ("o/secret", "o/again", "o/open"):
        asyncio.run(_execute(db_url, "INSERT INTO threads (repo, number, kind, title, labels, "
                                     "assignees, complete, muted, state, stored_at) VALUES "
                                     f"('{repo}', 1, 'issue', 't', '[]', '[]', true, false, "
                                     "'open', CURRENT_TIMESTAMP)"))
    migrate.upgrade(db_url)
    assert sorted(r[0] for r in asyncio.run(_execute(db_url, "SELECT repo FROM threads"))) == [
        "o/again", "o/open"]
    assert asyncio.run(_execute(
        db_url, "SELECT full_name FROM repositories WHERE private")) == [("o/secret",)]
    assert schema_differences(db_url) == []


def test_0015_comment_minimized_goes_down_and_up(db_url: str) -> None:
    """Why GitHub hides a comment (review 59): dropped on the way down, empty again on the way
    up (the next sync fills it); the comments are kept."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, labels, "
                                 "assignees, complete, muted, stored_at) VALUES (1, 'o/r', 1, 'issue', "
                                 "'t', 'open', '[]', '[]', true, false, CURRENT_TIMESTAMP)"))
    asyncio.run(_execute(db_url, "INSERT INTO comments (id, thread_id, kind, github_id, body, "
                                 "minimized_reason) VALUES (5, 1, 'comment', 9, 'spam', 'spam')"))
    downgrade(db_url, "0014")
    assert "minimized_reason" not in columns(db_url, "comments")
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT id, body, minimized_reason FROM comments")) == [
        (5, "spam", None)]
    assert schema_differences(db_url) == []


def test_0022_first_repo_and_state_change_time_go_down_and_up(db_url: str) -> None:
    """feedids65: a thread's first name (its feed entry's id) is dropped on the way down and
    filled with its repository's name on the way up, so no stored thread's id changes; the
    time of a review-state change is dropped and comes back empty (as first stored). The
    threads' expression indexes stay (SQLite drops the column in place, no table copy)."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, labels, "
                                 "assignees, complete, muted, stored_at, first_repo) VALUES (1, "
                                 "'o/renamed', 1, 'issue', 't', 'open', '[]', '[]', true, false, "
                                 "CURRENT_TIMESTAMP, 'o/first')"))
    asyncio.run(_execute(db_url, "INSERT INTO analyses (id, thread_id, analyzer_version, result, "
                                 "is_failure_report, is_proposal, review_state, methods, arxiv_ids, "
                                 "analyzed_at, review_state_changed_at) VALUES (3, 1, 'v', '{}', "
                                 "false, true, 'lapsed', '[]', '[]', CURRENT_TIMESTAMP, "
                                 "CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0021")
    assert "first_repo" not in columns(db_url, "threads")
    assert "review_state_changed_at" not in columns(db_url, "analyses")
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT id, repo, first_repo FROM threads")) == [
        (1, "o/renamed", "o/renamed")]
    assert asyncio.run(_execute(
        db_url, "SELECT id, review_state, review_state_changed_at FROM analyses")) == [
        (3, "lapsed", None)]
    assert schema_differences(db_url) == []


def test_0023_first_number_and_first_repo_id_go_down_and_up(db_url: str) -> None:
    """left66: a thread's first number (its feed entry's id with `first_repo`, kept through a
    transfer) and the id of a reused name's repository are dropped on the way down (0022's
    index on `first_repo, number` back) and come back on the way up, the number filled from
    the thread's own (no stored id changes), the repository's id empty."""
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, labels, "
                                 "assignees, complete, muted, stored_at, first_repo, first_number, "
                                 "first_repo_id) VALUES (1, 'o/moved', 7, 'issue', 't', 'open', "
                                 "'[]', '[]', true, false, CURRENT_TIMESTAMP, 'o/first', 3, 99)"))
    downgrade(db_url, "0022")
    assert {"first_number", "first_repo_id"} & set(columns(db_url, "threads")) == set()
    assert "ix_threads_first_repo_number" in indexes(db_url, "threads")
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(
        db_url, "SELECT id, first_repo, first_number, first_repo_id FROM threads")) == [
        (1, "o/moved", 7, None)]  # (0022's id of a thread transferred to 7, review66)
    assert schema_differences(db_url) == []


def test_0023_downgrade_leaves_no_two_threads_one_entry_id(db_url: str) -> None:
    """review66: 0022's feed entry id is `/threads/{first_repo}/{number}`, and before 0023 a
    transfer set `first_repo` to the new repository. Going down, 0023 dropped `first_number`
    and left a transferred thread's `first_repo` at its former repository beside its new
    number: o/a#5 moved to o/b#9 took o/a#9's entry id (one id, two entries in a reader) and
    0022's `find_thread` fell back to it for o/a#9. The downgrade gives such a thread the id
    0022 gave it (its new place); a thread whose number did not change keeps its own."""
    rows = ("(1, 'o/a', 9, 'o/a', 9), (2, 'o/b', 9, 'o/a', 5), (3, 'o/c', 4, 'o/old', 4)")
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, first_repo, first_number, "
                                 "kind, title, state, labels, assignees, complete, muted, stored_at) "
                                 "SELECT v.*, 'issue', 't', 'open', '[]', '[]', true, false, "
                                 f"CURRENT_TIMESTAMP FROM (VALUES {rows}) AS v"))
    downgrade(db_url, "0022")
    entry_ids = asyncio.run(_execute(
        db_url, "SELECT id, coalesce(first_repo, repo), number FROM threads ORDER BY id"))
    assert entry_ids == [(1, "o/a", 9), (2, "o/b", 9), (3, "o/old", 4)]
    migrate.upgrade(db_url)
    assert schema_differences(db_url) == []
