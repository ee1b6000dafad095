"""GET /api/*, /healthz and /metrics through aiohttp's test client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.config import Settings
from bot.context import AppContext
from bot.store.models import Action, Analysis, Delivery
from bot.store.threads import upsert_comment, upsert_thread
from bot.webhooks.replay import delivery_headers

ANALYSIS = {
    "id": "Org/Repo#7",
    "failure": {"is_failure_report": True, "category": "entropy_collapse",
                "categories": ["entropy_collapse"], "confidence": 0.9},
    "papers": [],
    "proposal": {"is_proposal": False, "confidence": 0.1},
    "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
}


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def seed(ctx: AppContext) -> None:
    async with ctx.sessionmaker() as s:
        thread = await upsert_thread(s, {
            "repo": "Org/Repo", "number": 7, "kind": "issue", "title": "Entropy <b>drops</b>",
            "body": "entropy collapsed", "author": "alice", "state": "open",
            "labels": ["bug"], "created_at": "2026-01-02T03:04:05Z",
        })
        await upsert_comment(s, thread, {"github_id": 11, "kind": "comment", "author": "bob",
                                         "body": "same here", "created_at": "2026-01-03T00:00:00Z"})
        await upsert_comment(s, thread, {"github_id": 12, "kind": "review", "author": "carol",
                                         "body": "lgtm", "created_at": "2026-01-04T00:00:00Z"})
        s.add(Analysis(thread_id=thread.id, analyzer_version="t1", result=ANALYSIS))
        s.add_all([
            Action(repo="Org/Repo", number=7, kind="failure_comment", status="dry_run",
                   body="would post", dedupe_key="failure:Org/Repo#7"),
            Action(repo="Org/Repo", number=8, kind="failure_comment", status="skipped",
                   reason="paused"),
            Action(repo="Other/Repo", number=1, kind="report", status="posted", body="r"),
        ])
        for n, status in enumerate(["pending", "processing", "done", "done", "failed"]):
            s.add(Delivery(delivery_id=f"d{n}", event="issues", payload="{}", status=status))
        await s.commit()


async def test_thread_api_shape(client: TestClient, ctx: AppContext) -> None:
    await seed(ctx)
    resp = await client.get("/api/threads/Org/Repo/7")
    assert resp.status == 200
    data = await resp.json()
    # the analyzer's own analysis; the finding the tracker shows and a person's verdict (none)
    # and its review history (history75: none for a thread stored with no proposal's state)
    assert set(data) == {"thread", "analysis", "failure", "verdict", "review_history",
                         "review_history_total", "comments_total"}
    # (left78: the history is paged; bounds79: the comments too)
    assert data["comments_total"] == 2
    assert data["verdict"] is None and data["failure"]["set_by"] is None
    assert data["review_history"] == [] and data["review_history_total"] == 0
    thread = data["thread"]
    assert thread["id"] == "Org/Repo#7" and thread["kind"] == "issue"
    assert thread["title"] == "Entropy <b>drops</b>"  # JSON, not HTML: stored text as is
    assert [c["author"] for c in thread["comments"]] == ["bob", "carol"]
    assert [c["kind"] for c in thread["comments"]] == ["comment", "review"]
    assert thread["created_at"] == "2026-01-02T03:04:05Z"
    assert data["analysis"] == ANALYSIS
    # repository names are matched without case, as GitHub does
    assert (await client.get("/api/threads/org/repo/7")).status == 200


@pytest.mark.parametrize("path", ["/api/threads/Org/Repo/99", "/api/threads/No/Such/1",
                                  "/api/threads/Org/Repo/abc"])
async def test_thread_api_404(client: TestClient, ctx: AppContext, path: str) -> None:
    await seed(ctx)
    resp = await client.get(path)
    assert resp.status == 404
    assert "error" in await resp.json()


async def test_thread_without_analysis(client: TestClient, ctx: AppContext) -> None:
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": "a/b", "number": 1, "kind": "discussion", "title": "t",
                                "body": None, "state": "open"})
        await s.commit()
    data = await (await client.get("/api/threads/a/b/1")).json()
    assert data["analysis"] is None and data["thread"]["comments"] == []


async def test_actions_api_lists_and_filters(client: TestClient, ctx: AppContext) -> None:
    await seed(ctx)
    everything = await (await client.get("/api/actions")).json()
    assert len(everything) == 3
    keys = {"repo", "number", "kind", "status", "body", "created_at", "reason"}
    assert all(set(a) == keys for a in everything)
    org = await (await client.get("/api/actions", params={"repo": "org/repo"})).json()
    assert [(a["number"], a["status"]) for a in org] == [(7, "dry_run"), (8, "skipped")]
    one = await (await client.get("/api/actions",
                                  params={"repo": "Org/Repo", "number": "8"})).json()
    assert one == [{**one[0], "kind": "failure_comment", "status": "skipped", "reason": "paused",
                    "body": None}]
    assert one[0]["created_at"].endswith("Z")
    assert (await client.get("/api/actions", params={"number": "x"})).status == 400


async def test_actions_api_lists_only_the_statuses_the_contract_names(client: TestClient,
                                                                     ctx: AppContext) -> None:
    """An action still `pending` (a claim being posted, or one a crash left for its lease to
    run out) is not yet something the app did: the contract's list is posted, dry_run, failed
    and skipped, and a consumer reading it met "pending" and its X-Total-Count."""
    async with ctx.sessionmaker() as s:
        s.add_all([Action(repo="Org/Repo", number=1, kind="failure_comment", status="pending"),
                   Action(repo="Org/Repo", number=2, kind="failure_comment", status="posted",
                          body="b")])
        await s.commit()
    for params in ({}, {"repo": "Org/Repo"}, {"repo": "Org/Repo", "number": "1"}):
        answer = await client.get("/api/actions", params=params)
        listed = await answer.json()
        assert {a["status"] for a in listed} <= {"posted", "dry_run", "failed", "skipped"}
        assert answer.headers["X-Total-Count"] == str(len(listed))
    assert [a["number"] for a in await (await client.get("/api/actions")).json()] == [2]


async def test_actions_api_reaches_the_newest_past_the_first_page(client: TestClient,
                                                                    ctx: AppContext) -> None:
    """Oldest first, 1,000 by default: the total says there are more, and `offset` reaches the
    newest (a skipped decision per new issue fills the first 1,000 within months)."""
    async with ctx.sessionmaker() as s:
        s.add_all([Action(repo="Org/Repo", number=n, kind="failure_comment", status="skipped",
                          reason="not a training-failure report") for n in range(1, 1006)])
        await s.commit()
    first = await client.get("/api/actions")
    assert first.headers["X-Total-Count"] == "1005" and len(await first.json()) == 1000
    rest = await client.get("/api/actions", params={"offset": "1000"})
    assert [a["number"] for a in await rest.json()] == [1001, 1002, 1003, 1004, 1005]
    one = await client.get("/api/actions", params={"number": "1005"})
    assert one.headers["X-Total-Count"] == "1"
    assert (await client.get("/api/actions", params={"offset": "-1"})).status == 400


@pytest.mark.parametrize("query", ["limit=0", "limit=-1", "limit=x", "limit=1.5", "limit=%C2%B2",
                                   "offset=-1", "offset=x", "limit=0&offset=3"])
async def test_every_api_list_refuses_the_same_paging_values_alike(client: TestClient,
                                                                   query: str) -> None:
    """/api/actions read limit=0 (and -1's absence of rows) as 1 where /api/proposals answered
    400: both read `limit` and `offset` through one rule (api_paging), the same 400 and message."""
    answers = {}
    for route in ("/api/actions", "/api/proposals"):
        resp = await client.get(f"{route}?{query}")
        assert resp.status == 400, (route, query)
        answers[route] = (await resp.json())["error"]
    assert answers["/api/actions"].startswith("limit must be a whole number from 1 (at most 5,000")
    assert answers["/api/proposals"].startswith("limit must be a whole number from 1 (at most 2,000")
    assert answers["/api/actions"].endswith("offset one from 0")
    assert answers["/api/proposals"].endswith("offset one from 0")


async def test_api_lists_take_limit_from_1_and_cap_it(client: TestClient, ctx: AppContext) -> None:
    await seed(ctx)
    one = await client.get("/api/actions", params={"limit": "1", "offset": "1"})
    assert one.status == 200 and one.headers["X-Total-Count"] == "3"
    assert len(await one.json()) == 1
    for route in ("/api/actions", "/api/proposals"):
        big = await client.get(route, params={"limit": "999999999"})  # above the cap: the cap
        assert big.status == 200, route
    assert len(await (await client.get("/api/actions", params={"limit": "999999999"})).json()) == 3
    # A limit of ten digits or more is above the cap as well: the cap, not a 400 saying it
    # is not a whole number from 1.
    for route in ("/api/actions", "/api/proposals"):
        bigger = await client.get(route, params={"limit": "1" + "0" * 20})
        assert bigger.status == 200, route
        assert bigger.headers["X-Total-Count"] == (await client.get(route)).headers["X-Total-Count"]
    assert len(await (await client.get("/api/actions", params={"limit": "99999999999"})).json()) == 3
    assert len(await (await client.get("/api/actions", params={"limit": "0000000001"})).json()) == 1


async def test_stats_api(client: TestClient, ctx: AppContext) -> None:
    await seed(ctx)
    data = await (await client.get("/api/stats")).json()
    assert data == {
        "deliveries": {"received": 5, "done": 2, "failed": 1, "pending": 2},
        "threads": 1,
        "comments": 2,
    }


async def test_healthz_ok(client: TestClient) -> None:
    resp = await client.get("/healthz")
    assert resp.status == 200
    assert await resp.json() == {"status": "ok", "database": "ok", "deliveries_failed": 0}


@pytest.mark.parametrize("url_kind", ["sqlite", "postgres"])
async def test_healthz_503_when_database_unreachable(tmp_path: Path, url_kind: str) -> None:
    url = (f"sqlite+aiosqlite:///{tmp_path}/missing/dir/x.db" if url_kind == "sqlite"
           else "postgresql+asyncpg://nobody:nothing@127.0.0.1:1/none")
    bad = AppContext.create(Settings.from_env({}, database_url=url, webhook_secret="s"))
    try:
        async with TestClient(TestServer(create_app(bad, worker=False))) as c:
            resp = await c.get("/healthz")
            assert resp.status == 503
            assert (await resp.json())["database"] != "ok"
            # the webhook endpoint says so too instead of pretending it stored the delivery
            body = b'{"zen": "z"}'
            resp = await c.post("/webhook", data=body, headers=delivery_headers("ping", body, "s"))
            assert resp.status == 503
            metrics = await (await c.get("/metrics")).text()
            assert "rltracker_database_up 0" in metrics
    finally:
        await bad.close()


async def test_metrics_exposition(client: TestClient, ctx: AppContext) -> None:
    body = b'{"zen": "z"}'
    assert (await client.post("/webhook", data=body,
                              headers=delivery_headers("ping", body, "test-secret"))).status == 202
    assert (await client.post("/webhook", data=body, headers={"X-GitHub-Event": "ping"})
            ).status == 401
    resp = await client.get("/metrics")
    assert resp.status == 200 and resp.content_type == "text/plain"
    text = await resp.text()
    assert 'rltracker_webhook_responses_total{code="202"} 1' in text
    assert 'rltracker_webhook_responses_total{code="401"} 1' in text
    assert 'rltracker_webhook_deliveries_total{event="ping"} 1' in text
    assert 'rltracker_inbox_deliveries{status="pending"} 1' in text
    assert "rltracker_webhook_duration_seconds_count 2" in text
    assert 'rltracker_webhook_duration_seconds_bucket{le="+Inf"} 2' in text
    assert "rltracker_database_up 1" in text
    for line in text.splitlines():  # every sample line is "name{labels} value"
        if not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            assert name and float(value) >= 0


async def test_former_repository_name_finds_the_thread(client: TestClient, ctx: AppContext
                                                       ) -> None:
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": "verl-project/verl", "number": 5, "kind": "issue",
                                "title": "t", "body": "b", "state": "open"})
        s.add(Action(repo="verl-project/verl", number=5, kind="failure_comment",
                     status="dry_run", body="x"))
        await s.commit()
    resp = await client.get("/api/threads/volcengine/verl/5")
    assert resp.status == 200
    assert (await resp.json())["thread"]["repo"] == "verl-project/verl"
    actions = await (await client.get("/api/actions", params={"repo": "volcengine/verl"})).json()
    assert [a["number"] for a in actions] == [5]


async def test_a_thread_stored_under_the_former_name_is_found_by_the_current_one(
        client: TestClient, ctx: AppContext) -> None:
    """A thread delivered before verl's rename is stored under volcengine/verl (its rows are
    moved only by a rename event the app receives). Asked for by the name the site and GitHub
    use now, /api/threads/verl-project/verl/6 and /threads/verl-project/verl/6 answered 404;
    the other way round (the old name for a thread stored under the new) already worked."""
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": "volcengine/verl", "number": 6, "kind": "issue",
                                "title": "Old thread", "body": "b", "state": "open"})
        await s.commit()
    resp = await client.get("/api/threads/verl-project/verl/6")
    assert resp.status == 200
    assert (await resp.json())["thread"]["repo"] == "volcengine/verl"
    async with ctx.sessionmaker() as s:
        s.add(Action(repo="volcengine/verl", number=6, kind="failure_comment",
                     status="dry_run", body="x"))
        await s.commit()
    actions = await (await client.get("/api/actions", params={"repo": "verl-project/verl"})).json()
    assert [a["number"] for a in actions] == [6]
    page = await client.get("/threads/verl-project/verl/6")
    assert page.status == 200 and "Old thread" in await page.text()
    assert (await client.get("/threads/verl-project/verl/7")).status == 404


async def test_undated_proposals_are_listed_last_on_both_databases(client: TestClient,
                                                                   ctx: AppContext) -> None:
    """Newest first, a proposal of no known opening time (a thread stored from a comment
    alone) came first on PostgreSQL (NULLs first in a descending order) and last on SQLite:
    it is last on both, and ties stay in one order across pages."""
    async with ctx.sessionmaker() as s:
        for number, created in [(1, "2026-01-01T00:00:00Z"), (2, None), (3, "2026-02-02T00:00:00Z"),
                                (4, "2026-02-02T00:00:00Z")]:
            thread = await upsert_thread(s, {"repo": "huggingface/trl", "number": number,
                                             "kind": "issue", "title": f"Add method {number}",
                                             "state": "open", "created_at": created})
            s.add(Analysis(thread_id=thread.id, analyzer_version="t", result=ANALYSIS,
                           is_proposal=True, review_state="open_no_reply"))
        await s.commit()
    whole = [p["number"] for p in await (await client.get("/api/proposals")).json()]
    assert whole == [4, 3, 1, 2]
    paged = []
    for offset in range(4):
        page = await client.get("/api/proposals", params={"limit": "1", "offset": str(offset)})
        paged += [p["number"] for p in await page.json()]
    assert paged == whole
    html = await (await client.get("/proposals")).text()
    assert html.index("Add method 1") < html.index("Add method 2")


@pytest.mark.parametrize("repo", ["verl", "https://github.com/huggingface/trl", "a/b/c", "trl/"])
async def test_an_action_filter_that_is_no_repository_is_a_400(client: TestClient,
                                                               ctx: AppContext, repo: str) -> None:
    """`/api/actions?repo=verl` (a framework, a URL, a path) answered an empty list, 200, as if
    the repository had no action: it is a 400 saying the filter is OWNER/NAME."""
    await seed(ctx)
    resp = await client.get("/api/actions", params={"repo": repo})
    assert resp.status == 400
    assert (await resp.json())["error"].startswith("repo must be OWNER/NAME")
    assert (await client.get("/api/actions", params={"repo": "No/Such"})).headers[
        "X-Total-Count"] == "0"


async def test_api_answers_carry_an_etag_and_a_304_when_unchanged(client: TestClient,
                                                                   ctx: AppContext) -> None:
    """No /api/ answer had a validator: a script polling /api/actions or /api/proposals got
    the whole body each time. Each JSON answer carries an ETag of its bytes (and no-cache:
    ask again, revalidating); If-None-Match with it is a 304 without a body until the answer
    changes. Errors carry none."""
    await seed(ctx)
    for path in ("/api/actions", "/api/methods", "/api/threads/Org/Repo/7", "/api/proposals",
                 "/api/stats"):
        first = await client.get(path)
        tag = first.headers.get("ETag")
        assert first.status == 200 and tag and tag.startswith('"'), path
        assert first.headers["Cache-Control"] == "no-cache"
        again = await client.get(path, headers={"If-None-Match": tag})
        assert again.status == 304 and await again.read() == b"", path
        assert again.headers["ETag"] == tag
        assert (await client.get(path, headers={"If-None-Match": f'W/{tag}, "other"'})).status == 304
        assert (await client.get(path, headers={"If-None-Match": '"other"'})).status == 200
    tag = (await client.get("/api/actions")).headers["ETag"]
    async with ctx.sessionmaker() as s:
        s.add(Action(repo="Org/Repo", number=9, kind="failure_comment", status="skipped",
                     reason="not a training-failure report"))
        await s.commit()
    changed = await client.get("/api/actions", headers={"If-None-Match": tag})
    assert changed.status == 200 and changed.headers["ETag"] != tag
    missing = await client.get("/api/threads/Org/Repo/99")
    assert missing.status == 404 and "ETag" not in missing.headers


@pytest.mark.parametrize("offset", ["9" * 10, "9" * 12, "1" + "0" * 40])
async def test_an_offset_of_ten_digits_or_more_is_past_every_row(client: TestClient,
                                                               ctx: AppContext, offset: str) -> None:
    """offset=999999999999 answered 400 "offset one from 0", a whole number from 0 told it is
    not one, where offset=999999999 was an empty page: past every row, an empty page (200, the
    X-Total-Count of them all), on every paged list, as a limit that long is the cap."""
    await seed(ctx)
    for route in ("/api/actions", "/api/proposals", "/api/export.json"):
        resp = await client.get(route, params={"offset": offset})
        assert resp.status == 200, route
        body = await resp.json()
        assert (body["threads"] if route.endswith(".json") else body) == [], route
        assert resp.headers["X-Total-Count"] == (await client.get(route)).headers["X-Total-Count"]
