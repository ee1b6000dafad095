"""Conditional GET over real HTTP (aiohttp's test server) on SQLite and PostgreSQL: the Atom
feeds, the pages, the JSON API, the exports, /healthz and /metrics as a feed reader, a
browser, a proxy and a monitoring probe ask for them (RFC 9110 section 13, RFC 9111).

Each whole answer of GET and HEAD carries an ETag of its bytes and a Cache-Control saying
how long it may be kept; If-None-Match (weak comparison, `*`, lists) answers 304 without a
body; If-Modified-Since is read only where the answer has a Last-Modified (the reports feed)
and only when there is no If-None-Match; /healthz and /metrics are never stored."""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime as http_date
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from sqlalchemy import select

from bot.store.models import Report
from tests.test_feeds import T0, add, client_for, seed

FEEDS = ["/reports/feed.atom", "/proposals.atom", "/proposals.atom?framework=verl&state=open_no_reply",
         "/failures/entropy_collapse.atom"]
PAGES = ["/", "/proposals", "/failures/entropy_collapse", "/reports/", "/frameworks/verl"]


async def _reports(ctx: Any, *days: int) -> None:
    async with ctx.sessionmaker() as session, session.begin():
        for day in days:
            session.add(Report(date=(T0 + timedelta(days=day)).date().isoformat(), markdown="",
                               created_at=T0 + timedelta(days=day, hours=3),
                               data={"baseline": False, "totals": {}, "new_landings": 0}))


@pytest.fixture
async def client(ctx: Any) -> Any:
    await seed(ctx)
    await _reports(ctx, 1, 2)
    client = await client_for(ctx)
    yield client
    await client.close()


async def _304(client: TestClient, path: str, method: str = "GET", **headers: str) -> Any:
    resp = await client.request(method, path, headers=headers, allow_redirects=False)
    body = await resp.read()
    assert resp.status == 304, (path, method, headers, resp.status)
    assert body == b"" and resp.headers.get("Content-Length", "0") == "0"
    return resp


@pytest.mark.parametrize("path", FEEDS + PAGES)
async def test_feeds_and_pages_answer_304_to_their_etag(client: TestClient, path: str) -> None:
    """A feed reader polled every feed all day and got the whole document each time: the
    feeds and pages had no validator. Each carries an ETag and a short max-age; the ETag sent
    back (as it is, weak, in a list, or `*`) is a 304 without a body, for GET and HEAD."""
    first = await client.get(path)
    body = await first.read()
    tag = first.headers.get("ETag")
    assert first.status == 200 and body and tag and tag.startswith('"'), (path, first.status)
    assert first.headers["Cache-Control"] == "max-age=60"
    head = await client.head(path)
    assert head.status == 200 and head.headers["ETag"] == tag and await head.read() == b""
    for sent in (tag, f"W/{tag}", f'"other", {tag}', "*"):
        again = await _304(client, path, **{"If-None-Match": sent})
        assert again.headers["ETag"] == tag and again.headers["Cache-Control"] == "max-age=60"
    await _304(client, path, "HEAD", **{"If-None-Match": tag})
    assert (await client.get(path, headers={"If-None-Match": '"other"'})).status == 200


async def test_a_changed_feed_has_another_etag(client: TestClient, ctx: Any) -> None:
    tags = {p: (await client.get(p)).headers["ETag"] for p in FEEDS}
    await add(ctx, "verl-project/verl", 31, "Support DAPO", days=20, proposal=True)
    await add(ctx, "THUDM/slime", 32, "Entropy gone at step 10", days=20, failure="entropy_collapse")
    await _reports(ctx, 3)
    for path, tag in tags.items():
        changed = await client.get(path, headers={"If-None-Match": tag})
        assert changed.status == 200 and changed.headers["ETag"] != tag, path


async def test_the_reports_feed_has_a_last_modified_and_if_modified_since(client: TestClient,
                                                                          ctx: Any) -> None:
    """The reports feed's date is known (the newest report's storing; a report built again
    moves it): Last-Modified, and If-Modified-Since at or after it is a 304. If-None-Match,
    when sent, decides alone (RFC 9110 13.2.2)."""
    first = await client.get("/reports/feed.atom")
    stored = T0 + timedelta(days=2, hours=3)
    assert first.headers["Last-Modified"] == http_date(stored, usegmt=True)
    await _304(client, "/reports/feed.atom", **{"If-Modified-Since": http_date(stored, usegmt=True)})
    await _304(client, "/reports/feed.atom", "HEAD",
               **{"If-Modified-Since": http_date(stored + timedelta(days=1), usegmt=True)})
    earlier = http_date(stored - timedelta(seconds=1), usegmt=True)
    assert (await client.get("/reports/feed.atom", headers={"If-Modified-Since": earlier})).status == 200
    # If-None-Match wins: a tag that does not match is a 200 whatever the date says, a tag
    # that matches a 304 whatever the date says
    later = http_date(stored + timedelta(days=1), usegmt=True)
    assert (await client.get("/reports/feed.atom", headers={
        "If-None-Match": '"other"', "If-Modified-Since": later})).status == 200
    await _304(client, "/reports/feed.atom", **{"If-None-Match": first.headers["ETag"],
                                                "If-Modified-Since": earlier})
    # A date that is no HTTP date is ignored (a 200), not an error
    assert (await client.get("/reports/feed.atom", headers={"If-Modified-Since": "yesterday"})).status == 200
    await _reports(ctx, 5)  # stored after `later`
    assert (await client.get("/reports/feed.atom", headers={"If-Modified-Since": later})).status == 200


@pytest.mark.parametrize("path", ["/proposals.atom", "/failures/entropy_collapse.atom", "/proposals"])
async def test_thread_feeds_and_pages_say_no_date_they_cannot_keep(client: TestClient, ctx: Any,
                                                                   path: str) -> None:
    """A thread list's newest date does not move when an old thread joins it (a person's
    verdict puts a report of last year into a kind's feed; a re-analysis changes a state):
    as a Last-Modified, If-Modified-Since would keep the old list. They carry none, and a
    date alone is answered in full."""
    first = await client.get(path)
    assert "Last-Modified" not in first.headers
    far = http_date(T0 + timedelta(days=3650), usegmt=True)
    assert (await client.get(path, headers={"If-Modified-Since": far})).status == 200


@pytest.mark.parametrize("path", ["/api/proposals", "/api/methods", "/api/stats"])
async def test_the_api_keeps_its_etag_and_no_cache(client: TestClient, path: str) -> None:
    first = await client.get(path)
    assert first.headers["Cache-Control"] == "no-cache" and first.headers["ETag"].startswith('"')
    await _304(client, path, **{"If-None-Match": first.headers["ETag"]})
    await _304(client, path, "HEAD", **{"If-None-Match": first.headers["ETag"]})


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
async def test_health_and_metrics_are_never_stored(client: TestClient, path: str) -> None:
    """A proxy or a probe that kept /healthz or /metrics would report a state that is gone:
    `no-store`, no validator, and a condition sent is answered in full."""
    first = await client.get(path)
    assert first.status == 200 and first.headers["Cache-Control"] == "no-store"
    assert "ETag" not in first.headers and "Last-Modified" not in first.headers
    again = await client.get(path, headers={"If-None-Match": "*",
                                            "If-Modified-Since": http_date(T0, usegmt=True)})
    assert again.status == 200 and await again.read()


@pytest.mark.parametrize("path", ["/api/export.json", "/api/export.csv"])
async def test_exports_are_whole_to_a_range_and_revalidated(client: TestClient, path: str) -> None:
    """The exports are streamed as they are read: a Range (a download manager resuming) is
    answered with the whole export (200), and `Accept-Ranges: none` says so before it asks;
    `no-cache` (no validator: a stamp of every table they read would be needed)."""
    whole = await client.get(path)
    body = await whole.read()
    assert whole.status == 200 and whole.headers["Accept-Ranges"] == "none"
    assert whole.headers["Cache-Control"] == "no-cache"
    ranged = await client.get(path, headers={"Range": "bytes=10-20"})
    assert ranged.status == 200 and "Content-Range" not in ranged.headers
    assert len(await ranged.read()) >= len(body) - 64  # (the JSON's generated_at may tick)
    head = await client.head(path)
    assert head.status == 200 and head.headers["Accept-Ranges"] == "none" and await head.read() == b""


@pytest.mark.parametrize("path", ["/proposals.atom", "/proposals", "/api/proposals", "/api/export.csv"])
async def test_a_compressed_answer_varies_by_accept_encoding(client: TestClient, path: str) -> None:
    """Whatever is compressed says `Vary: Accept-Encoding` (a shared cache would give gzip to
    a client that cannot read it otherwise); the ETag of an answer is the same however it
    is asked for when it is sent as it is."""
    plain = await client.get(path, headers={"Accept-Encoding": "identity"})
    gzip = await client.get(path, headers={"Accept-Encoding": "gzip"})
    for resp in (plain, gzip):
        if resp.headers.get("Content-Encoding", "identity") != "identity":
            assert "accept-encoding" in resp.headers.get("Vary", "").lower(), path
    if "Content-Encoding" not in gzip.headers:
        assert plain.headers.get("ETag") == gzip.headers.get("ETag")


async def test_a_304_is_only_for_a_success(client: TestClient) -> None:
    """Errors and redirects are answered as they are, whatever the condition."""
    missing = await client.get("/failures/no_such_kind.atom", headers={"If-None-Match": "*"})
    assert missing.status == 404 and "ETag" not in missing.headers
    moved = await client.get("/failures/Entropy-Collapse.atom", headers={"If-None-Match": "*"},
                             allow_redirects=False)
    assert moved.status == 301
    bad = await client.get("/proposals.atom?state=nope", headers={"If-None-Match": "*"})
    assert bad.status == 400


async def test_a_304_sends_no_body_on_the_wire(client: TestClient) -> None:
    """What aiohttp's client reads of a 304 is empty whatever follows it; on the connection
    itself, nothing follows the headers (a proxy would take stray bytes for the next answer)."""
    import asyncio

    tag = (await client.get("/proposals.atom")).headers["ETag"]
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(f"GET /proposals.atom HTTP/1.1\r\nHost: x\r\nIf-None-Match: {tag}\r\n"
                     "Connection: close\r\n\r\n".encode())
        await writer.drain()
        raw = await reader.read()  # to the server's close
    finally:
        writer.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 304 ") and rest == b""
    assert b"transfer-encoding" not in head.lower()


# bounds79: every GET route's validator, and what each write must move. The JSON API and the
# pages carry an ETag of their bytes (so a tag cannot outlive a change of what is served);
# only the exports, streamed, carry none (docs/site.md, "Review bounds79", says why no cheap
# correct one exists for them).
CHANGED_BY_A_WRITE = ["/api/threads/huggingface/trl/14", "/threads/huggingface/trl/14",
                      "/api/actions?repo=huggingface/trl&number=14", "/api/stats",
                      "/api/failures/entropy_collapse", "/api/proposals"]


@pytest.mark.parametrize("path", CHANGED_BY_A_WRITE)
async def test_a_write_after_the_first_get_changes_the_etag(client: TestClient, ctx: Any,
                                                            path: str) -> None:
    """A 304 never hides a change: the tag of the first GET, sent back after a comment, an
    action, a verdict and a new proposal were stored, is answered in full with another tag."""
    from bot.store.models import Action, Thread
    from bot.store.threads import upsert_comment
    from bot.store.verdicts import set_verdict

    first = await client.get(path)
    tag = first.headers["ETag"]
    await _304(client, path, **{"If-None-Match": tag})
    async with ctx.sessionmaker() as session, session.begin():
        thread = await session.scalar(select(Thread).where(Thread.number == 14))
        assert thread is not None
        await upsert_comment(session, thread, {"github_id": 9014, "kind": "comment",
                                               "author": "bob", "body": "same here",
                                               "created_at": "2026-01-20T00:00:00Z"})
        session.add(Action(repo="huggingface/trl", number=14, kind="failure_comment",
                           status="dry_run", body="would post"))
        await set_verdict(session, thread, is_failure_report=True, category="kl_growth",
                          login="maintainer", role="maintainer", comment_id=1, given_at=T0)
    await add(ctx, "huggingface/trl", 17, "Support DAPO", days=8, proposal=True)
    changed = await client.get(path, headers={"If-None-Match": tag})
    assert changed.status == 200 and changed.headers["ETag"] != tag, path


@pytest.mark.parametrize("path", ["/api/export.json", "/api/export.csv",
                                  "/api/export.csv?limit=2"])
async def test_an_export_has_no_validator_to_keep(client: TestClient, path: str) -> None:
    """The exports carry no ETag or Last-Modified, so no condition can keep a stale one: a
    tag or a date sent is answered in full."""
    first = await client.get(path)
    assert "ETag" not in first.headers and "Last-Modified" not in first.headers
    again = await client.get(path, headers={"If-None-Match": '"x"',
                                            "If-Modified-Since": http_date(T0, usegmt=True)})
    assert again.status == 200 and await again.read()
