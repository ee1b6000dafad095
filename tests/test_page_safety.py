"""What every tracker page owes a reader and an attacker, over real HTTP on the seeded site
database (SQLite and PostgreSQL): the security headers on every HTML answer (error pages
included), GitHub's text isolated so a direction override in it cannot reorder the app's own
words, and the accessibility basics a browser relies on (one <h1>, a <title>, `lang`, no
duplicate ids, table headers with their scope)."""

from __future__ import annotations

from datetime import date
from html.parser import HTMLParser
from typing import Any

from sqlalchemy import select, text

from tests.browser import chromium  # noqa: F401 - the fixture
from tests.test_site import seed
from tests.test_thread_page import _client, seed_actions


def _assert_safe_headers(path: str, headers: Any) -> None:
    policy = headers.get("Content-Security-Policy") or ""
    directives = {d.split()[0]: d for d in (p.strip() for p in policy.split(";")) if d}
    assert directives.get("default-src") == "default-src 'none'", (path, policy)
    assert "script-src" not in directives, (path, policy)
    assert directives.get("frame-ancestors") == "frame-ancestors 'none'", (path, policy)
    assert headers.get("X-Content-Type-Options") == "nosniff", path
    assert headers.get("Referrer-Policy") == "no-referrer", path


# Every kind of answer a browser can get from the site, errors included.
HTML_ANSWERS = [
    ("/repos/huggingface/trl/preview", 200),  # other people's titles, in full
    ("/repos/huggingface/trl/preview?days=x", 400),
    ("/repos/nobody/nothing/preview", 404),
    ("/no/such/page", 404),  # aiohttp's own answer
    ("/", 200), ("/threads/huggingface/trl/8", 200), ("/proposals?page=9", 404),
    ("/reports/2020-01-01", 404), ("/study", 200), ("/verdicts", 200),
]


async def test_every_answer_carries_the_security_headers(ctx) -> None:
    """The install preview (thread titles and the comments the app would post) was framed by
    any site (its policy had no frame-ancestors) and sent its address as the referrer to the
    GitHub links it lists; aiohttp's own 404 for an unknown path carried no header at all."""
    client = await _client(ctx)
    try:
        for path, status in HTML_ANSWERS:
            resp = await client.get(path, headers={"Accept": "text/html"})
            assert resp.status == status, (path, resp.status)
            _assert_safe_headers(path, resp.headers)
    finally:
        await client.close()


async def test_a_page_that_crashes_carries_the_security_headers(ctx) -> None:
    """A page whose handler raised (here: its table is gone) answered aiohttp's HTML 500 page
    with none of the pages' headers."""
    client = await _client(ctx)
    try:
        async with ctx.engine.begin() as conn:
            await conn.execute(text("DROP TABLE verdicts"))
        resp = await client.get("/verdicts", headers={"Accept": "text/html"})
        assert resp.status == 500
        _assert_safe_headers("/verdicts", resp.headers)
    finally:
        await client.close()


async def test_a_missing_table_is_a_bug_not_a_database_that_did_not_answer(ctx) -> None:
    """SQLite reports a table it lacks as an OperationalError, as it does a locked file: the
    pages and the API answered 503 "the database did not answer; try again later" to a
    schema a migration lost, which no retry mends. A missing table is a 500 (logged with its
    traceback), on both databases (PostgreSQL calls it UndefinedTable)."""
    client = await _client(ctx)
    try:
        async with ctx.engine.begin() as conn:
            await conn.execute(text("DROP TABLE verdicts"))
        page = await client.get("/verdicts", headers={"Accept": "text/html"})
        api = await client.get("/api/verdicts")
        assert (page.status, api.status) == (500, 500)
        assert "try again later" not in (await page.text()) + (await api.text())
    finally:
        await client.close()


# --- direction overrides in GitHub's text -----------------------------------------------------

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reverses what follows until its paragraph ends


async def _override_everywhere(ctx: Any) -> None:
    """trl#8 (a failure report) with a title, a label, a linked paper's title and a cue word
    that each open a right-to-left override and never close it."""
    from sqlalchemy import select

    from bot.store.models import Analysis, Thread

    async with ctx.sessionmaker() as session, session.begin():
        thread = await session.scalar(select(Thread).where(Thread.repo == "huggingface/trl",
                                                           Thread.number == 8))
        assert thread is not None
        thread.title = f"Entropy collapses {RLO}after 200 steps"
        thread.labels = [f"wontfix {RLO}", "bug"]
        analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        assert analysis is not None
        analysis.result = {**analysis.result, "papers": [
            {"arxiv_id": "2507.18071", "title": f"Group Sequence Policy Optimization {RLO}",
             "method": "gspo", "how": "arxiv_id", "score": 1.0}],
            # the cue words are spans of the post
            "failure": {**analysis.result["failure"], "evidence": [f"entropy {RLO}collapse", "loss nan"]}}


class _Isolation(HTMLParser):
    """Each text run holding RLO, and whether an element isolating its direction (<bdi>, or
    any element with a dir attribute) encloses it."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "col", "area", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []
        self.runs: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag == "bdi" or any(k == "dir" for k, _ in attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if RLO in data:
            self.runs.append((data, any(self.stack)))


async def test_github_text_is_isolated_wherever_a_page_shows_it(ctx) -> None:
    """A thread's title, its labels and a linked paper's title are shown in <bdi> (their own
    direction, isolated from the page's words) on every page that lists them. On main only
    the paper title reversed words of the page (the next test); the rest is this rule kept
    everywhere, as the report page keeps it."""
    client = await _client(ctx)
    await _override_everywhere(ctx)
    try:
        for path in ("/", "/failures/entropy_collapse", "/threads/huggingface/trl/8",
                     "/repos/huggingface/trl/preview"):
            resp = await client.get(path)
            assert resp.status == 200, path
            parser = _Isolation()
            parser.feed(await resp.text())
            assert parser.runs, path
            bare = [run for run, isolated in parser.runs if not isolated]
            assert not bare, (path, bare)
    finally:
        await client.close()


MEASURE = """
function order(el) {  // [left of the first character, left of the last]: in order when first < last
  var n = el.firstChild, r1 = document.createRange(), r2 = document.createRange();
  r1.setStart(n, 0); r1.setEnd(n, 1); r2.setStart(n, n.data.length - 1); r2.setEnd(n, n.data.length);
  return [r1.getBoundingClientRect().left, r2.getBoundingClientRect().left];
}
var method = Array.from(document.querySelectorAll('li a[href="/methods/gspo"]'))[0];
var cue = Array.from(document.querySelectorAll('code')).find(e => e.textContent === 'loss nan');
return {method: order(method), cue: order(cue.firstChild.nodeType === 3 ? cue : cue.firstChild)};
"""


async def test_a_direction_override_does_not_reverse_the_thread_page(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """In Chromium, a linked paper's title holding an unclosed RLO reversed the method the
    thread page names after it: '· method GSPO' read 'OPSG'; a cue word holding one reversed
    the cue words after it ('loss nan' read 'nan ssol'). (A title stands alone in its
    heading or before a line break, and a label is an inline-block: neither reversed
    anything on main; they are isolated all the same, and an Arabic or Hebrew one gets its
    own direction.)"""
    from tests.browser import serving

    await seed(sqlite_ctx)
    await _override_everywhere(sqlite_ctx)
    async with serving(sqlite_ctx) as server:
        url = str(server.make_url("/threads/huggingface/trl/8"))
        found = (await chromium.evaluate([url], MEASURE, width=1000))[url]
    for what, (first, last) in found.items():
        assert first < last, (what, found)


# --- accessibility basics -----------------------------------------------------------------------

class _Outline(HTMLParser):
    """What a screen reader and a browser's outline rely on: the <h1>s, the document's
    <title> (not an SVG's), the root's lang, the ids, and each table header's scope."""

    def __init__(self) -> None:
        super().__init__()
        self.h1 = 0
        self.titles = 0
        self.lang: str | None = None
        self.ids: list[str] = []
        self.headers: list[tuple[str, str | None, str]] = []  # (section, scope, text)
        self.section = ""
        self.svg = 0
        self.head = False
        self.body_styles = 0  # <style> elements outside <head>: not allowed there
        self._th: list[Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "svg":
            self.svg += 1
        elif tag == "head":
            self.head = True
        elif tag == "style" and not self.head:
            self.body_styles += 1
        elif tag == "html":
            self.lang = a.get("lang")
        elif tag == "h1":
            self.h1 += 1
        elif tag == "title" and not self.svg:
            self.titles += 1
        elif tag in ("thead", "tbody", "tfoot"):
            self.section = tag
        elif tag == "table":
            self.section = ""
        elif tag == "th":
            self._th = [self.section, a.get("scope"), ""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg -= 1
        elif tag == "head":
            self.head = False
        elif tag == "th" and self._th is not None:
            self.headers.append((self._th[0], self._th[1], self._th[2].strip()))
            self._th = None

    def handle_data(self, data: str) -> None:
        if self._th is not None:
            self._th[2] += data


PAGES = ["/", "/methods/gspo", "/failures/entropy_collapse", "/frameworks/verl",
         "/frameworks/trl", "/proposals", "/proposals?page=9", "/repos/", "/threads/huggingface/trl/8",
         "/verdicts", "/study", "/study/sets/landed.verl", "/study/sets/no-such-set", "/reports/",
         "/repos/huggingface/trl/preview", "/methods/no-such-method"]


async def test_every_page_has_the_accessibility_basics(ctx) -> None:
    """One <h1>, one <title>, lang on <html>, no id twice, and every table header says what it
    heads (scope="col" in a table's head, "row" beside a row's cells): on main no <th> of
    any page had a scope, the study's review table among them (row headers in its body, an
    empty header in its corner) and its per-framework table (headers over two rows). No
    <style> in the body (HTML allows it in <head> only): the thread page had one."""
    from datetime import date

    from bot.site.report import run_report

    client = await _client(ctx)
    await run_report(ctx, date(2026, 11, 20))
    try:
        for path in [*PAGES, "/reports/2026-11-20"]:
            resp = await client.get(path)
            assert resp.status in (200, 404), (path, resp.status)
            page = _Outline()
            page.feed(await resp.text())
            assert page.h1 == 1 and page.titles == 1 and page.lang == "en", path
            assert len(page.ids) == len(set(page.ids)), (path, sorted(page.ids))
            assert page.body_styles == 0, (path, "a <style> element in the body")
            for section, scope, label in page.headers:
                assert label, (path, "a table header with no text")
                wanted = ("col", "colgroup") if section == "thead" else ("row", "rowgroup")
                assert scope in wanted, (path, section, scope, label)
    finally:
        await client.close()


# --- a title nobody can see ------------------------------------------------------------------------

INVISIBLE = "\u200b\u2060\u3164 \u200f"  # zero-width space, word joiner, Hangul filler, space, RLM


class _LinkText(HTMLParser):
    """The text of each link to `href`."""

    def __init__(self, href: str) -> None:
        super().__init__()
        self.href, self.texts, self._open = href, [], None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and dict(attrs).get("href") == self.href:
            self._open = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.texts.append(self._open)
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open += data


async def test_a_title_of_invisible_characters_still_gives_its_link_a_name(ctx) -> None:
    """A title of zero-width and blank characters only was the whole text of the link to the thread page on the front page and the failure page: a
    link nobody could see or click, that a screen reader announced without a name, and the
    thread page's heading was blank. Such a title shows as "(no title)", like an empty one."""
    from sqlalchemy import update

    from bot.store.models import Thread

    client = await _client(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        await session.execute(update(Thread).where(Thread.repo == "huggingface/trl", Thread.number == 8)
                              .values(title=INVISIBLE))
    try:
        for path in ("/", "/failures/entropy_collapse"):
            links = _LinkText("/threads/huggingface/trl/8")
            links.feed(await (await client.get(path)).text())
            assert links.texts == ["(no title)"], (path, links.texts)
        html = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "<h1 dir=\"auto\">(no title)</h1>" in html
    finally:
        await client.close()


def test_shown_title_keeps_every_title_that_shows_something() -> None:
    from bot.templating import shown_title

    for title in ("GSPO", "\u200bGSPO", "إضافة GSPO", "添加 GSPO", "é", "<b>", "0"):
        assert shown_title(title) == title
    for title in (None, "", "   ", "\u200b", "\u2800\u3164", "\u202e\u2066", "\t\n"):
        assert shown_title(title) == "(no title)"


async def test_the_policy_blocks_nothing_a_page_uses(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """Chromium loads every kind of page under its policy (the pages' styles, the study's and
    the report's SVG, the install preview) and reports no blocked style, image or form."""
    from tests.browser import serving

    await seed(sqlite_ctx)
    await seed_actions(sqlite_ctx)
    async with serving(sqlite_ctx) as server:
        for path in PAGES:
            messages = await chromium.console(str(server.make_url(path)))
            blocked = [m for m in messages if "Content Security Policy" in m]
            assert not blocked, (path, blocked)


# --- a comment in Chinese says so -------------------------------------------------------------

ZH_BODY = ("训练两百步之后熵降到接近零，奖励也不再上升，请问应该怎么调整？\n"
           "使用 GRPO，学习率 1e-6，每步 8 个回答。")


async def test_a_comment_in_chinese_carries_its_language(ctx) -> None:
    """A comment the app wrote in Chinese (the reporter wrote in Chinese) sat in the English
    page without a lang: a screen reader read it with an English voice, and a browser chose
    its font for English (Han characters may take Japanese forms). The thread page's
    comment and the install preview's now carry lang="zh"."""
    from datetime import timedelta

    from bot.store.models import Action, Analysis
    from bot.store.threads import upsert_thread
    from bot.store.types import utcnow
    from tests.test_site import _analysis

    client = await _client(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {
            "repo": "huggingface/trl", "number": 30, "kind": "issue", "state": "open",
            "title": "GRPO 训练中熵迅速下降", "body": ZH_BODY, "author": "someone",
            "created_at": (utcnow() - timedelta(days=1)).isoformat()})
        result = _analysis(failure="entropy_collapse")
        session.add(Analysis(thread_id=thread.id, analyzer_version="test", result=result,
                             is_failure_report=True, failure_category="entropy_collapse",
                             is_proposal=False, review_state=None, methods=[], arxiv_ids=[]))
        session.add(Action(repo="huggingface/trl", number=30, kind="failure_comment",
                           status="dry_run", dedupe_key="t30", language="zh",
                           body="**很可能是熵崩溃**。"))
    try:
        html = await (await client.get("/threads/huggingface/trl/30")).text()
        assert '<blockquote class="comment" lang="zh">' in html
        preview = await (await client.get("/repos/huggingface/trl/preview")).text()
        assert "GRPO 训练中熵迅速下降" in preview
        assert '<pre lang="zh">' in preview, preview[preview.find("<pre"):][:200]
    finally:
        await client.close()


# --- a thread whose opening date is not known ---------------------------------------------------

async def test_a_thread_of_unknown_date_is_listed_last_on_both_databases(ctx) -> None:
    """Lists are newest first; a thread stored without its opening date (a partial record:
    the delivery that stored it did not carry the date) came first on PostgreSQL (NULLs sort
    first in a descending order there) and last on SQLite: on PostgreSQL it headed
    /proposals, /api/proposals and the front page's recent failure reports for good."""
    import re

    from bot.store.models import Analysis
    from bot.store.threads import upsert_thread
    from tests.test_site import _analysis

    client = await _client(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        for number, proposal in ((31, True), (32, False)):
            thread = await upsert_thread(session, {
                "repo": "huggingface/trl", "number": number, "kind": "issue", "state": "open",
                "title": f"Undated {number}"})
            assert thread.created_at is None
            failure = None if proposal else "entropy_collapse"
            session.add(Analysis(
                thread_id=thread.id, analyzer_version="test",
                result=_analysis(proposal=proposal, failure=failure),
                is_failure_report=not proposal, failure_category=failure, is_proposal=proposal,
                review_state="open_no_reply" if proposal else None, methods=[], arxiv_ids=[]))
    try:
        titles = re.findall(r'<a href="/threads/[^"]+"><bdi>([^<]*)</bdi>',
                            await (await client.get("/proposals")).text())
        assert titles[-1] == "Undated 31" and len(titles) == 4, titles
        rows = await (await client.get("/api/proposals")).json()
        assert rows[-1]["number"] == 31, [r["number"] for r in rows]
        failures = re.findall(r'<a href="/threads/[^"]+"><bdi>([^<]*)</bdi>',
                              await (await client.get("/")).text())
        assert failures[-1] == "Undated 32", failures
    finally:
        await client.close()


# --- links that say where they go ----------------------------------------------------------------

class _Links(HTMLParser):
    """(href, visible text, aria-label) of every link outside SVG."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[list[Any]] = []
        self._open: list[Any] | None = None
        self.svg = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg":
            self.svg += 1
        elif tag == "a" and not self.svg:
            self._open = [a.get("href"), "", a.get("aria-label")]

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg -= 1
        elif tag == "a" and self._open is not None:
            self.links.append(self._open)
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[1] += data


async def _links_named_by_numbers_only(client: Any, path: str) -> list[tuple[str, str]]:
    """The links on `path` whose text holds no letter and whose aria-label does not start
    with that text and say, in words, what it counts or where it goes."""
    import re

    page = _Links()
    page.feed(await (await client.get(path)).text())
    return [(href, text) for href, text, label in page.links
            if not re.search(r"[^\W\d_]", text)
            and not (label and label.startswith(text.strip()) and re.search(r"[^\W\d_]", label))]


async def test_a_number_that_links_says_what_it_counts(ctx) -> None:
    """The study page's numbers are links to what they count, and a link's name was only its
    number: a screen reader's list of links read '2, 0, 1, 0, …' with nothing to tell them
    apart. Each link whose text is a number now carries a name that starts with the number
    and says what it counts or where it goes."""

    client = await _client(ctx)
    try:
        for path in ("/study", "/study/sets/landed.verl"):
            bare = await _links_named_by_numbers_only(client, path)
            assert not bare, (path, bare[:8])
    finally:
        await client.close()


async def test_no_page_has_a_link_named_only_by_a_number(ctx) -> None:
    """The same on every page: the reports list named each report's link by its date only,
    and the install preview named each issue's link to GitHub '#7'."""

    from bot.site.report import run_report

    client = await _client(ctx)
    await run_report(ctx, date(2026, 11, 20))
    try:
        for path in [*PAGES, "/reports/2026-11-20"]:
            bare = await _links_named_by_numbers_only(client, path)
            assert not bare, (path, bare[:8])
    finally:
        await client.close()


async def test_the_code_names_a_rule_statement_quotes_are_isolated(ctx) -> None:
    """A rule statement on the framework page quotes short names from a repository's files
    (`make lint`, a command) in <code>: a name holding an unclosed U+202E reversed the
    statement's own words after it on the line. Each quoted name is in its own <bdi> now."""
    from sqlalchemy import update

    from bot.store.models import ContributionRules

    client = await _client(ctx)
    try:
        async with ctx.sessionmaker() as s, s.begin():
            row = await s.scalar(select(ContributionRules).where(
                ContributionRules.repo == "verl-project/verl"))
            summary = dict(row.summary)
            facts = [dict(f) for f in summary["facts"]]
            facts[0]["statement"] = f"Run `make {RLO}lint` before a pull request, then `pre-commit`."
            summary["facts"] = facts
            await s.execute(update(ContributionRules).where(ContributionRules.id == row.id)
                            .values(summary=summary))
        html = await (await client.get("/frameworks/verl")).text()
        assert f"<code><bdi>make {RLO}lint</bdi></code>" in html
        runs = _Isolation()
        runs.feed(html)
        assert runs.runs and all(isolated for _, isolated in runs.runs), runs.runs
    finally:
        await client.close()
