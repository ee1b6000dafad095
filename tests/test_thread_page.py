"""The thread page, GET /threads/{owner}/{repo}/{number}, over real HTTP on the seeded site
database (SQLite and PostgreSQL): analysis, actions with their bodies and skip reasons, links,
404, and GitHub's text kept as text."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from bot.store.models import Action, Installation, Repository
from tests.browser import chromium  # noqa: F401 - the fixture
from tests.test_site import seed

# The app's own Markdown, plus what must never become markup: raw HTML and a javascript: link.
COMMENT = ("<!-- rltracker:failure-comment -->\n**Very likely [Entropy collapse]"
           "(http://localhost:8000/failures/entropy_collapse)**. Try `epsilon_high=0.28`.\n\n"
           "<details><summary>Why</summary>\n\n- cue words\n\n</details>\n\n"
           "<script>alert(3)</script> [x](javascript:alert(4)) <sub onclick=alert(5)>s</sub>\n")


async def seed_actions(ctx: Any) -> None:
    """trl#8 (a failure report, seeded by test_site) got a dry-run comment and a skip."""
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Action(repo="huggingface/trl", number=8, kind="failure_comment",
                           status="dry_run", dedupe_key="t8", body=COMMENT, language="en"))
        session.add(Action(repo="huggingface/trl", number=8, kind="rule_summary", status="skipped",
                           dedupe_key="t8s", reason="a training-failure report, not a method proposal",
                           details={"code": "failure_report"}))


async def _client(ctx: Any) -> TestClient:
    from bot.app import create_app

    await seed(ctx)
    await seed_actions(ctx)
    client = TestClient(TestServer(create_app(ctx, worker=False)))
    await client.start_server()
    return client


async def _page(client: TestClient, path: str, status: int = 200) -> str:
    resp = await client.get(path)
    assert resp.status == status, (path, resp.status)
    assert "script-src" not in resp.headers["Content-Security-Policy"]
    return await resp.text()


async def test_failure_thread_shows_analysis_comment_and_skip_reason(ctx) -> None:
    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/huggingface/trl/8")
    finally:
        await client.close()
    assert "Entropy collapses after 200 steps" in html
    assert 'href="/failures/entropy_collapse"' in html and "confidence 0.90 that this reports a failing run" in html
    assert ", or <a" not in html  # one kind listed: no runner-up
    assert 'href="https://github.com/huggingface/trl/issues/8"' in html
    assert 'href="/frameworks/trl"' in html
    assert "Failure comment: would have posted (dry run)" in html
    assert "<strong>Very likely <a href=\"http://localhost:8000/failures/entropy_collapse\">" in html
    assert "<code>epsilon_high=0.28</code>" in html
    assert "<details><summary>Why</summary>" in html  # the comment templates' own tags
    assert "rltracker:failure-comment" not in html
    # Raw HTML in a body stays text; the javascript: link is not a link.
    assert "<script>alert(3)" not in html and "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "onclick=alert(5)>" not in html and 'href="javascript:' not in html
    assert "Contribution-rule summary: stayed quiet" in html
    assert "Why: a training-failure report, not a method proposal" in html


async def test_failure_thread_names_the_runner_up_kind(ctx) -> None:
    """slime#9 lists KL growth first, then an unknown key and two known kinds: the page names
    the first known runner-up only, as the failure comment does."""
    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/THUDM/slime/9")
    finally:
        await client.close()
    assert ('<a href="/failures/kl_growth">KL keeps growing</a>, or '
            '<a href="/failures/entropy_explosion">') in html
    assert 'href="/failures/collapse_or_divergence"' not in html and "not_a_kind" not in html


async def test_proposal_thread_state_papers_and_hostile_title(ctx) -> None:
    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/verl-project/verl/102")
        merged = await _page(client, "/threads/verl-project/verl/101")
        former = await _page(client, "/threads/volcengine/verl/101")  # verl's former name
        missing = await _page(client, "/threads/verl-project/verl/424242", status=404)
        bad = await _page(client, "/threads/verl-project/verl/abc", status=404)
    finally:
        await client.close()
    assert "<script>alert" not in html and "<img src=x" not in html and "<iframe" not in html
    assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;" in html
    assert 'href="https://github.com/verl-project/verl/pull/102"' in html
    assert "open, no reply" in html and 'href="https://arxiv.org/abs/2507.18071"' in html
    # What the concern line can be trusted for, said next to it (held-out recall is about half).
    assert 'id="concerns-caveat"' in html and "none recognised" in html
    assert "merged" in merged and "Support GSPO" in merged
    assert "Support GSPO" in former
    assert "No such thread" in missing and "No such thread" in bad
    # Not installed on verl: nothing was said, and the page says why.
    assert "the app is not installed on verl-project/verl" in html


async def test_installed_repository_without_actions_says_when_the_app_decides(ctx) -> None:
    client = await _client(ctx)
    try:
        async with ctx.sessionmaker() as session, session.begin():
            session.add(Installation(id=6, account="THUDM"))
            await session.flush()
            session.add(Repository(full_name="THUDM/slime", framework="slime", installation_id=6))
        html = await _page(client, "/threads/THUDM/slime/9")
    finally:
        await client.close()
    assert "Nothing yet: the app decides when an issue or pull request is opened or edited" in html


async def test_a_suspended_installation_says_the_app_does_not_comment(ctx) -> None:
    """With the installation suspended (GitHub refuses the app's tokens) the page said the
    app decides when an issue is opened or edited, or when asked with /rltracker recheck:
    nothing it can do there until the installation is unsuspended."""
    client = await _client(ctx)
    try:
        async with ctx.sessionmaker() as session, session.begin():
            session.add(Installation(id=6, account="THUDM", suspended=True))
            await session.flush()
            session.add(Repository(full_name="THUDM/slime", framework="slime", installation_id=6))
        html = await _page(client, "/threads/THUDM/slime/9")
    finally:
        await client.close()
    assert "Nothing yet: the app decides" not in html
    assert "installation on THUDM/slime is suspended" in html


async def test_lists_link_to_the_thread_page(ctx) -> None:
    client = await _client(ctx)
    try:
        pages = {path: await _page(client, path) for path in
                 ("/", "/proposals", "/methods/gspo", "/failures/entropy_collapse", "/frameworks/verl")}
    finally:
        await client.close()
    assert 'href="/threads/huggingface/trl/8"' in pages["/"]
    assert 'href="/threads/verl-project/verl/101"' in pages["/proposals"]
    assert 'href="/threads/verl-project/verl/102"' in pages["/methods/gspo"]
    assert 'href="/threads/huggingface/trl/8"' in pages["/failures/entropy_collapse"]
    assert 'href="/threads/verl-project/verl/101"' in pages["/frameworks/verl"]


async def test_a_tag_typed_by_the_reporter_in_a_code_span_stays_text(ctx) -> None:
    """The failure comment showed a setting the reporter already has by the key they wrote,
    in a code span: a JSON block keyed `<details>` put `<details>.clip_ratio_high` there. The
    page turned every escaped `<details>` back into a tag, in code spans too, so the
    reporter's text opened a collapsed <details> that hid the rest of the page. The comment
    now names the catalog's key only (review53); a comment stored by an earlier release still
    holds the reporter's key, and the page keeps it text."""
    from bot.speaking.failure_comment import compose_for

    body = ("Entropy collapses after 100 steps.\n\n```json\n"
            '{"<details>": {"clip_ratio_high": 0.28}}\n```\n')
    composed = compose_for(
        {"title": "Entropy collapse", "body": body},
        {"failure": {"is_failure_report": True, "category": "entropy_collapse", "confidence": 0.95}},
        "verl", public_url="http://localhost:8000", declined=set())
    assert composed is not None and "<details>." not in composed.body
    assert "(`clip_ratio_high` = `0.28`)" in composed.body
    # as an earlier release wrote it
    stored = composed.body.replace("(`clip_ratio_high` =", "(`<details>.clip_ratio_high` =")
    assert "`<details>.clip_ratio_high`" in stored
    client = await _client(ctx)
    try:
        async with ctx.sessionmaker() as session, session.begin():
            session.add(Action(repo="verl-project/verl", number=101, kind="failure_comment",
                               status="dry_run", dedupe_key="v101", body=stored,
                               language="en"))
        html = await _page(client, "/threads/verl-project/verl/101")
    finally:
        await client.close()
    assert "<code>&lt;details&gt;.clip_ratio_high</code>" in html
    assert html.count("<details>") == html.count("</details>") == 1  # the template's own
    assert "<details><summary>Why this suggestion</summary>" in html


async def test_not_a_failure_report_says_what_its_confidence_is_of(ctx) -> None:
    """The failure confidence is P(a failure report). verl#102 (0.10) read 'Not a
    training-failure report (confidence 0.10)', which says the tracker is 10 % sure of what it
    shows, where the analyzer is 90 % sure of it: the page says what the number is of."""
    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/verl-project/verl/102")
    finally:
        await client.close()
    assert "Not a training-failure report" in html
    assert "(confidence 0.10)" not in html
    assert "confidence 0.10 that this reports a failing run" in html


async def test_the_page_of_a_thread_gone_from_github_says_so(ctx) -> None:
    """A thread deleted on GitHub, or transferred to another repository, left its page as
    "No such thread." (404), as though the tracker had never listed it: a link from a
    nightly report or an old list read as a broken tracker. The page says the thread left
    that place on GitHub (410 Gone), and links GitHub's address, which forwards a transferred
    one. A thread the tracker never stored stays "No such thread" (404); so does one of a
    repository since made private (nothing is said of it)."""
    from sqlalchemy import update

    from bot.store.models import Repository
    from tests.test_events import dispatch, envelope, issue

    client = await _client(ctx)
    try:
        await dispatch(ctx, "issues", envelope("deleted", repo="huggingface/trl",
                                               issue=issue(number=8, created_at=None)))
        new = issue(number=301, html_url="https://github.com/THUDM/slime/issues/301")
        await dispatch(ctx, "issues", envelope(
            "transferred", repo="huggingface/trl", issue=issue(number=7),
            changes={"new_issue": new, "new_repository": {"id": 10, "full_name": "THUDM/slime"}}))
        for path in ("/threads/huggingface/trl/8", "/threads/huggingface/TRL/7"):
            resp = await client.get(path)
            html = await resp.text()
            assert resp.status == 410, (path, resp.status)
            assert "No longer on GitHub at" in html and "deleted, or transferred" in html, path
            number = path.rsplit("/", 1)[1]
            assert f'href="https://github.com/huggingface/trl/issues/{number}"' in html, path
        assert (await client.get("/threads/THUDM/slime/301")).status == 200  # where it went
        assert (await client.get("/threads/huggingface/trl/9999")).status == 404
        async with ctx.sessionmaker() as session, session.begin():
            await session.execute(update(Repository).where(Repository.full_name == "huggingface/trl")
                                  .values(private=True))
        resp = await client.get("/threads/huggingface/trl/8")
        assert resp.status == 404 and "No such thread" in await resp.text()
    finally:
        await client.close()


async def test_a_thread_of_unknown_author_reads_opened_on_its_day(ctx) -> None:
    """A thread stored without its author (a record from the sync of a deleted account, a
    hand-made one) read 'issue · open on 2026-11-17 UTC' under its heading: the opening day
    read as the day it has been open since. It reads 'opened on'."""
    import re

    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/huggingface/trl/8")
    finally:
        await client.close()
    line = re.search(r'<p class="muted">huggingface/trl#8 · (.*?)</p>', html)
    assert line is not None
    assert re.sub(r"<[^>]+>", "", line.group(1)) == "issue · open · opened on 2026-11-17 UTC", line.group(1)


async def test_a_skip_reason_quoting_a_label_keeps_its_words_in_order(ctx) -> None:
    """The app's skip reason quotes the thread's labels in a plain sentence ('the issue is
    already labelled (bug, help wanted)'): a label holding an unclosed U+202E reversed the rest
    of the sentence on the thread page ('(detnaw pleh ,gub' in Chromium: the other labels and
    the app's own parenthesis). A reason is the app's sentence: direction controls in it are
    dropped where it is shown (the thread page, the install preview's skip table)."""
    from bot.store.models import Action

    rlo = "\u202e"
    reason = f"the issue is already labelled ({rlo}bug, help wanted)"
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Action(repo="huggingface/trl", number=7, kind="failure_comment", status="skipped",
                           dedupe_key="t7", reason=reason, details={"code": "labelled"}))
    client = await _client(ctx)
    try:
        html = await _page(client, "/threads/huggingface/trl/7")
    finally:
        await client.close()
    assert "<p>Why: the issue is already labelled (bug, help wanted)</p>" in html
    assert rlo not in html


async def test_the_comments_details_are_no_paragraphs_a_browser_must_mend(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """markdown-it sets the comment's own `<details><summary>…</summary>` line and its
    `</details>` line in paragraphs, and the page turned them back into tags there:
    `<p><details><summary>Why this suggestion</summary></p>` … `<p></details></p>`. A browser
    closes the first <p> before <details> and makes a new, empty one of each stray `</p>`: in
    Chromium the comment held empty paragraphs (blank gaps) around its collapsed part. The
    tags stand on their own."""
    from bot.speaking.failure_comment import compose_for
    from tests.browser import serving

    composed = compose_for(
        {"title": "Entropy collapse", "body": "Entropy collapses after 100 steps."},
        {"failure": {"is_failure_report": True, "category": "entropy_collapse", "confidence": 0.95}},
        "verl", public_url="http://localhost:8000", declined=set())
    assert composed is not None and "<details>" in composed.body
    await seed(sqlite_ctx)
    async with sqlite_ctx.sessionmaker() as session, session.begin():
        session.add(Action(repo="verl-project/verl", number=101, kind="failure_comment",
                           status="dry_run", dedupe_key="v101", body=composed.body, language="en"))
    async with serving(sqlite_ctx) as server:
        dom = await chromium.dump_dom(str(server.make_url("/threads/verl-project/verl/101")))
    comment = dom.split('<blockquote class="comment"')[1].split("</blockquote>")[0]
    assert "<details><summary>Why this suggestion</summary>" in comment
    assert "<p></p>" not in comment, comment


async def test_a_reopened_thread_is_not_said_to_be_closed(ctx) -> None:
    """GitHub keeps `closed_at` on an issue reopened after a close (the `issues` fixtures'
    reopened issue: state open, state_reason reopened, closed_at set). The page read "open
    (reopened) · opened on ... · closed 2021-07-05 UTC": open and closed at once. An open
    thread's close is its last one; a closed thread's still reads "closed"."""
    import re

    from bot.store.threads import upsert_thread

    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {
            "repo": "huggingface/trl", "number": 77, "kind": "issue", "title": "Reopened",
            "state": "open", "state_reason": "reopened", "author": "someone",
            "created_at": "2026-11-01T10:00:00Z", "closed_at": "2026-11-03T10:00:00Z"})
    client = await _client(ctx)
    try:
        reopened = await _page(client, "/threads/huggingface/trl/77")
        closed = await _page(client, "/threads/verl-project/verl/101")
    finally:
        await client.close()

    def line(html: str, ref: str) -> str:
        found = re.search(rf'<p class="muted">{re.escape(ref)} · (.*?)</p>', html)
        assert found is not None
        return re.sub(r"<[^>]+>", "", found.group(1))

    assert line(reopened, "huggingface/trl#77") == (
        "issue · open (reopened) · opened by someone on 2026-11-01 UTC · last closed 2026-11-03 UTC")
    assert " · closed " not in line(reopened, "huggingface/trl#77")
    assert "closed (completed)" in line(closed, "verl-project/verl#101")
