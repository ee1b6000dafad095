"""The tracker site over real HTTP (aiohttp TestServer) on a seeded database, SQLite and
PostgreSQL: pages, JSON twins, filters, 404s, reception counts and the paused notice, and
hostile thread titles staying text."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from analyzers.rules import summarize_rules
from bot.store.models import (
    Action,
    Analysis,
    ContributionRules,
    Installation,
    Repository,
)
from bot.store.threads import upsert_thread

HOSTILE_TITLE = '<script>alert("t")</script><img src=x onerror=alert(1)> GSPO & "quotes"'
HOSTILE_BODY = "<iframe src=javascript:alert(2)></iframe><b>bold</b>"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
METHODS = {101: ["gspo"], 102: ["gspo"], 7: ["cispo"]}  # catalog methods each thread names


def _analysis(*, failure: str | None = None, proposal: bool = False, state: str = "open_no_reply",
              methods: list[str] | None = None, arxiv: list[str] | None = None,
              also: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "failure": {"is_failure_report": failure is not None, "category": failure,
                    "categories": [failure, *also] if failure else [], "confidence": 0.9 if failure else 0.1},
        "papers": [{"arxiv_id": a, "title": "", "method": None, "how": "arxiv_id", "score": 1.0}
                   for a in (arxiv or [])],
        "proposal": {"is_proposal": proposal, "confidence": 0.9 if proposal else 0.1},
        "review": {"state": state, "replied_from_other": False, "concerns": []},
    }


THREADS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"repo": "verl-project/verl", "number": 101, "kind": "issue", "title": "Support GSPO",
      "state": "closed", "state_reason": "completed"},
     _analysis(proposal=True, state="merged", methods=["gspo"], arxiv=["2507.18071"])),
    ({"repo": "verl-project/verl", "number": 102, "kind": "pull_request", "title": HOSTILE_TITLE,
      "body": HOSTILE_BODY, "state": "open"},
     _analysis(proposal=True, state="open_no_reply", methods=["gspo"], arxiv=["2507.18071"])),
    ({"repo": "huggingface/trl", "number": 7, "kind": "issue", "title": "Add CISPO loss",
      "state": "closed"},
     _analysis(proposal=True, state="declined", methods=["cispo"])),
    ({"repo": "huggingface/trl", "number": 8, "kind": "issue",
      "title": "Entropy collapses after 200 steps", "state": "open"},
     _analysis(failure="entropy_collapse")),
    ({"repo": "THUDM/slime", "number": 9, "kind": "issue", "title": "KL keeps growing",
      "state": "open"},
     _analysis(failure="kl_growth", also=("not_a_kind", "entropy_explosion", "collapse_or_divergence"))),
]


async def seed(ctx: Any) -> None:
    """Threads with analyses, an installed repository with posted comments (two hidden, more 👎
    than 👍, paused), and verl's contribution rules."""
    async with ctx.sessionmaker() as session, session.begin():
        for i, (record, result) in enumerate(THREADS):
            record = dict(record, created_at=(NOW - timedelta(days=i)).isoformat())
            thread = await upsert_thread(session, record)
            session.add(Analysis(
                thread_id=thread.id, analyzer_version="test", result=result,
                is_failure_report=result["failure"]["is_failure_report"],
                failure_category=result["failure"]["category"],
                is_proposal=result["proposal"]["is_proposal"],
                review_state=result["review"]["state"],
                methods=METHODS.get(record["number"], []),
                arxiv_ids=[p["arxiv_id"] for p in result["papers"]],
            ))
        session.add(Installation(id=5, account="huggingface"))
        await session.flush()
        session.add(Repository(full_name="huggingface/trl", framework="trl", installation_id=5,
                               comments_paused=True,
                               paused_reason="2 of the last 10 comments were hidden."))
        for n, (up, down, minimized, deleted) in enumerate(
            [(1, 0, False, False), (0, 2, True, False), (0, 1, False, True), (1, 0, False, False)]
        ):
            session.add(Action(repo="huggingface/trl", number=100 + n, kind="failure_comment",
                               status="posted", dedupe_key=f"fc:{n}", reactions_up=up,
                               reactions_down=down, is_minimized=minimized,
                               comment_deleted=deleted, body="…"))
        session.add(Action(repo="huggingface/trl", number=200, kind="failure_comment",
                           status="dry_run", dedupe_key="dry", body="…"))
        summary = summarize_rules({
            "CONTRIBUTING.md": "Every commit must be signed off (`git commit -s`); sign-off is "
                               "required.\n\nPlease open an issue before you start work on a "
                               "new feature.\n"}, framework="verl")
        session.add(ContributionRules(repo="verl-project/verl", files={}, summary=summary))


@pytest.fixture
async def client(ctx) -> Any:
    from bot.app import create_app

    await seed(ctx)
    app = create_app(ctx, worker=False)
    async with TestClient(TestServer(app)) as c:
        yield c


async def _text(client: TestClient, path: str, status: int = 200) -> str:
    resp = await client.get(path)
    assert resp.status == status, (path, resp.status)
    if status == 200 and resp.content_type == "text/html":
        assert "script-src" not in resp.headers["Content-Security-Policy"]
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    return await resp.text()


async def _json(client: TestClient, path: str, status: int = 200) -> Any:
    resp = await client.get(path)
    assert resp.status == status, (path, resp.status)
    return await resp.json()


async def test_index_lists_frameworks_counts_and_recent_failures(client) -> None:
    html = await _text(client, "/")
    for name in ("verl", "TRL", "OpenRLHF", "NeMo-RL", "ROLL", "slime", "AReaL"):
        assert name in html
    assert "merged: 1" in html and "declined: 1" in html and "open, no reply: 1" in html
    assert "Entropy collapses after 200 steps" in html and "KL keeps growing" in html
    assert 'href="/failures/entropy_collapse"' in html
    assert '<meta name="viewport"' in html and "<script" not in html


async def test_hostile_title_is_escaped_everywhere(client) -> None:
    for path in ("/", "/methods/gspo", "/frameworks/verl", "/proposals", "/proposals?paper=gspo"):
        html = await _text(client, path)
        assert "<script>alert" not in html and "<img src=x" not in html and "<iframe" not in html
        if path != "/":
            assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;" in html
    data = await _json(client, "/api/proposals?framework=verl&state=open_no_reply")
    assert [p["title"] for p in data] == [HOSTILE_TITLE]  # JSON keeps the text as text


async def test_method_page_papers_options_missing_cautions_threads(client) -> None:
    html = await _text(client, "/methods/clip-higher")
    assert 'href="https://arxiv.org/abs/2503.14476"' in html
    assert "actor_rollout_ref.actor.clip_ratio_high" in html  # verl's option
    assert "GRPOConfig(epsilon_high=0.28)" in html  # TRL's option
    assert 'href="/failures/entropy_collapse"' in html
    html = await _text(client, "/methods/gspo")
    assert "Support GSPO" in html
    from analyzers.catalog import load_catalog

    lacking = [fw.name for fid, fw in load_catalog().frameworks.items()
               if not load_catalog().methods["gspo"].has(fid)]
    for name in lacking:
        assert f"missing: {name} has no option for this" in html
    data = await _json(client, "/api/methods/gspo")
    assert {t["number"] for t in data["threads"]} == {101, 102}
    assert set(data["frameworks"]) == {"verl", "trl", "openrlhf", "nemo-rl", "roll", "slime", "areal"}
    methods = await _json(client, "/api/methods")
    assert any(m["id"] == "clip-higher" for m in methods)


async def test_failure_page_methods_and_reports(client) -> None:
    html = await _text(client, "/failures/entropy_collapse")
    assert 'href="/methods/clip-higher"' in html and "Entropy collapses after 200 steps" in html
    assert "KL keeps growing" not in html
    data = await _json(client, "/api/failures/entropy_collapse")
    assert any(m["id"] == "clip-higher" for m in data["methods"])
    assert [r["number"] for r in data["recent_reports"]] == [8]
    listing = await _json(client, "/api/failures")
    assert {"entropy_collapse", "kl_growth"} <= {f["key"] for f in listing}


async def test_framework_page_rules_proposals_methods_and_reception(client) -> None:
    html = await _text(client, "/frameworks/verl")
    assert "Contribution rules" in html and "<code><bdi>Signed-off-by</bdi></code>" in html
    assert "verl-recipe" in html  # verl's curated observation
    assert "merged: 1" in html and "Support GSPO" in html
    assert "Methods it has" in html and "Methods it lacks" in html
    assert "not installed" in html
    trl = await _text(client, "/frameworks/trl")
    assert "Comments paused on huggingface/trl" in trl
    assert "2 of the last 10 comments were hidden." in trl
    # No stored rules for TRL: the development snapshot (../shared) stands in when present.
    from bot.speaking.contribution import SHARED_FRAMEWORKS

    if (SHARED_FRAMEWORKS / "trl").is_dir():
        assert "From the development snapshot" in trl and "paper_index.md" in trl
    else:
        assert "Not fetched yet" in trl
    data = await _json(client, "/api/frameworks/trl")
    assert data["reception"] == [{
        "repo": "huggingface/trl", "framework": "trl", "comments_posted": 4, "thumbs_up": 2,
        "thumbs_down": 3, "hidden_or_deleted": 2, "paused": True, "suspended": False,
        "paused_reason": "2 of the last 10 comments were hidden.", "resumed_by": None, "resumed_at": None,
        "threads_stored": True, "settings_problem": None,
    }]
    assert data["proposal_counts"] == {"declined": 1}
    assert any(m["id"] == "clip-higher" for m in data["methods_present"])
    repos = await _text(client, "/repos/")
    assert "huggingface/trl" in repos and "paused" in repos
    assert (await _json(client, "/api/repos"))[0]["comments_posted"] == 4
    frameworks = await _json(client, "/api/frameworks")
    assert {f["id"] for f in frameworks} >= {"verl", "areal"}


async def test_framework_page_shows_rules_stored_by_an_older_extractor(client, ctx) -> None:
    """Stored summaries are refreshed nightly: until then a topic the extractor no longer has
    (renamed or dropped in a release) must not turn the framework page into a 500."""
    from sqlalchemy import select

    async with ctx.sessionmaker() as session, session.begin():
        row = await session.scalar(select(ContributionRules))
        summary = dict(row.summary)
        summary["facts"] = [*summary["facts"], {
            "topic": "retired_topic", "rule": "old_rule", "statement": "An `old` rule.",
            "source": "CONTRIBUTING.md", "observed": False}]
        summary["not_stated"] = ["another_retired_topic", "tests"]
        row.summary = summary
    html = await _text(client, "/frameworks/verl")
    assert "An <code><bdi>old</bdi></code> rule." in html
    assert "another retired topic" in html and "tests" in html


async def test_proposals_filters(client) -> None:
    assert len(await _json(client, "/api/proposals")) == 3
    assert [p["number"] for p in await _json(client, "/api/proposals?framework=trl")] == [7]
    assert [p["number"] for p in await _json(client, "/api/proposals?state=merged")] == [101]
    by_paper = await _json(client, "/api/proposals?paper=2507.18071")
    assert sorted(p["number"] for p in by_paper) == [101, 102]
    assert [p["number"] for p in await _json(client, "/api/proposals?paper=cispo")] == [7]
    by_link = await _json(client, "/api/proposals?paper=https://arxiv.org/abs/2507.18071v2")
    assert sorted(p["number"] for p in by_link) == [101, 102]
    assert await _json(client, "/api/proposals?paper=9999.99999") == []
    assert await _json(client, "/api/proposals?paper=%25") == []  # LIKE wildcard is literal
    html = await _text(client, "/proposals?framework=trl&state=declined")
    assert "Add CISPO loss" in html and "Support GSPO" not in html
    assert '<option value="trl" selected>' in html
    await _json(client, "/api/proposals?state=bogus", status=400)
    assert "unknown framework" in await _text(client, "/proposals?framework=nope", status=400)


async def test_a_bad_filter_is_ignored_and_named_the_others_kept(client) -> None:
    """/proposals?state=nonsense&framework=verl emptied the whole form and listed nothing
    (400, "unknown state: nonsense"): the framework, which is valid, was dropped with it. The
    valid filters apply, the bad one is named as ignored; the page stays a 400 (the URL is
    bad), the JSON API still refuses it."""
    html = await _text(client, "/proposals?state=nonsense&framework=verl", status=400)
    assert '<option value="verl" selected>' in html
    assert "Support GSPO" in html and "Add CISPO loss" not in html
    assert "nonsense" in html and "ignored" in html
    await _json(client, "/api/proposals?state=nonsense&framework=verl", status=400)


async def test_a_repository_name_as_the_framework_filter_selects_its_framework(client) -> None:
    """`framework=verl-project/verl` (the repository, as every page writes it) was "unknown
    framework" and listed nothing; it is verl's (a former name too: volcengine/verl)."""
    for typed in ("verl-project/verl", "Volcengine/Verl"):
        html = await _text(client, f"/proposals?framework={typed}")
        assert '<option value="verl" selected>' in html, typed
        assert "Support GSPO" in html and "Add CISPO loss" not in html, typed
        rows = await _json(client, f"/api/proposals?framework={typed}")
        assert sorted(p["number"] for p in rows) == [101, 102], typed
    html = await _text(client, "/proposals?framework=someone/else", status=400)
    assert "someone/else" in html and "not a tracked framework" in html


async def test_unknown_ids_are_404(client) -> None:
    for path in ("/methods/nope", "/failures/nope", "/frameworks/nope"):
        assert "Not found" in await _text(client, path, status=404)
    for path in ("/api/methods/nope", "/api/failures/nope", "/api/frameworks/nope"):
        assert "error" in await _json(client, path, status=404)


async def test_exports(client) -> None:
    data = await _json(client, "/api/export.json")
    assert [t["number"] for t in data["threads"]][:1] == [9]  # oldest first
    assert len(data["threads"]) == 5 and data["reception"][0]["repo"] == "huggingface/trl"
    resp = await client.get("/api/export.csv")
    assert resp.status == 200 and resp.content_type == "text/csv"
    rows = list(csv.DictReader(io.StringIO(await resp.text())))
    assert [r["number"] for r in rows] == ["9", "8", "7", "102", "101"]
    hostile = next(r for r in rows if r["number"] == "102")
    assert hostile["title"] == HOSTILE_TITLE and hostile["methods"] == "gspo"
    assert hostile["is_proposal"] == "true" and hostile["framework"] == "verl"


def test_code_spans_filter_escapes_everything_else() -> None:
    from bot.site.pages import code_spans

    assert str(code_spans("Run `a<b>` then <i>x</i>")) == (
        "Run <code>a&lt;b&gt;</code> then &lt;i&gt;x&lt;/i&gt;")
    assert str(code_spans("odd ` tick <b>")) == "odd ` tick &lt;b&gt;"


@pytest.mark.parametrize("typed", ["Merged", "MERGED", " merged "])
async def test_a_state_in_another_case_is_the_state(client, typed: str) -> None:
    """`?state=Merged` was a 400 naming the states; it is `merged`, on the API and the page."""
    assert [p["number"] for p in await _json(client, f"/api/proposals?state={typed}")] == [101]
    page = await client.get("/proposals", params={"state": typed})
    assert page.status == 200 and "Support GSPO" in await page.text()
    assert (await client.get("/api/proposals?state=open-no-reply")).status == 200
    assert (await client.get("/api/proposals?state=mergedx")).status == 400


@pytest.mark.parametrize(("typed", "numbers"), [("GSPO", [101, 102]), ("Gspo", [101, 102]),
                                                ("CISPO", [7])])
async def test_a_method_typed_in_another_case_filters_as_the_method(client, typed: str,
                                                                    numbers: list[int]) -> None:
    """`?paper=GSPO` (the method as its name is written, and the form's field says "arXiv id or
    method") matched on SQLite, whose LIKE ignores ASCII case, and nothing on PostgreSQL
    ("0 proposals"); it is the catalog method `gspo` on both, on the API and the page."""
    found = await _json(client, f"/api/proposals?paper={typed}")
    assert sorted(p["number"] for p in found) == numbers
    page = await _text(client, f"/proposals?paper={typed}")
    assert f"{len(numbers)} proposal" in page


async def test_a_backfill_finished_by_a_later_sync_is_no_longer_shown_as_failed(client, ctx) -> None:
    """The first backfill failed (or was stopped); the nightly sync then finished every
    repository and kind, so no start runs the backfill again. The front page kept saying
    'First backfill: failed ... the next start resumes it' for good, over a table of repositories
    all done. It is shown while something is left, not after."""
    from analyzers.catalog import load_catalog
    from bot.store.models import JobRun, SyncCursor

    async with ctx.sessionmaker() as session, session.begin():
        session.add(JobRun(name="first_backfill", outcome="failed", counts={"total": 10},
                           error="GitHub did not let this service read THUDM/slime",
                           started_at=NOW, finished_at=NOW))
        for fw in load_catalog().frameworks.values():
            for kind in ("issue", "pull_request", "discussion"):
                session.add(SyncCursor(repo=fw.repo, kind=kind, full_done=fw.id != "slime"))
    page = await _text(client, "/")
    assert "First backfill: failed" in page and "Left: THUDM/slime" in page
    async with ctx.sessionmaker() as session, session.begin():
        for cursor in await session.scalars(select(SyncCursor)):
            cursor.full_done = True
    page = await _text(client, "/")
    assert "First backfill" not in page and 'id="backfill"' not in page


async def test_every_proposals_link_of_a_framework_page_answers(client, ctx) -> None:
    """A proposal whose analysis has no review state is counted as 'unknown' on the framework
    page, and its tag linked /proposals?framework=verl&state=unknown, which answers 400
    ('unknown state: unknown'). Every link to /proposals there answers 200 (the front page
    showed the same count as a tag without a link)."""
    import re

    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {"repo": "verl-project/verl", "number": 130,
                                               "kind": "issue", "title": "Add a method",
                                               "state": "open", "created_at": NOW.isoformat()})
        session.add(Analysis(thread_id=thread.id, analyzer_version="test",
                             result={"proposal": {"is_proposal": True}}, is_proposal=True,
                             review_state=None, methods=[], arxiv_ids=[]))
    page = await _text(client, "/frameworks/verl")
    assert "unknown: 1" in page
    links = {href.replace("&amp;", "&") for href in re.findall(r'href="(/proposals\?[^"]*)"', page)}
    assert links
    for href in links:
        assert (await client.get(href)).status == 200, href


async def test_a_suspended_installation_is_not_shown_as_commenting(client, ctx) -> None:
    """A repository whose installation its owner suspended (GitHub refuses the app's tokens,
    the app answers nothing there) read 'commenting' on /repos/ and its framework page, and
    /api/repos gave nothing to tell it apart. It says suspended; lifting it brings it back."""
    import re

    async with ctx.sessionmaker() as session, session.begin():
        session.add(Installation(id=6, account="THUDM", suspended=True))
        await session.flush()
        session.add(Repository(full_name="THUDM/slime", framework="slime", installation_id=6))
    page = await _text(client, "/repos/")
    row = re.search(r"<tr><td>THUDM/slime</td>.*?</tr>", page, re.S)
    assert row is not None and "commenting" not in row.group(0) and "suspended" in row.group(0)
    assert "suspended" in (re.search(r"<tr><td>THUDM/slime</td>.*?</tr>",
                                     await _text(client, "/frameworks/slime"), re.S) or [""])[0]
    rows = {r["repo"]: r for r in await _json(client, "/api/repos")}
    assert rows["THUDM/slime"]["suspended"] is True and rows["huggingface/trl"]["suspended"] is False
    async with ctx.sessionmaker() as session, session.begin():
        (await session.get(Installation, 6)).suspended = False
    row = re.search(r"<tr><td>THUDM/slime</td>.*?</tr>", await _text(client, "/repos/"), re.S)
    assert row is not None and "commenting" in row.group(0)


async def test_the_repositories_page_without_its_slash(client) -> None:
    """The navigation's 'Repositories' is /repos/, the other pages have no slash (/proposals,
    /study, /verdicts): /repos, typed by analogy, was aiohttp's bare '404: Not Found' in plain
    text, with no way back to the site. It leads to /repos/ (the query kept)."""
    resp = await client.get("/repos?x=1", allow_redirects=False)
    assert (resp.status, resp.headers.get("Location")) == (301, "/repos/?x=1")
    assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    assert "Installed repositories" in await _text(client, "/repos")


async def test_a_known_page_with_a_trailing_slash_leads_to_the_page(client) -> None:
    """user72: /proposals/, /study/, /verdicts/, /threads/o/r/N/ answered the site's 404 while
    /repos led to /repos/ and /reports/ served: the slash-ended form of a page that exists
    leads to it (308, the query kept, a relative Location); a path that is no page with or
    without its slash stays a 404, and no path leads off the site."""
    async def answer(method: str, path: str) -> tuple[int, str | None, str]:
        """The request line sent as typed: aiohttp's client would read "//x" as a host."""
        reader, writer = await asyncio.open_connection(client.host, client.port)
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                     .encode())
        head = (await reader.read()).split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
        writer.close()
        headers = dict(line.split(": ", 1) for line in head[1:])
        return int(head[0].split()[1]), headers.get("Location"), headers.get(
            "Content-Security-Policy", "")

    for path, page in (("/proposals/?framework=trl", "/proposals?framework=trl"),
                       ("/study/", "/study"), ("/verdicts/", "/verdicts"),
                       ("/threads/huggingface/trl/200/", "/threads/huggingface/trl/200"),
                       ("//proposals/", "/proposals")):
        for method in ("GET", "HEAD"):
            status, location, policy = await answer(method, path)
            assert (status, location) == (308, page), (method, path)
            assert "default-src 'none'" in policy, path
    assert "<h1>Proposals" in await _text(client, "/proposals/")
    # The API answers its own JSON 404 naming the route meant (test_api's error table).
    api = await client.get("/api/repos/", allow_redirects=False)
    assert (api.status, api.content_type) == (404, "application/json")
    assert "did you mean /api/repos?" in (await api.json())["error"]
    for path in ("//evil.example/", "///evil.example/", "/\\evil.example/",
                 "//evil.example/proposals/", "/%2Fevil.example/", "//proposals.example/"):
        status, location, _ = await answer("GET", path)
        assert (status, location) == (404, None), path


async def test_an_api_path_with_a_trailing_slash_names_the_route_meant(client) -> None:
    """tidy75: an /api/ path written with a trailing slash keeps the API's JSON 404 (no 308:
    a script reads an error it can parse), for GET and HEAD, its query string aside; the
    message named the route meant only for a fixed path (/api/repos), not for one with a
    parameter (/api/frameworks/verl/, /api/threads/o/r/N/), which pages redirect to."""
    for path, meant in (("/api/repos/?framework=trl", "/api/repos"),
                        ("/api/frameworks/verl/", "/api/frameworks/verl"),
                        ("/api/threads/huggingface/trl/200/", "/api/threads/huggingface/trl/200"),
                        ("/api/no/such/", None), ("/api/a%3Fb%25zz/", None)):
        for method in ("GET", "HEAD"):
            resp = await client.request(method, path, allow_redirects=False)
            assert (resp.status, resp.content_type) == (404, "application/json"), (method, path)
            assert "Location" not in resp.headers
        error = (await (await client.get(path)).json())["error"]
        assert (error.endswith(f"did you mean {meant}?") if meant else "did you mean" not in error), error
    # A method the meant route does not take is still pointed at it (it is the address meant).
    resp = await client.post("/api/repos/")
    assert "did you mean /api/repos?" in (await resp.json())["error"]


async def test_a_path_of_no_page_answers_the_sites_not_found_page(client) -> None:
    """A path no route has (/threads/ is no page with or without its slash; a typo) was
    aiohttp's bare '404: Not Found' in plain text: no navigation, nothing saying which site it
    is. A browser gets the site's 'Not found' page; the API keeps its JSON error."""
    for path in ("/threads/", "/no/such/page", "/no/such/page/"):
        resp = await client.get(path)
        assert (resp.status, resp.content_type) == (404, "text/html"), path
        html = await resp.text()
        assert "<h1>Not found</h1>" in html and 'href="/proposals"' in html, path
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    resp = await client.get("/api/no-such-route")
    assert (resp.status, resp.content_type) == (404, "application/json")
    head = await client.head("/no/such/page/")
    assert head.status == 404


async def test_framework_page_says_the_rule_notes_as_the_comment_does(client, ctx) -> None:
    """rules64: the page and the rule-summary comment say the same from the same code: acronyms
    kept ("CI", "sign-off / CLA", not "ci", "sign-off / cla"), a topic with advice but no rule
    said as advice only (not "not stated" under its advice), every file a rule cites named."""
    from sqlalchemy import select

    from analyzers.rules import format_rules_markdown

    async with ctx.sessionmaker() as session, session.begin():
        row = await session.scalar(select(ContributionRules))
        summary = dict(row.summary)
        summary["facts"] = [
            {"topic": "tests", "rule": "t", "statement": "Add tests.", "strength": "rule",
             "source": "CONTRIBUTING.md", "sources": ["CONTRIBUTING.md", "docs/testing.md"],
             "observed": False},
            {"topic": "ci", "rule": "c", "statement": "Run the CI locally first.",
             "strength": "hint", "source": "AGENTS.md", "sources": ["AGENTS.md"],
             "observed": False},
        ]
        summary["not_stated"] = ["docs", "sign-off", "ci"]
        row.summary = summary
    html = await _text(client, "/frameworks/verl")
    comment = format_rules_markdown(summary, heading=False)
    notes = [line for line in comment.splitlines() if line.startswith(("Not stated", "Advice"))]
    assert notes == ["Not stated in the files read: docs, sign-off / CLA.",
                     "Advice or practice only, no rule stated: CI."]
    for note in notes:
        assert note in html, note
    assert "sign-off / cla" not in html and ", ci." not in html
    assert "docs/testing.md" in html


async def test_thread_lists_name_the_framework_as_every_other_page_does(client) -> None:
    """The thread lists' Framework column wrote the catalog id ("trl") beside the filter that
    says "TRL", the front page's "TRL" and the thread page's "framework TRL"; the link still
    goes to the id's page."""
    html = await _text(client, "/proposals")
    assert '<td><a href="/frameworks/trl">TRL</a></td>' in html
    assert '<a href="/frameworks/trl">trl</a>' not in html


async def test_methods_it_lacks_names_and_links_the_frameworks_that_have_them(client) -> None:
    """A framework page's "Methods it lacks" said where each method exists by catalog id ("in
    trl, nemo-rl, roll, areal"), unlinked, beside the "TRL", "NeMo-RL", "AReaL" every other
    page writes (the thread lists' user72 fix); each is the framework's name, linked to its page."""
    import re

    from analyzers.catalog import load_catalog

    cat = load_catalog()
    html = await _text(client, "/frameworks/verl")
    lacks = html.split("<h2>Methods it lacks</h2>", 1)[1].split("</ul>", 1)[0]
    missing = [m for m in cat.methods.values() if not m.has("verl")]
    assert missing and any(m.has(f) for m in missing for f in cat.frameworks)
    for m in missing:
        item = re.search(rf'<li><a href="/methods/{re.escape(m.id)}">.*?</li>', lacks, re.S)
        assert item is not None, m.id
        links = re.findall(r'<a href="/frameworks/([^"]+)">([^<]+)</a>', item.group(0))
        assert links == [(f, cat.frameworks[f].name) for f in cat.frameworks if m.has(f)], item.group(0)
    # The JSON keeps the ids (what an API reader filters on).
    data = await _json(client, "/api/frameworks/verl")
    assert all(set(m["elsewhere"]) <= set(cat.frameworks) for m in data["methods_missing"])


async def test_the_repositories_page_links_each_install_preview(client, ctx) -> None:
    """/repos/ listed the installed repositories without a way to their install preview
    (`/repos/{owner}/{name}/preview`, which README names beside it): a maintainer who had
    just installed the app had to know the address. A repository with stored threads links
    its preview (which answers); one with none (the preview's 404) links nothing."""
    import re

    async with ctx.sessionmaker() as session, session.begin():
        session.add(Installation(id=7, account="alibaba"))
        await session.flush()
        session.add(Repository(full_name="alibaba/ROLL", framework="roll", installation_id=7))
    page = await _text(client, "/repos/")
    trl = re.search(r"<tr><td>huggingface/trl</td>.*?</tr>", page, re.S)
    assert trl is not None and 'href="/repos/huggingface/trl/preview"' in trl.group(0), page
    roll = re.search(r"<tr><td>alibaba/ROLL</td>.*?</tr>", page, re.S)
    assert roll is not None and "/preview" not in roll.group(0)
    for path in re.findall(r'href="(/repos/[^"]+/preview)"', page):
        assert (await client.get(path)).status == 200, path
    assert (await client.get("/repos/alibaba/ROLL/preview")).status == 404
    # The framework page's reception table is the same rows.
    assert 'href="/repos/huggingface/trl/preview"' in await _text(client, "/frameworks/trl")
    # The preview page leads back to the list.
    preview = await _text(client, "/repos/huggingface/trl/preview")
    assert 'href="/repos/"' in preview


async def test_a_proposals_list_links_its_json(client) -> None:
    """/proposals offered its filtered list as an Atom feed only; its JSON twin,
    /api/proposals with the same filters (docs/site.md, "Proposals"), was nowhere linked, so
    a reader wanting the data of a filtered list took the whole export. The page links it,
    with the filters it applies (a dropped value not among them)."""
    import html as html_lib
    import re

    page = await _text(client, "/proposals?framework=VERL&state=nonsense", status=400)
    found = re.search(r'<a href="(/api/proposals[^"]*)">', page)
    assert found is not None
    api = html_lib.unescape(found.group(1))
    assert api == "/api/proposals?framework=verl", api
    resp = await client.get(api)
    assert resp.status == 200
    assert int(resp.headers["X-Total-Count"]) == 2 == len(await resp.json())
    assert 'href="/api/proposals"' in await _text(client, "/proposals")


async def test_a_filter_given_twice_is_not_read_as_its_first_value(client) -> None:
    """`/api/proposals?framework=verl&framework=trl` answered verl's proposals alone, 200, as
    if trl had not been asked (a script merging two frameworks got one); the page did the same
    without a word. Two different values of one filter are refused as any bad value is: the
    API's 400 says so, the page names them beside the field and applies the other filters;
    the same value twice is that value."""
    data = await _json(client, "/api/proposals?framework=verl&framework=trl", status=400)
    assert "verl" in data["error"] and "trl" in data["error"], data
    html = await _text(client, "/proposals?framework=verl&framework=trl&state=declined", status=400)
    assert 'id="ignored-framework"' in html and "ignored" in html
    assert "Add CISPO loss" in html and "Support GSPO" not in html  # the state still applies
    await _json(client, "/api/proposals?state=merged&state=declined", status=400)
    await _json(client, "/api/proposals?paper=gspo&paper=cispo", status=400)
    rows = await _json(client, "/api/proposals?framework=verl&framework=VERL")
    assert sorted(p["number"] for p in rows) == [101, 102]



async def test_the_icon_is_tiny_and_no_browser_visit_asks_for_the_404_page(client) -> None:
    """Every browser visit asked for /favicon.ico and got the site's whole "Not found" page
    (3 KiB of HTML, status 404, logged as a miss). Pages name their icon inline (a data: SVG
    the CSP's img-src allows: no request), and /favicon.ico, which browsers and feed readers
    still ask for, is that same small SVG, cached for a day (left80)."""
    from urllib.parse import unquote

    page = await _text(client, "/")
    icon = re.search(r'<link rel="icon" type="image/svg\+xml" href="data:image/svg\+xml,([^"]+)">',
                     page)
    assert icon is not None
    inline = unquote(icon.group(1).replace("&#39;", "'").replace("&amp;", "&"))
    assert "data:" in (await client.get("/")).headers["Content-Security-Policy"]  # img-src
    for method in ("GET", "HEAD"):
        resp = await client.request(method, "/favicon.ico")
        assert (resp.status, resp.content_type) == (200, "image/svg+xml"), method
        assert "max-age=86400" in resp.headers["Cache-Control"]
    served = await (await client.get("/favicon.ico")).text()
    assert served == inline and served.startswith("<svg") and len(served.encode()) < 512
