"""What `forget` (a repository made private) left behind before edges62, on SQLite and
PostgreSQL, driven through the `repository` webhook: a job run's free-text `error` (and the
free-text errors inside its counts) naming the repository or its threads."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from bot.store.models import JobRun
from tests.test_private_repos import _repository_event, dispatch_all

SECRET = "someorg/Secret-Repo"


async def test_forgetting_scrubs_the_job_runs_free_text_errors(ctx: Any) -> None:
    async with ctx.sessionmaker() as session:
        session.add_all([
            JobRun(name="nightly", outcome="partial",
                   error="GitHub refused the sync of someorg/secret-repo, a/b; the re-analysis "
                         "of 2 thread(s) failed: someorg/secret-repo#5, a/b#1",
                   counts={"sync": {"error": "SyncFailed: someorg/secret-repo issue: 502",
                                    "repos": {"a/b": 1}}}),
            JobRun(name="install_preview", outcome="failed",
                   error="someorg/Secret-Repo sync: SyncFailed: 502; a/b preview: KeyError: 'x'",
                   counts={"repos": {"a/b": {"preview": "failed: KeyError"}}}),
            JobRun(name="nightly", outcome="ok", error=None, counts={"sync": {"repos": {"a/b": 2}}}),
            # a name that only starts like it is another repository
            JobRun(name="nightly", outcome="partial", error="GitHub refused the sync of "
                   "someorg/secret-repository", counts=None)])
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    async with ctx.sessionmaker() as session:
        runs = list(await session.scalars(select(JobRun).order_by(JobRun.id)))
    for run in runs[:3]:
        text = json.dumps([run.error, run.counts]).lower()
        assert "secret-repo" not in text, text
    assert runs[0].error == ("GitHub refused the sync of (a private repository), a/b; the "
                             "re-analysis of 2 thread(s) failed: (a private repository), a/b#1")
    assert runs[0].counts == {"sync": {"error": "SyncFailed: (a private repository) issue: 502",
                                       "repos": {"a/b": 1}}}
    assert runs[1].error == "(a private repository) sync: SyncFailed: 502; a/b preview: KeyError: 'x'"
    assert runs[2].error is None and runs[2].counts == {"sync": {"repos": {"a/b": 2}}}
    assert runs[3].error == "GitHub refused the sync of someorg/secret-repository"


async def _verdict(session: Any, repo: str, number: int, *, said: bool, person: bool,
                   category: str | None = "entropy_collapse") -> None:
    from bot.store.models import Thread, Verdict

    thread = Thread(repo=repo, number=number, kind="issue", title="t")
    session.add(thread)
    await session.flush()
    session.add(Verdict(thread_id=thread.id, is_failure_report=person,
                        category=category if person else None, login="m", role="maintainer",
                        analyzer_version="-47", analyzer_is_failure_report=said,
                        analyzer_category="entropy_collapse" if said else None))


def _agreement_section(markdown: str) -> str:
    start = markdown.index("### The failure analyzer against people's verdicts")
    end = markdown.find("\n#", start + 1)
    return markdown[start:] if end < 0 else markdown[start:end]


async def test_a_stored_reports_agreement_no_longer_counts_the_repositorys_verdicts(ctx: Any) -> None:
    """The report's "failure analyzer against people's verdicts" counts every stored verdict:
    after `forget`, a stored report still counted the repository's (its page and Markdown:
    "3 verdicts; called a failure report 3 ..."). The figures are now those of the verdicts
    left, as a report built after `forget` counts them."""
    from datetime import date

    from bot.site.report import build_report, render_markdown, store_report
    from bot.store.models import Report

    async with ctx.sessionmaker() as session:
        await _verdict(session, SECRET, 1, said=True, person=True)
        await _verdict(session, SECRET, 2, said=True, person=False)
        await _verdict(session, "a/b", 3, said=True, person=True, category="kl_growth")
        await _verdict(session, "a/b", 4, said=False, person=False)
        await session.commit()
    day = date(2026, 12, 1)
    data = await build_report(ctx, day)
    assert data["agreement"][-1]["verdicts"] == 4
    await store_report(ctx, data, render_markdown(data, "https://t.example"))
    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    fresh = await build_report(ctx, day)
    assert fresh["agreement"][-1]["verdicts"] == 2
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert report.data["agreement"] == fresh["agreement"]
    assert _agreement_section(report.markdown) == _agreement_section(
        render_markdown(fresh, "https://t.example"))


async def test_a_report_left_with_no_verdict_loses_the_agreement_section(ctx: Any) -> None:
    from datetime import date

    from bot.site.report import build_report, render_markdown, store_report
    from bot.store.models import Report

    async with ctx.sessionmaker() as session:
        await _verdict(session, SECRET, 1, said=True, person=True)
        await session.commit()
    data = await build_report(ctx, date(2026, 12, 1))
    await store_report(ctx, data, render_markdown(data, "https://t.example"))
    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None and report.data["agreement"][-1]["verdicts"] == 0
    assert "people's verdicts" not in report.markdown
    assert report.markdown.rstrip().endswith("</sub>")


async def test_a_posted_reports_agreement_is_edited_too(ctx: Any) -> None:
    """The report posted on GitHub (its claim's `body`, the text posted) kept the figures
    counting the repository's verdicts: it is rewritten so and flagged to be edited on GitHub
    (REDACT: `redact_posted_reports`, the next report run), as for a report naming it."""
    from datetime import date

    from bot.site.report import build_report, render_markdown, store_report
    from bot.store.models import Action
    from bot.store.privacy import REDACT

    async with ctx.sessionmaker() as session:
        await _verdict(session, SECRET, 1, said=True, person=True)
        await _verdict(session, "a/b", 3, said=True, person=False)
        await session.commit()
    day = date(2026, 12, 1)
    data = await build_report(ctx, day)
    markdown = render_markdown(data, "https://t.example")
    await store_report(ctx, data, markdown)
    async with ctx.sessionmaker() as session:
        session.add(Action(repo="o/reports", number=1, kind="report", status="posted",
                           dedupe_key=f"report:{day.isoformat()}", comment_id=99, body=markdown,
                           details={"run": 1}))
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    fresh = render_markdown(await build_report(ctx, day), "https://t.example")
    async with ctx.sessionmaker() as session:
        claim = await session.scalar(select(Action).where(Action.kind == "report"))
    assert claim is not None and claim.details.get(REDACT) is True
    assert _agreement_section(claim.body) == _agreement_section(fresh)
