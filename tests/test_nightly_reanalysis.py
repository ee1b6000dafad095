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
