"""Issue 9, end to end: analyses stored by an older analyzer version are refreshed by the real
nightly job, and the tracker's pages, JSON and the night's report show the new findings; a
NEWER version (a replica already on the next release, during a rolling deploy) is kept.
Versions are `YYYY.MM.DD-N` and compared as numbers (`-9` before `-45`), never as strings.
SQLite and PostgreSQL. Threads written for the project."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from analyzers.analyze import analyze_thread
from analyzers.version import ANALYZER_VERSION, version_key
from bot.scheduler import nightly_job
from bot.store.models import Analysis, Report, Thread

REPO = "huggingface/trl"
REPORT = {  # a training-failure report (entropy collapse) in plain words
    "title": "GRPO entropy collapses to zero after 200 steps",
    "body": ("Training Qwen2.5-7B with GRPO. The policy entropy drops to almost 0 after about "
             "200 steps and the model keeps generating the same answer for every prompt; reward "
             "stops improving. Config: lr 1e-6, 8 generations per prompt. How can I keep the "
             "entropy from collapsing?"),
}
REQUEST = {"title": "Add a CLI flag for the output directory",
           "body": "It would be handy to choose where checkpoints go from the command line."}


def _versions() -> dict[str, str]:
    """Stored versions around this code's, chosen so that a string comparison gets them wrong
    whenever the serial allows it (`-9` is older than `-45`; `-100` is newer)."""
    day, _, serial = ANALYZER_VERSION.rpartition("-")
    n = int(serial)
    previous_day = (date.fromisoformat(day.replace(".", "-")) - timedelta(days=1)).strftime("%Y.%m.%d")
    older_same_day = f"{day}-{n - 1}" if n > 1 else f"{previous_day}-99"
    if n > 9:  # a one-digit serial below a longer one: older, though "9" > "45" as text
        older_same_day = f"{day}-{9 if int(serial[0]) < 9 else 1}"
    newer = f"{day}-{10 ** len(serial)}"  # "100" < "45" as text, newer as a number
    return {"older": older_same_day, "older_day": f"{previous_day}-{10 * n + 99}", "newer": newer,
            "undated": "an-old-version"}


def _record(number: int, text: dict[str, str]) -> dict[str, Any]:
    return {"id": f"{REPO}#{number}", "repo": REPO, "number": number, "kind": "issue",
            "state": "open", "comments": [], **text}


async def test_the_nightly_job_refreshes_every_older_analysis_and_pages_show_it(ctx: Any) -> None:
    from bot.app import create_app

    versions = _versions()
    assert version_key(versions["older"]) < version_key(ANALYZER_VERSION) < version_key(versions["newer"])
    assert version_key(versions["older_day"]) < version_key(ANALYZER_VERSION)
    serial = ANALYZER_VERSION.rpartition("-")[2]
    if len(serial) > 1:  # the comparisons a string compare would get wrong, here
        assert versions["older"] > ANALYZER_VERSION and versions["newer"] < ANALYZER_VERSION
    # What an older analyzer said of the report: no failure (the same shape, another text).
    stale = analyze_thread(_record(1, REQUEST))
    assert not stale["failure"]["is_failure_report"]
    fresh = analyze_thread(_record(1, REPORT))
    assert fresh["failure"]["is_failure_report"] and fresh["failure"]["category"]
    kind = fresh["failure"]["category"]
    now = datetime.now(UTC)
    stored = {1: versions["older"], 2: versions["older_day"], 3: versions["undated"],
              4: versions["newer"], 5: None}  # 5: never analysed
    async with ctx.sessionmaker() as session:
        threads = {n: Thread(repo=REPO, number=n, kind="issue", state="open", author="someone",
                             created_at=now - timedelta(hours=2), **REPORT) for n in stored}
        session.add_all(threads.values())
        await session.flush()
        for n, version in stored.items():
            if version is not None:
                session.add(Analysis(thread_id=threads[n].id, analyzer_version=version,
                                     result=dict(stale, analyzer_version=version),
                                     is_failure_report=False, failure_category=None,
                                     is_proposal=bool(stale["proposal"]["is_proposal"])))
        await session.commit()

    result = await nightly_job(ctx)  # the real night: every step, no GitHub (sync skipped)

    assert result["counts"]["reanalyse"]["reanalysed"] == 4, result["counts"]["reanalyse"]
    assert result["counts"]["reanalyse"]["newer_kept"] == 1
    async with ctx.sessionmaker() as session:
        rows = {n: row for n, row in (await session.execute(
            select(Thread.number, Analysis).join(Analysis, Analysis.thread_id == Thread.id))).all()}
    assert set(rows) == set(stored)
    for n in (1, 2, 3, 5):
        assert rows[n].analyzer_version == ANALYZER_VERSION, (n, rows[n].analyzer_version)
        assert rows[n].is_failure_report and rows[n].failure_category == kind
        assert rows[n].result["failure"] == fresh["failure"]
    assert rows[4].analyzer_version == versions["newer"] and not rows[4].is_failure_report

    client = TestClient(TestServer(create_app(ctx, worker=False)))
    await client.start_server()
    try:
        resp = await client.get(f"/api/threads/{REPO}/1")
        body = await resp.json()
        assert body["analysis"]["analyzer_version"] == ANALYZER_VERSION
        assert body["failure"]["is_failure_report"] and body["failure"]["category"] == kind
        html = await (await client.get(f"/threads/{REPO}/2")).text()
        assert f'href="/failures/{kind}"' in html and ANALYZER_VERSION in html
        listed = await (await client.get(f"/api/failures/{kind}")).json()
        numbers = {t["number"] for t in listed["recent_reports"]}
        assert {1, 2, 3, 5} <= numbers and 4 not in numbers  # 4 keeps the newer release's finding
    finally:
        await client.close()
    # The report of the night was built after the re-analysis: it counts the refreshed reports.
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report).order_by(Report.id.desc()).limit(1))
    assert report is not None
    assert sorted(report.data["frameworks"]["trl"]["failures_today"].get(kind, [])) == sorted(
        f"{REPO}#{n}" for n in (1, 2, 3, 5))


# ---------------------------------------------------------------------------- while it runs
async def _store(ctx: Any, versions: dict[int, str | None], text: dict[str, str] = REPORT) -> dict[int, int]:
    """Threads `number -> stored analysis version` (None: never analysed); their ids."""
    stale = analyze_thread(_record(1, REQUEST))
    async with ctx.sessionmaker() as session:
        threads = {n: Thread(repo=REPO, number=n, kind="issue", state="open", **text) for n in versions}
        session.add_all(threads.values())
        await session.flush()
        for n, version in versions.items():
            if version is not None:
                session.add(Analysis(thread_id=threads[n].id, analyzer_version=version,
                                     result=dict(stale, analyzer_version=version)))
        await session.commit()
        return {n: t.id for n, t in threads.items()}


async def _stored(ctx: Any) -> dict[int, Analysis]:
    async with ctx.sessionmaker() as session:
        return {n: row for n, row in (await session.execute(
            select(Thread.number, Analysis).join(Analysis, Analysis.thread_id == Thread.id))).all()}


async def test_what_another_replica_stores_during_the_step_is_not_overwritten(ctx: Any) -> None:
    """The step read a batch of threads (their text and the version of their analysis), then
    analysed them one by one, for minutes, and wrote each finding over whatever the row held
    by then: a newer release's finding stored meanwhile on another replica (a rolling deploy),
    or this release's finding of an edit made meanwhile (a webhook), was overwritten with an
    analysis of the text as it was when the batch was read. The analysis thread is held
    while the other replica writes, so the write lands between the step's read and its write."""
    import asyncio
    import threading

    from sqlalchemy import event

    from bot.analysis import on_analysis_thread
    from bot.pipeline import _analysis_values
    from bot.scheduler import step_reanalyse

    versions = _versions()
    ids = await _store(ctx, {1: versions["older"], 2: versions["older"]})
    edited = {"title": REQUEST["title"], "body": REQUEST["body"]}  # thread 2, edited meanwhile
    read = asyncio.Event()

    def saw(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM comments" in statement:  # the step is about to analyse its first thread
            read.set()

    gate = threading.Event()
    held = on_analysis_thread(gate.wait, 30)
    event.listen(ctx.engine.sync_engine, "before_cursor_execute", saw)
    step = asyncio.ensure_future(step_reanalyse(ctx))
    try:
        await asyncio.wait_for(read.wait(), 30)
        newer = dict(analyze_thread(_record(1, REPORT)), analyzer_version=versions["newer"])
        fresh = analyze_thread(_record(2, edited))
        async with ctx.sessionmaker() as session:  # the other replica's writes
            one = await session.scalar(select(Analysis).where(Analysis.thread_id == ids[1]))
            for column, value in dict(_analysis_values(newer), analyzer_version=versions["newer"]).items():
                setattr(one, column, value)
            two = await session.get(Thread, ids[2])
            two.title, two.body = edited["title"], edited["body"]
            row = await session.scalar(select(Analysis).where(Analysis.thread_id == ids[2]))
            for column, value in _analysis_values(fresh).items():
                setattr(row, column, value)
            await session.commit()
    finally:
        gate.set()
        await held
        counts = await step
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", saw)
    got = await _stored(ctx)
    assert got[1].analyzer_version == versions["newer"]  # the newer release's, kept
    assert got[2].analyzer_version == ANALYZER_VERSION
    assert got[2].result["failure"] == fresh["failure"]  # of the edited text, not the old one
    assert not got[2].is_failure_report
    assert counts["reanalysed"] == 0, counts


async def _refuse_writes_for(ctx: Any, thread_id: int) -> None:
    """The database refuses to store this thread's analysis (as a value it cannot hold would):
    a failure of that one thread's re-analysis, made without touching the project's code."""
    from sqlalchemy import text

    async with ctx.engine.begin() as conn:
        if ctx.engine.dialect.name == "sqlite":
            for op in ("INSERT", "UPDATE"):
                await conn.execute(text(
                    f"CREATE TRIGGER refuse_{op.lower()} BEFORE {op} ON analyses "
                    f"WHEN NEW.thread_id = {thread_id} BEGIN SELECT RAISE(ABORT, 'refused'); END"))
        else:
            await conn.execute(text(
                "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.thread_id = {thread_id} THEN RAISE EXCEPTION 'refused'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"))
            await conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON analyses "
                                    "FOR EACH ROW EXECUTE FUNCTION refuse()"))


async def test_a_thread_whose_reanalysis_fails_is_recorded_and_the_rest_go_on(ctx: Any) -> None:
    """One thread whose re-analysis raised ended the step: the threads after it (in id order)
    were never re-analysed, that night and every night after, as the same thread failed
    first each time. Now it is recorded (the run says which and why), the others are done,
    it is tried again the next nights, and after MAX_ATTEMPTS failures under this analyzer
    version it is left out (a new version, or a change of the thread, tries it again)."""
    from bot import scheduler
    from bot.scheduler import step_reanalyse

    versions = _versions()
    ids = await _store(ctx, {1: versions["older"], 2: None, 3: versions["older"], 4: None})
    await _refuse_writes_for(ctx, ids[2])
    first = await step_reanalyse(ctx)
    assert first["reanalysed"] == 3
    assert [f["thread"] for f in first["failed"]] == [f"{REPO}#2"]
    assert "refused" in first["failed"][0]["error"]
    got = await _stored(ctx)
    assert {n: got[n].analyzer_version for n in (1, 3, 4)} == dict.fromkeys((1, 3, 4), ANALYZER_VERSION)
    assert 2 not in got
    for night in range(2, scheduler.MAX_ATTEMPTS + 1):  # the next nights try it again
        counts = await step_reanalyse(ctx)
        assert counts["reanalysed"] == 0 and len(counts["failed"]) == 1, (night, counts)
    counts = await step_reanalyse(ctx)  # then it is left out, and said so
    assert counts["reanalysed"] == 0 and counts["failed"] == [] and counts["given_up"] == 1, counts


async def test_a_night_whose_reanalysis_failed_on_a_thread_says_so(ctx: Any) -> None:
    ids = await _store(ctx, {1: None, 2: None})
    await _refuse_writes_for(ctx, ids[1])
    result = await nightly_job(ctx)
    assert result["outcome"] == "partial", result
    async with ctx.sessionmaker() as session:
        from bot.store.models import JobRun

        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
    assert run is not None and f"{REPO}#1" in (run.error or "")


async def test_an_interrupted_reanalysis_goes_on_where_it_stopped_in_bounded_batches(
        ctx: Any, monkeypatch: Any) -> None:
    """Stopped midway (a deploy), the next run re-analyses the threads not done and no thread
    it had stored; threads are read a batch of ids at a time (REANALYSE_BATCH), each stored
    and committed on its own."""
    import asyncio

    from sqlalchemy import event

    from bot import scheduler
    from bot.scheduler import step_reanalyse

    monkeypatch.setattr(scheduler, "REANALYSE_BATCH", 3)
    versions = _versions()
    numbers = range(1, 12)
    ids = await _store(ctx, {n: (versions["older"] if n % 2 else None) for n in numbers}
                       | {12: versions["newer"]})
    by_id = {i: n for n, i in ids.items()}
    writes: list[int] = []
    batches: list[Any] = []
    third = asyncio.Event()

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        text = statement.lstrip()
        if text.startswith(("UPDATE analyses", "INSERT INTO analyses")):
            # UPDATE ... WHERE thread_id = ? AND analyzer_version = ?; INSERT (thread_id, ...)
            writes.append(by_id[parameters[-2] if text.startswith("UPDATE") else parameters[0]])
            if len(writes) == 3:
                third.set()
        elif text.startswith("SELECT threads.id, analyses.analyzer_version"):
            batches.append(parameters)

    event.listen(ctx.engine.sync_engine, "after_cursor_execute", seen)
    try:
        task = asyncio.ensure_future(step_reanalyse(ctx))
        await asyncio.wait_for(third.wait(), 30)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        got = await _stored(ctx)
        first = {n for n in numbers if n in got and got[n].analyzer_version == ANALYZER_VERSION}
        assert 2 <= len(first) <= 3 and first <= set(writes)
        writes.clear()
        batches.clear()
        counts = await step_reanalyse(ctx)
    finally:
        event.remove(ctx.engine.sync_engine, "after_cursor_execute", seen)
    assert counts["reanalysed"] == 11 - len(first) and counts["newer_kept"] == 1, counts
    assert sorted(writes) == sorted(set(numbers) - first)  # each once, none of the first run's
    assert len(batches) == -(-(12 - len(first)) // 3) + 1  # 3 ids a batch, then an empty one
    got = await _stored(ctx)
    assert all(got[n].analyzer_version == ANALYZER_VERSION for n in numbers)
    assert got[12].analyzer_version == versions["newer"]


# ---------------------------------------------------------------------------- step order
async def test_a_failed_sync_still_lets_reanalysis_and_the_report_run_and_the_report_says_so(
        ctx: Any) -> None:
    """The steps run in order (sync, re-analysis, ..., report), each on its own: a sync that
    failed still lets the re-analysis and the report run on what is stored. The report was
    built as on any night: its "no changes" read as a quiet night, not as a night whose
    sync did not happen. It says so now, on the tracker page and in the posted Markdown."""
    from bot.scheduler import STEPS
    from bot.site.report import render_html, render_markdown

    async def sync_down(_ctx: Any) -> Any:  # a sync that failed (GitHub down all night)
        raise ConnectionError("cannot reach api.github.com")

    await _store(ctx, {1: _versions()["older"]})
    steps = [("sync", sync_down)] + [s for s in STEPS if s[0] != "sync"]
    result = await nightly_job(ctx, steps=steps)
    assert result["outcome"] == "failed"
    assert result["counts"]["reanalyse"]["reanalysed"] == 1
    assert result["counts"]["report"]["date"]
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert report.data["sync"] == {"failed": True, "refused": []}
    for text in (report.markdown, render_markdown(report.data), render_html(report.data)):
        assert "sync of this night failed" in text
        assert "api.github.com" not in text  # the error's words are not posted
    # A quiet night with a sync that ran says nothing of it.
    steps = [("sync", lambda _ctx: _async({"threads": 0}))] + [s for s in STEPS if s[0] != "sync"]
    async with ctx.sessionmaker() as session:
        await session.delete(report)
        await session.commit()
    await nightly_job(ctx, steps=steps)
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None and not report.data.get("sync")
    assert "sync of this night" not in report.markdown


async def _async(value: Any) -> Any:
    return value


async def test_a_report_after_a_sync_github_refused_in_part_names_the_repositories(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """App credentials only, installed on TRL: the night's sync could not read the six
    other repositories; the run said so, the report (the page people read) did not."""
    from bot.scheduler import step_report, step_sync
    from tests.fake_graphql import FakeData, FakeGraphQL
    from tests.fakegithub import install_app

    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(3, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.allow_anonymous = False
    await install_app(app_ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
    result = await nightly_job(app_ctx, steps=[("sync", step_sync), ("report", step_report)])
    assert result["outcome"] == "partial"
    async with app_ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert report.data["sync"]["failed"] is False
    assert "verl-project/verl" in report.data["sync"]["refused"]
    assert "huggingface/trl" not in report.data["sync"]["refused"]
    assert "`verl-project/verl`" in report.markdown and "could not be synced" in report.markdown


# ---------------------------------------------------------------------------- posted comments
async def test_a_reanalysis_that_changes_the_kind_leaves_the_posted_comment_and_label(
        app_ctx: Any, fake_github: Any) -> None:
    """docs/comments.md: the nightly re-analysis stores findings only. A failure comment
    posted for one kind (and the label the app added for it) stays as posted when a new
    analyzer version names another kind; the tracker shows the new finding. The author's
    edit of the issue or a `/rltracker kind` is what rewrites the comment and moves the label."""
    from bot.pipeline import thread_changed
    from bot.scheduler import step_reanalyse
    from tests.test_actions_e2e import FAILURE, VERL, app_comments, install, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "labels:\n  entropy_collapse: 'rl: entropy'\n  kl_growth: 'rl: kl'\n")
    payload = await open_issue(app_ctx, fake_github, 1, title=REPORT["title"], body=REPORT["body"])
    fresh = analyze_thread({**_record(1, REPORT), "repo": VERL})
    assert fresh["failure"]["category"] == "entropy_collapse"
    said = {**FAILURE, "failure": {**FAILURE["failure"], "category": "kl_growth",
                                   "categories": ["kl_growth"], "confidence": 0.95}}
    from bot.speaking.decide import act

    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=said)
    assert out["failure_comment"] == "posted"
    [posted] = app_comments(fake_github, VERL, 1)
    assert {"name": "rl: kl"} in fake_github.issue(VERL, 1)["labels"]
    async with app_ctx.sessionmaker() as session:  # what the older analyzer stored
        thread = await session.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 1))
        assert thread is not None
        session.add(Analysis(thread_id=thread.id, analyzer_version=_versions()["older"],
                             result=said, is_failure_report=True, failure_category="kl_growth"))
        await session.commit()
    writes = len([c for c in fake_github.calls if c.method in ("POST", "PATCH", "DELETE", "PUT")])

    assert (await step_reanalyse(app_ctx))["reanalysed"] == 1

    assert len([c for c in fake_github.calls if c.method in ("POST", "PATCH", "DELETE", "PUT")]) == writes
    assert app_comments(fake_github, VERL, 1) == [posted]
    assert {"name": "rl: kl"} in fake_github.issue(VERL, 1)["labels"]
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    assert row is not None and row.failure_category == "entropy_collapse"
    # A recheck does not rewrite it either (the slot is owned); the author's edit would.
    await thread_changed(app_ctx, VERL, 1, trigger="command")
    assert app_comments(fake_github, VERL, 1) == [posted]
    assert len([c for c in fake_github.calls if c.method in ("POST", "PATCH", "DELETE", "PUT")]) == writes


async def test_a_thread_deleted_while_it_is_analysed_is_no_failure(ctx: Any) -> None:
    """GitHub deleted the issue (a webhook removed the thread) while the step analysed it:
    its finding has nowhere to go; the step does not report it as a failed re-analysis nor
    store an orphan row, and goes on."""
    import asyncio
    import threading

    from sqlalchemy import delete, event

    from bot.analysis import on_analysis_thread
    from bot.scheduler import step_reanalyse

    ids = await _store(ctx, {1: None, 2: None})
    read = asyncio.Event()

    def saw(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM comments" in statement:
            read.set()

    gate = threading.Event()
    held = on_analysis_thread(gate.wait, 30)
    event.listen(ctx.engine.sync_engine, "before_cursor_execute", saw)
    step = asyncio.ensure_future(step_reanalyse(ctx))
    try:
        await asyncio.wait_for(read.wait(), 30)
        async with ctx.sessionmaker() as session:
            await session.execute(delete(Thread).where(Thread.id == ids[1]))
            await session.commit()
    finally:
        gate.set()
        await held
        counts = await step
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", saw)
    assert counts["failed"] == [] and counts["reanalysed"] == 1, counts
    got = await _stored(ctx)
    assert set(got) == {2}
    async with ctx.sessionmaker() as session:
        assert await session.scalar(select(Analysis).where(Analysis.thread_id == ids[1])) is None


async def test_no_transaction_is_held_while_the_next_thread_is_analysed(ctx: Any) -> None:
    """Thousands of threads take the step minutes: while it analyses a thread, nothing of the
    ones before is held (no PostgreSQL transaction left open, no row lock on `analyses`;
    SQLite's write lock free), so webhooks and other replicas write meanwhile. Probed while
    the second thread's analysis waits on the analysis thread."""
    import asyncio
    import sqlite3
    import threading

    from sqlalchemy import event, text

    from bot.analysis import on_analysis_thread
    from bot.config import sqlite_path
    from bot.scheduler import step_reanalyse

    await _store(ctx, {1: _versions()["older"], 2: _versions()["older"], 3: None})
    gate = threading.Event()
    second = asyncio.Event()
    held: list[Any] = []
    reads = 0

    def saw(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        nonlocal reads
        if "FROM comments" in statement:
            reads += 1
            if reads == 2:  # the first thread is stored; hold the second's analysis
                held.append(on_analysis_thread(gate.wait, 30))
                second.set()

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", saw)
    step = asyncio.ensure_future(step_reanalyse(ctx))
    try:
        await asyncio.wait_for(second.wait(), 30)
        if ctx.engine.dialect.name == "sqlite":
            path = sqlite_path(ctx.settings.database_url)
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")  # raises "database is locked" if it is held
                other.execute("ROLLBACK")
            finally:
                other.close()
        else:
            async with ctx.engine.connect() as conn:
                open_elsewhere = await conn.scalar(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"))
                locks = await conn.scalar(text(
                    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                    "WHERE c.relname = 'analyses' AND l.pid <> pg_backend_pid()"))
            assert (open_elsewhere, locks) == (0, 0)
    finally:
        gate.set()
        for h in held:
            await h
        counts = await step
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", saw)
    assert counts["reanalysed"] == 3
