"""POST /webhook through aiohttp's test client, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from gidgethub import sansio
from sqlalchemy import func, select

from bot.app import create_app
from bot.context import AppContext
from bot.store.models import Delivery
from bot.webhooks.replay import delivery_headers, sign

SECRET = "test-secret"


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    app = create_app(ctx, worker=False)
    async with TestClient(TestServer(app)) as c:
        yield c


async def delivery_count(ctx: AppContext) -> int:
    async with ctx.sessionmaker() as s:
        return int(await s.scalar(select(func.count()).select_from(Delivery)) or 0)


async def post(client: TestClient, event: str, body: bytes, delivery: str | None = None,
               **extra_headers: str) -> tuple[int, dict]:
    headers = delivery_headers(event, body, SECRET, delivery)
    headers.update(extra_headers)
    resp = await client.post("/webhook", data=body, headers=headers)
    return resp.status, await resp.json()


def fixture_files(shared_dir: Path) -> list[Path]:
    root = shared_dir / "fixtures" / "webhooks"
    return sorted(p for p in root.rglob("*.json"))


async def test_every_shared_payload_is_accepted(client: TestClient, ctx: AppContext,
                                                shared_dir: Path) -> None:
    files = fixture_files(shared_dir)
    assert len(files) >= 99
    for path in files:
        status, body = await post(client, path.parent.name, path.read_bytes())
        assert status == 202, (path, body)
    assert await delivery_count(ctx) == len(files)
    async with ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Delivery).order_by(Delivery.id)))
    assert [r.event for r in rows] == [p.parent.name for p in files]
    opened = next(r for r, p in zip(rows, files, strict=True) if p.name == "opened.json"
                  and p.parent.name == "issues")
    assert opened.action == "opened" and opened.repo == "Codertocat/Hello-World"
    assert opened.status == "pending" and opened.attempts == 0
    from datetime import timedelta

    from bot.store.types import utcnow

    # the same column formats whichever writer stored it (SQLite writes through sqlite3)
    assert utcnow() - timedelta(minutes=5) < opened.received_at <= utcnow()
    assert opened.installation_id is None and opened.next_attempt_at is None
    assert json.loads(opened.payload)["issue"]["number"] == 1


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no signature at all
        {"X-Hub-Signature-256": "sha256=" + "0" * 64},  # wrong
        {"X-Hub-Signature-256": "garbage"},  # no prefix
    ],
    ids=["missing", "wrong", "malformed"],
)
async def test_bad_signatures_get_401_and_store_nothing(client: TestClient, ctx: AppContext,
                                                        headers: dict[str, str]) -> None:
    body = b'{"action": "opened"}'
    h = {"Content-Type": "application/json", "X-GitHub-Event": "issues",
         "X-GitHub-Delivery": str(uuid.uuid4()), **headers}
    resp = await client.post("/webhook", data=body, headers=h)
    assert resp.status == 401
    assert await delivery_count(ctx) == 0


async def test_sha1_only_signature_is_refused(client: TestClient, ctx: AppContext) -> None:
    body = b'{"action": "opened"}'
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    h = {"Content-Type": "application/json", "X-GitHub-Event": "issues",
         "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature": sha1}
    resp = await client.post("/webhook", data=body, headers=h)
    assert resp.status == 401
    # a valid SHA-1 value put into the SHA-256 header is refused too
    h["X-Hub-Signature-256"] = sha1
    resp = await client.post("/webhook", data=body, headers=h)
    assert resp.status == 401
    assert await delivery_count(ctx) == 0


async def test_signature_of_other_body_is_refused(client: TestClient, ctx: AppContext) -> None:
    body = b'{"action": "opened"}'
    headers = delivery_headers("issues", body, SECRET)
    resp = await client.post("/webhook", data=body + b" ", headers=headers)
    assert resp.status == 401
    assert await delivery_count(ctx) == 0


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2, 3]", b'"a string"', b"null", b"{\"unterminated\": ", b"\xff\xfe{}", b""],
    ids=["text", "array", "string", "null", "truncated", "bad-utf8", "empty"],
)
async def test_malformed_bodies_get_400(client: TestClient, ctx: AppContext, body: bytes) -> None:
    status, _ = await post(client, "issues", body)
    assert status == 400
    assert await delivery_count(ctx) == 0


async def test_missing_event_or_delivery_header_gets_400(client: TestClient, ctx: AppContext
                                                         ) -> None:
    body = b'{"zen": "ok"}'
    headers = delivery_headers("ping", body, SECRET)
    del headers["X-GitHub-Delivery"]
    assert (await client.post("/webhook", data=body, headers=headers)).status == 400
    headers = delivery_headers("ping", body, SECRET)
    del headers["X-GitHub-Event"]
    assert (await client.post("/webhook", data=body, headers=headers)).status == 400
    assert await delivery_count(ctx) == 0


async def test_oversize_body_gets_413(client: TestClient, ctx: AppContext) -> None:
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    status, _ = await post(client, "issues", body)
    assert status == 413
    assert await delivery_count(ctx) == 0


async def test_body_just_under_limit_is_accepted(client: TestClient, ctx: AppContext) -> None:
    pad = 25 * 1024 * 1024 - 64
    body = b'{"pad": "' + b"x" * pad + b'"}'
    status, _ = await post(client, "issues", body)
    assert status == 202


async def test_repeated_delivery_id_gets_200_and_no_second_row(client: TestClient,
                                                              ctx: AppContext) -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    delivery = str(uuid.uuid4())
    assert (await post(client, "ping", body, delivery))[0] == 202
    status, answer = await post(client, "ping", body, delivery)
    assert status == 200 and answer["status"] == "duplicate"
    assert await delivery_count(ctx) == 1


async def test_concurrent_repeats_in_one_batch_store_one_row(client: TestClient,
                                                             ctx: AppContext) -> None:
    import asyncio

    body = b'{"zen": "x"}'
    delivery = str(uuid.uuid4())
    statuses = await asyncio.gather(*(post(client, "ping", body, delivery) for _ in range(20)))
    codes = sorted(s for s, _ in statuses)
    assert codes.count(202) == 1 and codes.count(200) == 19
    assert await delivery_count(ctx) == 1


async def test_failed_delivery_is_requeued_on_redelivery(client: TestClient,
                                                         ctx: AppContext) -> None:
    body = b'{"zen": "x"}'
    delivery = str(uuid.uuid4())
    assert (await post(client, "ping", body, delivery))[0] == 202
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
        row.status, row.attempts, row.last_error = "failed", 5, "boom"
        await s.commit()
    status, answer = await post(client, "ping", body, delivery)
    assert status == 202 and answer["status"] == "requeued"
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
    assert (row.status, row.attempts) == ("pending", 0)
    assert await delivery_count(ctx) == 1
    # a done delivery stays done
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
        row.status = "done"
        await s.commit()
    assert (await post(client, "ping", body, delivery))[0] == 200


async def test_form_encoded_body_is_accepted(client: TestClient, ctx: AppContext) -> None:
    payload = json.dumps({"action": "opened", "repository": {"full_name": "o/r"}})
    body = urllib.parse.urlencode({"payload": payload}).encode()
    headers = delivery_headers("issues", body, SECRET)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    resp = await client.post("/webhook", data=body, headers=headers)
    assert resp.status == 202
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
    assert row.repo == "o/r" and json.loads(row.payload)["action"] == "opened"
    # form without payload= is malformed
    body = b"other=1"
    headers = delivery_headers("issues", body, SECRET)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    assert (await client.post("/webhook", data=body, headers=headers)).status == 400


async def test_nul_in_the_indexed_fields_is_stored_not_refused(client: TestClient,
                                                               ctx: AppContext) -> None:
    """U+0000 in `action` or `repository.full_name` (PostgreSQL text refuses it): the delivery
    is stored with U+FFFD in those columns and its payload as sent, not answered 503 and lost."""
    payload = {"action": "opened\u0000", "repository": {"full_name": "o/r\u0000x"}}
    status, _ = await post(client, "issues", json.dumps(payload).encode())
    assert status == 202
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
    assert (row.action, row.repo) == ("opened\ufffd", "o/r\ufffdx")
    assert json.loads(row.payload) == payload


async def test_unknown_event_is_stored(client: TestClient, ctx: AppContext) -> None:
    status, _ = await post(client, "some_future_event", b'{"action": "happened"}')
    assert status == 202
    assert await delivery_count(ctx) == 1


def _vector_rows(text: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in text.splitlines():
        m = re.match(r"\|[^|]*\| `([^`]+)` \| `([^`]+)` \([^|]*\) \| `(sha256=[0-9a-f]{64})`[^|]* \|", line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


def test_signature_test_vector_verifies(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures" / "webhooks" / "SIGNATURE_TEST_VECTOR.md").read_text()
    assert "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" in text
    secret, payload = "It's a Secret to Everybody", b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(secret, payload) == expected
    sansio.validate_event(payload, signature=expected, secret=secret)
    rows = _vector_rows(text)
    assert len(rows) >= 3
    for secret, payload_text, header in rows:
        body = payload_text.encode().replace(b"\\\\", b"\\")
        if sign(secret, body) != header:  # markdown shows some payloads escaped; try raw
            body = payload_text.encode()
        assert sign(secret, body) == header, (secret, payload_text)


async def test_documented_vector_through_http(ctx: AppContext, shared_dir: Path) -> None:
    """GitHub's vector, end to end: a service keyed with that secret accepts the signature
    (and then rejects the body as not JSON, 400 rather than 401)."""
    import dataclasses

    ctx.settings = dataclasses.replace(ctx.settings, webhook_secret="It's a Secret to Everybody")
    app = create_app(ctx, worker=False)
    async with TestClient(TestServer(app)) as c:
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256":
                "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        }
        resp = await c.post("/webhook", data=b"Hello, World!", headers=headers)
        assert resp.status == 400
        headers["X-Hub-Signature-256"] = headers["X-Hub-Signature-256"][:-1] + "8"
        resp = await c.post("/webhook", data=b"Hello, World!", headers=headers)
        assert resp.status == 401


async def test_concurrent_requests_share_commits(client: TestClient, ctx: AppContext) -> None:
    """Group commit: 64 concurrent deliveries are stored in fewer transactions than rows,
    and each answer comes after the commit holding its row."""
    import asyncio

    from bot.context import INBOX

    inbox = client.app[INBOX]
    before = inbox.commits
    bodies = [json.dumps({"n": n}).encode() for n in range(64)]
    results = await asyncio.gather(*(post(client, "ping", b) for b in bodies))
    assert all(status == 202 for status, _ in results)
    assert await delivery_count(ctx) == 64
    assert inbox.commits - before < 64
    assert inbox.rows_committed == 64


async def test_one_bad_row_does_not_fail_its_batch(ctx: AppContext) -> None:
    import asyncio

    from bot.webhooks.inbox import STORED, Inbox, InboxRow

    inbox = Inbox(ctx.engine)
    inbox.start()
    rows = [InboxRow(delivery_id=f"ok-{n}", event="ping", action=None, repo=None,
                     installation_id=None, payload="{}") for n in range(9)]
    # PostgreSQL enforces VARCHAR(64) on the event name; SQLite does not
    rows.insert(4, InboxRow(delivery_id="bad", event="e" * 100, action=None, repo=None,
                            installation_id=None, payload="{}"))
    try:
        results = await asyncio.gather(*(inbox.submit(r) for r in rows), return_exceptions=True)
    finally:
        await inbox.close()
    good = [r for row, r in zip(rows, results, strict=True) if row.delivery_id != "bad"]
    assert good == [STORED] * 9
    bad = results[4]
    if ctx.engine.dialect.name == "postgresql":
        assert isinstance(bad, Exception)
        assert await delivery_count(ctx) == 9
    else:
        assert bad == STORED


async def test_insert_race_with_another_replica_is_a_duplicate(ctx: AppContext) -> None:
    """The id another replica stored between our SELECT and INSERT: ON CONFLICT DO NOTHING
    skips it, RETURNING tells which rows went in, and the batch still commits."""
    from bot.webhooks.inbox import InboxRow, _insert_ignoring_duplicates

    def row(d: str) -> dict:
        return InboxRow(delivery_id=d, event="ping", action=None, repo=None,
                        installation_id=None, payload="{}").values()

    async with ctx.engine.begin() as conn:
        await conn.execute(_insert_ignoring_duplicates(conn.dialect.name), [row("taken")])
    async with ctx.engine.begin() as conn:
        result = await conn.execute(_insert_ignoring_duplicates(conn.dialect.name),
                                    [row("new-1"), row("taken"), row("new-2")])
        assert sorted(result.scalars().all()) == ["new-1", "new-2"]
    assert await delivery_count(ctx) == 3


async def test_sqlite_group_commit_waits_out_another_writer(sqlite_db_url: str) -> None:
    """The SQLite writer does not use SQLite's busy handler (busy_timeout=0 on its
    connection): while another process holds the write lock its BEGIN IMMEDIATE is tried
    again, and the row is stored once the lock is released, not refused."""
    import asyncio
    import sqlite3

    from bot.store.db import make_engine
    from bot.webhooks.inbox import STORED, Inbox, InboxRow

    engine = make_engine(sqlite_db_url)
    inbox = Inbox(engine)
    inbox.start()
    other = sqlite3.connect(engine.url.database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a worker's write transaction
    try:
        task = asyncio.ensure_future(inbox.submit(InboxRow(
            delivery_id="waited", event="ping", action=None, repo=None, installation_id=None,
            payload="{}")))
        done, _ = await asyncio.wait({task}, timeout=0.3)  # room to try (and fail) to begin
        assert not done  # neither stored while the lock is held nor given up
        other.execute("COMMIT")
        assert await task == STORED
    finally:
        other.close()
        await inbox.close()
        await engine.dispose()
    check = sqlite3.connect(engine.url.database)
    assert check.execute("SELECT status FROM deliveries WHERE delivery_id = 'waited'"
                         ).fetchall() == [("pending",)]
    check.close()


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000,
                                  b'{"a": ' * 100_000 + b"1" + b"}" * 100_000],
                         ids=["arrays", "objects"])
async def test_json_nested_too_deeply_gets_400_not_500(client: TestClient, ctx: AppContext,
                                                       body: bytes) -> None:
    """Python's decoder gives up past about a thousand levels with RecursionError, which the
    endpoint did not catch: aiohttp answered a text 500."""
    status, answer = await post(client, "issues", body)
    assert (status, answer["error"]) == (400, "body is not a JSON payload: nested too deeply")
    assert await delivery_count(ctx) == 0


async def test_fields_no_column_can_hold_are_stored_not_refused(client: TestClient,
                                                                ctx: AppContext) -> None:
    """A lone surrogate (valid JSON as "\\ud800", not encodable as UTF-8) in `action` or the
    repository name, an installation id beyond 64 bits: the row could not be stored, and the
    delivery was answered 503 ("could not store") and lost. Stored now, the payload as sent."""
    body = (b'{"action": "opened\\ud800", "repository": {"full_name": "o/\\udc00r"}, '
            b'"installation": {"id": 99999999999999999999999}}')
    status, _ = await post(client, "issues", body)
    assert status == 202
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
    assert (row.action, row.repo, row.installation_id) == ("opened\ufffd", "o/\ufffdr", None)
    assert row.payload == body.decode()


@pytest.mark.parametrize("written", ["test-secret\n", "test-secret\r\n"], ids=["lf", "crlf"])
async def test_secret_read_from_a_file_with_its_newline_still_verifies(
        db_url: str, written: str) -> None:
    """GITHUB_WEBHOOK_SECRET filled from a file (a Kubernetes/Docker secret written with `echo`)
    ends in a newline GitHub's single-line secret field cannot hold: every delivery was refused
    401 while the secret was right."""
    from bot.config import Settings

    settings = Settings.from_env({"GITHUB_WEBHOOK_SECRET": written, "DATABASE_URL": db_url})
    assert settings.webhook_secret == "test-secret"
    ctx = AppContext.create(settings)
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
            status, _ = await post(c, "ping", b'{"zen": "ok"}')
        assert status == 202
    finally:
        await ctx.close()


async def test_during_a_secret_rotation_either_secret_is_accepted(db_url: str) -> None:
    """Rotating the webhook secret had a window where deliveries were lost: from the moment
    GitHub signs with the new secret until every replica runs with it (or the other way
    round), each delivery was refused 401, and GitHub does not retry a 401. With
    GITHUB_WEBHOOK_SECRET_PREVIOUS set to the old secret, a delivery signed with either is
    accepted; anything else is still refused, and without it only the current one counts."""
    from bot.config import Settings

    old, new = "old-secret-0123", "new-secret-4567\n"  # filled from a file, as the current one
    env = {"DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": new,
           "GITHUB_WEBHOOK_SECRET_PREVIOUS": old}
    settings = Settings.from_env(env)
    ctx = AppContext.create(settings)
    body = b'{"zen": "rotate"}'
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
            for secret, status in ((new.strip(), 202), (old, 202), ("neither-of-them", 401)):
                resp = await c.post("/webhook", data=body,
                                    headers=delivery_headers("ping", body, secret, None))
                assert resp.status == status, (secret, await resp.text())
        assert await delivery_count(ctx) == 2
    finally:
        await ctx.close()
    from bot.logs import JsonFormatter, register_settings_secrets

    register_settings_secrets(settings)  # as `serve` and each worker process do
    record = logging.LogRecord("t", logging.WARNING, "t", 0, "secret was %s", (old,), None)
    assert old not in JsonFormatter().format(record)
    alone = AppContext.create(Settings.from_env({**env, "GITHUB_WEBHOOK_SECRET_PREVIOUS": ""}))
    try:
        async with TestClient(TestServer(create_app(alone, worker=False))) as c:
            resp = await c.post("/webhook", data=body, headers=delivery_headers("ping", body, old, None))
            assert resp.status == 401
    finally:
        await alone.close()


async def test_a_failed_store_logs_no_payload(ctx: AppContext, caplog: pytest.LogCaptureFixture
                                              ) -> None:
    """When the inbox cannot store a row, the log says why, not what the delivery held: the
    database error's text carried the statement's parameters, i.e. payloads (private
    repositories' issues and comments) went into the logs."""
    import asyncio

    from bot.webhooks.inbox import Inbox, InboxRow

    marker = "private-issue-body-7f3a"
    inbox = Inbox(ctx.engine)
    inbox.start()
    rows = [InboxRow(delivery_id=f"d-{n}", event="e" * 100 if n == 1 else "ping", action=None,
                     repo=None, installation_id=None, payload=json.dumps({"body": marker}))
            for n in range(3)]
    # an installation id the column cannot hold makes the row fail on both databases
    rows.append(InboxRow(delivery_id="big", event="ping", action=None, repo=None,
                         installation_id=2**70, payload=json.dumps({"body": marker})))
    try:
        await asyncio.gather(*(inbox.submit(r) for r in rows), return_exceptions=True)
    finally:
        await inbox.close()
    assert inbox.errors  # a store failed and was logged
    text = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "inbox" in text
    assert marker not in text


def github_that_logs_the_token(settings: Any) -> Any:
    """A `make_github` for worker_process_main: logs the credentials it was given, then
    stops the process (what a client's log line quoting a failed request could hold)."""
    import logging

    logging.getLogger("bot.github.client").warning(
        "request failed: Authorization: token %s; secret %s", settings.token,
        settings.webhook_secret)
    raise SystemExit(3)


def test_worker_processes_scrub_secrets_from_their_logs(settings: Any) -> None:
    """`serve --workers N` spawns worker processes that configure logging themselves; the
    secrets were registered in the web process only, so a worker's log lines printed the
    token and the webhook secret."""
    import dataclasses
    import os
    import subprocess
    import sys

    token = "ghp_" + "k" * 36
    worker_settings = dataclasses.replace(settings, token=token,
                                          webhook_secret="whsec-0123456789")
    code = ("import pickle, sys; from bot.webhooks.worker import worker_process_main; "
            "from tests.test_webhook import github_that_logs_the_token; "
            "worker_process_main(pickle.loads(sys.stdin.buffer.read()), "
            "github_that_logs_the_token)")
    import pickle

    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(worker_settings),
                          capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    err = done.stderr.decode()
    assert done.returncode == 3, err
    assert "request failed" in err
    assert token not in err and "whsec-0123456789" not in err


async def _raw_post(client: TestClient, headers: list[bytes], body: bytes) -> int:
    """POST /webhook over a plain socket: header bytes as given (clients refuse to send some)."""
    import asyncio

    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    lines = [b"POST /webhook HTTP/1.1", b"Host: localhost", b"Connection: close",
             b"Content-Type: application/json", b"Content-Length: %d" % len(body), *headers]
    writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    return int(status_line.split()[1])


@pytest.mark.parametrize("signature", ["sha256=" + "é" * 64, "sha256=" + "0" * 63 + "é"],
                         ids=["all", "last"])
async def test_non_ascii_signature_is_401_not_500(client: TestClient, ctx: AppContext,
                                                  signature: str) -> None:
    """hmac.compare_digest refuses non-ASCII text with TypeError: an unsigned request with
    such a header was answered 500 (a traceback in the logs per request)."""
    body = b'{"zen": "ok"}'
    status = await _raw_post(client, [b"X-GitHub-Event: ping", b"X-GitHub-Delivery: d-1",
                                      b"X-Hub-Signature-256: " + signature.encode()], body)
    assert status == 401
    assert await delivery_count(ctx) == 0


async def test_unsigned_headers_cannot_forge_or_colour_log_lines(client: TestClient,
                                                                 ctx: AppContext) -> None:
    """Header text of a refused (unsigned) request reaches the delivery log line. JSON escaped
    C0 controls but wrote C1 ones as they came: U+0085 (NEL) and U+2028 end a line for
    Python's splitlines and many log viewers (a forged second record), U+009B is a terminal's
    CSI (colours, cursor moves)."""
    import io
    import logging

    from bot.logs import DELIVERY_LOGGER, JsonFormatter

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(DELIVERY_LOGGER)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        forged = b'{"level": "info", "msg": "delivery done"}'
        status = await _raw_post(client, [
            b"X-GitHub-Event: ping\xc2\x9b31mred\xe2\x80\xa9" + forged,
            b"X-GitHub-Delivery: d\xc2\x85" + forged.replace(b" ", b""),
            b"X-Hub-Signature-256: sha256=00"], b"{}")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert status == 401
    out = buf.getvalue()
    lines = out.splitlines()
    assert len(lines) == 1, lines
    record = json.loads(lines[0])
    assert record["outcome"] == "rejected_401"
    assert record["delivery"].startswith("d\x85")  # the value is kept, only written escaped
    assert not any("\x7f" <= ch <= "\x9f" or ch in "\u2028\u2029" for ch in out)


async def test_a_handler_database_error_logs_no_thread_text(
        ctx: AppContext, caplog: pytest.LogCaptureFixture) -> None:
    """A handler's database error is logged by the worker without SQLAlchemy's parameters
    (the issue title and body it was storing went into the log line, 500 characters of them);
    the stored last_error keeps the whole text for `rltracker deliveries`."""
    import logging

    from gidgethub.routing import Router

    from bot.store.models import Thread
    from bot.webhooks.worker import Worker
    from tests.test_worker import no_wait, rows_by_id, store

    marker = "private-title-c41b"
    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx: Any) -> None:
        async with ctx.sessionmaker() as s:
            s.add(Thread(repo=None, number=1, kind="issue", title=event.data["title"],
                         body=event.data["title"]))
            await s.commit()  # NOT NULL: repo

    ids = await store(ctx, ("test", json.dumps({"title": marker})),
                      ("test", json.dumps({"title": marker})))
    caplog.set_level(logging.INFO)
    worker = Worker(ctx, router, backoff=no_wait, max_attempts=1, batch_size=2)
    await worker.run_until_idle()
    rows = await rows_by_id(ctx)
    assert all(rows[d].status == "failed" for d in ids)
    assert "IntegrityError" in rows[ids[0]].last_error
    logged = [(r.getMessage(), r.__dict__.get("error")) for r in caplog.records]
    assert any(e and "IntegrityError" in e for _, e in logged), logged
    assert marker not in repr(logged)
