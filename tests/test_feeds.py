"""The Atom feeds (bot/site/feeds.py) over real HTTP on SQLite and PostgreSQL, with short
threads written for the project: each feed parsed by xml.etree and held to RFC 4287's
required elements; ids built from the configured public URL (the same on every run and
database); the proposals feed filtered by the page's own parser (a bad value the page's 400)
and listing the page's threads; the failure feed the page's threads of that kind (an unknown
kind the page's 404); a hostile title escaped and cleaned; a repository made private gone;
HEAD; an empty feed still valid; and the pages linking their feed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select, update

from bot.store.models import Analysis, Report
from bot.store.threads import upsert_thread
from tests.test_private_repos import _repository_event, dispatch_all

A = "{http://www.w3.org/2005/Atom}"
BASE = "http://localhost:8000"  # Settings.public_url when nothing sets it (the tests' settings)
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
# What a hand-made or replayed record could hold: markup closing the element, a CDATA end,
# a direction override, a NUL and a noncharacter XML refuses.
HOSTILE = "</title><script>alert(1)</script> ]]> \u202eevil\x00 & \uffff end"
SECRET = "someorg/secret-feed"  # a repository that will be made private


async def add(ctx: Any, repo: str, number: int, title: str, *, days: int, active: int | None = None,
              kind: str = "issue", proposal: bool = False, state: str = "open_no_reply",
              failure: str | None = None) -> None:
    """A thread opened `days` after T0 (last active `active` days after T0) and its analysis."""
    record = {"repo": repo, "number": number, "kind": kind, "title": title, "state": "open",
              "created_at": (T0 + timedelta(days=days)).isoformat(),
              "updated_at": (T0 + timedelta(days=active if active is not None else days)).isoformat()}
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, record)
        session.add(Analysis(
            thread_id=thread.id, analyzer_version="test", is_failure_report=failure is not None,
            failure_category=failure, is_proposal=proposal, review_state=state if proposal else None,
            methods=[], arxiv_ids=[],
            result={"failure": {"is_failure_report": failure is not None, "category": failure,
                                "confidence": 0.9 if failure else 0.1},
                    "proposal": {"is_proposal": proposal}, "review": {"state": state}}))


async def seed(ctx: Any) -> None:
    await add(ctx, "verl-project/verl", 11, "Support GSPO in the PPO trainer", days=1, active=9,
              proposal=True, state="open_replied")
    await add(ctx, "verl-project/verl", 12, HOSTILE, days=3, kind="pull_request", proposal=True)
    await add(ctx, "huggingface/trl", 13, "Add CISPO loss", days=5, active=6, proposal=True,
              state="declined")
    await add(ctx, "huggingface/trl", 14, "Entropy falls to zero by step 300", days=2,
              failure="entropy_collapse")
    await add(ctx, "THUDM/slime", 15, "Entropy collapses with lr 1e-5", days=4,
              failure="entropy_collapse")
    await add(ctx, "THUDM/slime", 16, "KL keeps growing", days=7, failure="kl_growth")


async def client_for(ctx: Any) -> TestClient:
    from bot.app import create_app

    client = TestClient(TestServer(create_app(ctx, worker=False)))
    await client.start_server()
    return client


async def fetch(client: TestClient, path: str, status: int = 200) -> str:
    resp = await client.get(path, allow_redirects=False)
    assert resp.status == status, (path, resp.status, await resp.text())
    if status == 200:
        assert resp.headers["Content-Type"] == "application/atom+xml; charset=utf-8"
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    return await resp.text()


def _time(value: str | None) -> datetime:
    assert value and RFC3339.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _one(parent: ET.Element, name: str) -> ET.Element:
    found = parent.findall(A + name)
    assert len(found) == 1, (name, len(found))
    return found[0]


def parse_feed(body: str, feed_id: str) -> list[dict[str, Any]]:
    """The feed checked against RFC 4287's required elements (feed: id, title, updated, an
    author, a self link; entry: id, title, updated, an alternate link), its entries read."""
    root = ET.fromstring(body.encode("utf-8"))
    assert root.tag == A + "feed"
    assert _one(root, "id").text == feed_id
    assert (_one(root, "title").text or "").strip()
    feed_updated = _time(_one(root, "updated").text)
    assert (_one(_one(root, "author"), "name").text or "").strip()
    links = {link.get("rel"): link.get("href") for link in root.findall(A + "link")}
    assert links["self"] == feed_id and links["alternate"].startswith(BASE + "/")
    entries = []
    for entry in root.findall(A + "entry"):
        alternate = [link for link in entry.findall(A + "link") if link.get("rel") == "alternate"]
        assert len(alternate) == 1 and alternate[0].get("href", "").startswith(BASE + "/")
        related = [link.get("href") for link in entry.findall(A + "link") if link.get("rel") == "related"]
        updated = _time(_one(entry, "updated").text)
        assert updated <= feed_updated
        published = entry.findall(A + "published")
        entries.append({"id": _one(entry, "id").text, "title": _one(entry, "title").text or "",
                        "updated": _one(entry, "updated").text, "link": alternate[0].get("href"),
                        "related": related, "summary": _one(entry, "summary").text or "",
                        "published": published[0].text if published else None,
                        "terms": [c.get("term") for c in entry.findall(A + "category")]})
        if published:
            _time(published[0].text)
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)) and all(i and i.startswith(BASE + "/") for i in ids)
    return entries


async def test_proposals_feed_lists_the_pages_threads_by_activity(ctx: Any) -> None:
    await seed(ctx)
    client = await client_for(ctx)
    try:
        body = await fetch(client, "/proposals.atom")
        again = await fetch(client, "/proposals.atom")
        page = await (await client.get("/api/proposals")).json()
    finally:
        await client.close()
    assert body == again  # nothing in it depends on the moment it is asked for
    entries = parse_feed(body, f"{BASE}/proposals.atom")
    # The page's threads, the most recently active first: trl#13 (active day 6) before
    # verl#12 (opened day 3), verl#11 (opened day 1, active day 9) first.
    assert [e["id"] for e in entries] == [f"{BASE}/threads/verl-project/verl/11",
                                          f"{BASE}/threads/huggingface/trl/13",
                                          f"{BASE}/threads/verl-project/verl/12"]
    assert {e["id"] for e in entries} == {f"{BASE}/threads/{r['repo']}/{r['number']}" for r in page}
    first = entries[0]
    assert first["updated"] == "2026-11-10T09:00:00Z" and first["published"] == "2026-11-02T09:00:00Z"
    assert first["link"] == first["id"]
    assert first["related"] == ["https://github.com/verl-project/verl/issues/11"]
    assert first["title"] == "\u2068Support GSPO in the PPO trainer\u2069"
    assert first["summary"] == "verl-project/verl#11: open, replied, verl"
    assert first["terms"] == ["open_replied", "verl"]
    assert entries[2]["related"] == ["https://github.com/verl-project/verl/pull/12"]


async def test_proposals_feed_takes_the_pages_filters_and_its_400(ctx: Any) -> None:
    await seed(ctx)
    client = await client_for(ctx)
    try:
        # written as people type them: the page's parser finds verl and open_no_reply
        body = await fetch(client, "/proposals.atom?framework=VERL&state=Open-No-Reply")
        declined = await fetch(client, "/proposals.atom?state=declined")
        page = await client.get("/proposals?state=nope")
        bad = await client.get("/proposals.atom?state=nope")
        bad_text = await bad.text()
        bad_framework = await client.get("/proposals.atom?framework=nope&state=merged")
    finally:
        await client.close()
    entries = parse_feed(body, f"{BASE}/proposals.atom?framework=verl&amp;state=open_no_reply"
                         .replace("&amp;", "&"))
    assert [e["id"] for e in entries] == [f"{BASE}/threads/verl-project/verl/12"]
    root = ET.fromstring(body.encode())
    assert _one(root, "title").text == "Proposals: verl, open, no reply · rltracker"
    assert [e["id"] for e in parse_feed(declined, f"{BASE}/proposals.atom?state=declined")] == [
        f"{BASE}/threads/huggingface/trl/13"]
    # A bad value: what the page answers (400, saying which)
    assert bad.status == page.status == 400
    assert bad.content_type == "text/html" and "unknown state: nope" in bad_text
    assert bad_framework.status == 400


async def test_failure_feed_lists_the_kinds_reports_newest_first(ctx: Any) -> None:
    await seed(ctx)
    client = await client_for(ctx)
    try:
        body = await fetch(client, "/failures/entropy_collapse.atom")
        page = await (await client.get("/api/failures/entropy_collapse")).json()
        moved = await client.get("/failures/Entropy-Collapse.atom", allow_redirects=False)
        unknown = await client.get("/failures/no_such_kind.atom")
        unknown_text = await unknown.text()
        unknown_page = await client.get("/failures/no_such_kind")
        empty = await fetch(client, "/failures/moe_instability.atom")
    finally:
        await client.close()
    entries = parse_feed(body, f"{BASE}/failures/entropy_collapse.atom")
    assert [e["id"] for e in entries] == [f"{BASE}/threads/THUDM/slime/15",
                                          f"{BASE}/threads/huggingface/trl/14"]
    assert [e["id"] for e in entries] == [f"{BASE}/threads/{r['repo']}/{r['number']}"
                                          for r in page["recent_reports"]]
    assert entries[0]["updated"] == entries[0]["published"] == "2026-11-05T09:00:00Z"
    assert entries[0]["summary"] == "THUDM/slime#15: reported Entropy collapse"
    assert moved.status == 301 and moved.headers["Location"] == "/failures/entropy_collapse.atom"
    assert unknown.status == unknown_page.status == 404
    assert "No such failure kind" in unknown_text
    assert parse_feed(empty, f"{BASE}/failures/moe_instability.atom") == []


async def test_a_hostile_title_is_escaped_and_cleaned(ctx: Any) -> None:
    await seed(ctx)
    client = await client_for(ctx)
    try:
        body = await fetch(client, "/proposals.atom?framework=verl")
    finally:
        await client.close()
    assert "<script>" not in body and "</title><script>" not in body
    assert "\x00" not in body and "\u202e" not in body and "\uffff" not in body
    entries = parse_feed(body, f"{BASE}/proposals.atom?framework=verl")
    hostile = next(e for e in entries if e["id"].endswith("/verl/12"))
    # Text, as written, without the controls; isolated as a page's <title> isolates it
    # (the NUL is stored as U+FFFD, bot.store.types.storable_text; U+FFFF, which XML
    # refuses, is dropped from the feed)
    assert hostile["title"] == "\u2068</title><script>alert(1)</script> ]]> evil\ufffd &  end\u2069"


async def test_reports_feed_one_entry_per_night_with_its_counts(ctx: Any) -> None:
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Report(date="2026-11-01", markdown="", created_at=T0,
                           data={"baseline": True, "totals": {}, "new_landings": 0}))
        session.add(Report(date="2026-11-02", markdown="", created_at=T0 + timedelta(days=1),
                           data={"baseline": False, "new_landings": 1,
                                 "totals": {"new_proposals": 2, "first_replies": 0, "merged": 1}}))
        session.add(Report(date="2026-11-03", markdown="", created_at=T0 + timedelta(days=2),
                           data={"baseline": False, "new_landings": 0, "totals": {"merged": 0}}))
        for i in range(50):  # older nights: the feed keeps the newest 50
            session.add(Report(date=f"2025-01-{i % 28 + 1:02d}" if i < 28 else f"2025-02-{i - 27:02d}",
                               markdown="", created_at=T0 - timedelta(days=400 - i),
                               data={"baseline": False, "totals": {}, "new_landings": 0}))
    client = await client_for(ctx)
    try:
        body = await fetch(client, "/reports/feed.atom")
        listed = await client.get("/reports/")
        listed_text = await listed.text()
    finally:
        await client.close()
    entries = parse_feed(body, f"{BASE}/reports/feed.atom")
    assert len(entries) == 50
    night = entries[1]
    assert [e["id"] for e in entries[:3]] == [f"{BASE}/reports/2026-11-03", f"{BASE}/reports/2026-11-02",
                                             f"{BASE}/reports/2026-11-01"]
    assert night["link"] == night["id"] and night["title"] == "Proposal status, 2026-11-02"
    assert night["updated"] == "2026-11-02T09:00:00Z"
    # What the reports list says of that night, in the same words
    assert night["summary"] == "new proposals 2, merged 1, new landings 1"
    assert "new proposals 2, merged 1, new landings 1" in listed_text
    assert entries[0]["summary"] == "none" and entries[2]["summary"] == "baseline"
    root = ET.fromstring(body.encode())
    assert _one(root, "updated").text == "2026-11-03T09:00:00Z"


async def test_a_repository_made_private_leaves_every_feed(ctx: Any) -> None:
    """Its threads were in the proposals and failure feeds; `repository.privatized` (the
    webhook, `forget`) takes them out, as from the pages; a night's report stored before it
    keeps only counts, and nothing of the repository is named in the reports feed."""
    from bot.site.report import build_report, render_markdown, store_report

    await seed(ctx)
    await add(ctx, SECRET, 21, "Secret proposal of GSPO", days=8, proposal=True)
    await add(ctx, SECRET, 22, "Secret entropy collapse", days=8, failure="entropy_collapse")
    await store_report(ctx, data := await build_report(ctx), render_markdown(data, BASE))
    client = await client_for(ctx)
    try:
        before = [await fetch(client, p) for p in ("/proposals.atom", "/failures/entropy_collapse.atom")]
        assert all("secret-feed" in b for b in before)
        await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET,
                                                                is_private=True, rid=9191))
        after = [await fetch(client, p) for p in (
            "/proposals.atom", "/failures/entropy_collapse.atom", "/reports/feed.atom",
            "/proposals.atom?paper=gspo")]
    finally:
        await client.close()
    for body in after:
        assert "secret" not in body.lower()
        ET.fromstring(body.encode())
    assert len(parse_feed(after[0], f"{BASE}/proposals.atom")) == 3


async def test_head_and_empty_feeds(ctx: Any) -> None:
    """On an empty store every feed is a valid feed with no entry (updated: NEVER); HEAD
    answers GET's status and headers with no body."""
    from bot.site.feeds import NEVER

    client = await client_for(ctx)
    try:
        for path, feed_id in [("/reports/feed.atom", f"{BASE}/reports/feed.atom"),
                              ("/proposals.atom", f"{BASE}/proposals.atom"),
                              ("/failures/kl_growth.atom", f"{BASE}/failures/kl_growth.atom")]:
            body = await fetch(client, path)
            assert parse_feed(body, feed_id) == []
            assert _one(ET.fromstring(body.encode()), "updated").text == NEVER
            head = await client.head(path)
            assert head.status == 200
            assert head.headers["Content-Type"] == "application/atom+xml; charset=utf-8"
            assert await head.read() == b""
        assert (await client.head("/failures/no_such_kind.atom")).status == 404
    finally:
        await client.close()


@pytest.mark.parametrize(("page", "feed"), [
    ("/proposals?framework=verl&state=open_no_reply", "/proposals.atom?framework=verl&amp;state=open_no_reply"),
    ("/proposals", "/proposals.atom"),
    ("/failures/entropy_collapse", "/failures/entropy_collapse.atom"),
    ("/reports/", "/reports/feed.atom"),
])
async def test_each_page_with_a_feed_links_it(ctx: Any, page: str, feed: str) -> None:
    client = await client_for(ctx)
    try:
        resp = await client.get(page)
        html = await resp.text()
        followed = await fetch(client, feed.replace("&amp;", "&"))
    finally:
        await client.close()
    assert resp.status == 200
    assert '<link rel="alternate" type="application/atom+xml"' in html
    assert f'href="{feed}">' in html  # in <head>, and a visible link
    assert html.count(f'href="{feed}"') == 2
    ET.fromstring(followed.encode())


async def test_a_bad_filter_on_the_page_offers_the_feed_of_the_filters_that_apply(ctx: Any) -> None:
    """The page drops a bad value and lists what the others select (left64); the feed it
    offers is of those, never of the value it ignored."""
    client = await client_for(ctx)
    try:
        html = await (await client.get("/proposals?state=nope&framework=verl")).text()
        feed = await client.get("/proposals.atom?state=nope&framework=verl")
    finally:
        await client.close()
    feeds = re.findall(r'href="(/proposals\.atom[^"]*)"', html)
    assert feeds and set(feeds) == {"/proposals.atom?framework=verl"}
    assert "nope" not in " ".join(feeds)
    assert feed.status == 400  # the feed's own URL with the bad value is refused, as the page's


async def test_a_hostile_paper_filter_is_text_in_the_feeds_title_and_id(ctx: Any) -> None:
    """The `paper` filter is typed by anyone: the feed's title names it as the page's title
    does, and its id and links carry it encoded; the XML still parses."""
    await seed(ctx)
    client = await client_for(ctx)
    try:
        body = await fetch(client, "/proposals.atom?paper=%3C/title%3E%5D%5D%3E%26%22x")
        rtl = await fetch(client, "/proposals.atom?paper=%E2%80%AEgspo%E2%80%AC")
    finally:
        await client.close()
    assert "</title>]]>" not in body
    entries = parse_feed(body, f"{BASE}/proposals.atom?paper=%3C%2Ftitle%3E%5D%5D%3E%26%22x")
    assert entries == []
    assert _one(ET.fromstring(body.encode()), "title").text == 'Proposals: naming </title>]]>&"x · rltracker'
    assert "\u202e" not in rtl
    ET.fromstring(rtl.encode())


async def test_an_entrys_id_stays_when_its_repository_is_renamed(ctx: Any) -> None:
    """A feed reader knows an entry by its id: renamed, the repository's threads came back as
    new entries beside the old ones. Ids of unrenamed repositories stay as they were."""
    from bot.webhooks.installations import upsert_repository

    await seed(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_repository(session, "verl-project/verl", github_id=7070)
    client = await client_for(ctx)
    try:
        before = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
        await dispatch_all(ctx, "repository", _repository_event(
            "renamed", "verl-project/verl-core", is_private=False, rid=7070))
        after = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
        # the id is still a page that answers: the thread, under its new name
        page = await client.get("/threads/verl-project/verl/11", allow_redirects=False)
        page_text = await page.text()
    finally:
        await client.close()
    assert any("/verl-core/" in e["link"] for e in after)  # the rename was followed
    assert [e["id"] for e in after] == [e["id"] for e in before]
    assert f"{BASE}/threads/huggingface/trl/13" in [e["id"] for e in after]
    assert page.status == 200 and "verl-project/verl-core" in page_text


async def test_a_thread_stored_under_both_names_keeps_the_first_stored_id(ctx: Any) -> None:
    """A sync under the new name stored the thread again before the rename event came: the
    rename makes the two one (follow_rename), and the one left keeps the id of the one stored
    first, under the former name."""
    from bot.webhooks.installations import upsert_repository

    await seed(ctx)
    await add(ctx, "verl-project/verl-core", 11, "Support GSPO in the PPO trainer", days=1,
              active=10, proposal=True, state="open_replied")
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_repository(session, "verl-project/verl", github_id=7070)
    await dispatch_all(ctx, "repository", _repository_event(
        "renamed", "verl-project/verl-core", is_private=False, rid=7070))
    client = await client_for(ctx)
    try:
        entries = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
    finally:
        await client.close()
    [merged] = [e for e in entries if e["id"].endswith("/11")]
    assert merged["id"] == f"{BASE}/threads/verl-project/verl/11"
    assert merged["link"] == f"{BASE}/threads/verl-project/verl-core/11"


async def test_a_proposal_that_lapses_moves_with_its_close(ctx: Any) -> None:
    """Lapsed (analyzers/review.py) is always a close: by a bot, with a stale label, or with
    a comment saying it went stale; the analyzer reads no clock, so no proposal lapses by
    time alone. The close is GitHub activity: stored, analysed by the pipeline, the entry
    says lapsed, its `updated` is the close, and it leads the feed."""
    from bot.pipeline import analyse_and_store
    from bot.store.threads import upsert_comment

    await seed(ctx)
    closed = (T0 + timedelta(days=40)).isoformat()
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {
            "repo": "huggingface/trl", "number": 13, "state": "closed", "closed_by": "github-actions[bot]",
            "labels": ["stale"], "closed_at": closed, "updated_at": closed})
        await upsert_comment(session, thread, {
            "kind": "comment", "github_id": 4401, "author": "github-actions[bot]", "author_is_bot": True,
            "created_at": closed, "body": "This issue has been automatically closed due to inactivity."})
        await analyse_and_store(session, thread)
    client = await client_for(ctx)
    try:
        entries = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
    finally:
        await client.close()
    lapsed = entries[0]
    assert lapsed["id"] == f"{BASE}/threads/huggingface/trl/13"
    assert lapsed["updated"] == "2026-12-11T09:00:00Z" and "lapsed" in lapsed["terms"]


async def test_a_state_the_nightly_reanalysis_changes_moves_its_entry(ctx: Any) -> None:
    """The one way a proposal's state changes with no activity on GitHub: the nightly
    re-analysis under a new analyzer version (bot.scheduler.step_reanalyse) reads a close it
    had read otherwise. The entry says the new state, `updated` when the tracker recorded it
    (it stayed at the close before feedids65: a reader saw no change)."""
    from bot.scheduler import step_reanalyse

    # what an older analyzer stored: a proposal it read as closed otherwise
    closed = await _closed_proposal_read_by_an_older_analyzer(ctx, 41, "closed_other")
    await step_reanalyse(ctx)
    client = await client_for(ctx)
    try:
        entries = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
    finally:
        await client.close()
    [entry] = [e for e in entries if e["id"].endswith("/trl/41")]
    assert "lapsed" in entry["terms"]  # the new state, read by the re-analysis
    assert _time(entry["updated"]) > closed  # when the tracker recorded it, not the close


async def _closed_proposal_read_by_an_older_analyzer(ctx: Any, number: int, state: str) -> Any:
    """Proposal `number` of huggingface/trl closed by a stale bot at T0 + 10 days (before now),
    its analysis stored by an older analyzer version reading it `state`. Returns the close."""
    from bot.store.threads import upsert_comment

    closed = T0 + timedelta(days=10)
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {
            "repo": "huggingface/trl", "number": number, "kind": "issue", "title": "Add CISPO loss",
            "state": "closed", "closed_by": "github-actions[bot]", "labels": ["stale"],
            "created_at": T0.isoformat(), "closed_at": closed.isoformat(),
            "updated_at": closed.isoformat()})
        await upsert_comment(session, thread, {
            "kind": "comment", "github_id": 4400 + number, "author": "github-actions[bot]",
            "author_is_bot": True, "created_at": closed.isoformat(),
            "body": "This issue has been automatically closed due to inactivity."})
        session.add(Analysis(thread_id=thread.id, analyzer_version="2020.01.01-1",
                             is_proposal=True, review_state=state, methods=[], arxiv_ids=[],
                             result={"proposal": {"is_proposal": True}, "review": {"state": state}}))
    return closed


async def test_a_reanalysis_reading_the_same_state_leaves_its_entry(ctx: Any) -> None:
    """The nightly re-analysis under a new analyzer version rewrites every analysis (its
    `analyzed_at` moves): an entry whose state it reads as before keeps its `updated`, or
    every proposal would be new to feed readers at each release."""
    from bot.scheduler import step_reanalyse

    closed = await _closed_proposal_read_by_an_older_analyzer(ctx, 42, "lapsed")
    await step_reanalyse(ctx)
    async with ctx.sessionmaker() as session:
        version = await session.scalar(select(Analysis.analyzer_version))
    client = await client_for(ctx)
    try:
        [entry] = parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
    finally:
        await client.close()
    assert version != "2020.01.01-1"  # re-analysed
    assert "lapsed" in entry["terms"] and _time(entry["updated"]) == closed


async def test_each_analysis_write_records_a_state_change_only(ctx: Any) -> None:
    """The three ways an analysis is stored (bot.pipeline: one thread, the worker's batch
    upsert, the nightly compare-and-set) set the time of a review-state change when the state
    read is another than the stored one, and leave it when it is the same."""
    from bot.pipeline import ThreadChange, analyse_and_store, store_analysis_if, threads_changed
    from bot.store.threads import get_thread

    await _closed_proposal_read_by_an_older_analyzer(ctx, 43, "closed_other")

    async def stored() -> tuple[str | None, Any, Any]:
        async with ctx.sessionmaker() as session:
            row = (await session.execute(select(
                Analysis.review_state, Analysis.review_state_changed_at, Analysis.analyzer_version)
            )).one()
        return row.review_state, row.review_state_changed_at, row.analyzer_version

    async def set_state(state: str) -> None:
        async with ctx.sessionmaker() as session, session.begin():
            await session.execute(update(Analysis).values(review_state=state))

    assert (await stored())[:2] == ("closed_other", None)
    await threads_changed(ctx, [ThreadChange("huggingface/trl", 43, "sync")])  # the batch upsert
    state, changed, version = await stored()
    assert state == "lapsed" and changed is not None
    await threads_changed(ctx, [ThreadChange("huggingface/trl", 43, "sync")])
    assert (await stored())[1] == changed  # the same state: left
    async with ctx.sessionmaker() as session, session.begin():  # one thread (webhooks, commands)
        thread = await get_thread(session, "huggingface/trl", 43)
        assert thread is not None
        result = await analyse_and_store(session, thread)
    assert (await stored())[1] == changed
    await set_state("closed_other")
    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, "huggingface/trl", 43)
        assert thread is not None
        await analyse_and_store(session, thread)
    again = (await stored())[1]
    assert again is not None and again != changed
    async with ctx.sessionmaker() as session, session.begin():  # the nightly compare-and-set
        assert await store_analysis_if(session, thread.id, version, result)
    assert (await stored())[1] == again
    await set_state("closed_other")
    async with ctx.sessionmaker() as session, session.begin():
        assert await store_analysis_if(session, thread.id, version, result)
    last = (await stored())[1]
    assert last is not None and last != again
