"""A settings file the app cannot use is seen without a recheck (user79).

The app gets no push events: a maintainer's `.github/rltracker.yml` that does not parse, or
names settings the app does not know, was said only when someone wrote `/rltracker recheck`
(or in a log line and a skip on /api/actions when the app was about to comment there). Now
the nightly job reads every installed repository's file again (step `settings`), and the
problem is shown where the app already shows a repository: the repositories page (/repos/,
/api/repos, the front page's table) and the night's report (the problem on the tracker's
page; in the Markdown posted on GitHub only the repository's name and a link, since the
problem quotes the file). Nothing is said on the repository's issues. The installation event
(GitHub's own `installation.created` payload) reads the file too: /repos/ shows it at once.
The fake GitHub over HTTP; SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.scheduler import nightly_job, step_report, step_settings
from bot.speaking.preview import wait_background
from bot.store.models import Action, JobRun, Report, Repository
from tests.test_actions_e2e import INST, VERL, install
from tests.test_install_preview import created_payload, deliver, verl_world, writes

__all__ = ["verl_world"]  # the fixture, used below

BROKEN = "failure-comments: false\nmin_confidence: 7\n\"<b>x</b>\": 1\n"


async def test_the_problem_line_names_every_setting_that_still_holds(
        app_ctx: Any, fake_github: Any) -> None:
    """An invalid file's lower daily_budget holds (ConfigError's opt-outs), and the preview
    applied it, while the line said only failure_comments, rule_summaries and dry_run held
    ("the defaults apply (except ...)"): the budget shown beside it contradicted it. Failed
    on main."""
    from bot.speaking.preview import compute_preview
    from bot.speaking.repo_config import get_repo_config

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 1\nbogus: 2\n")
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    assert config.source == "invalid" and config.daily_budget == 1
    preview = await compute_preview(app_ctx, VERL)
    assert preview["budget"] == 1
    assert "a lower daily_budget or a higher min_confidence" in preview["config_problem"]


async def _get(ctx: Any, path: str) -> tuple[int, str]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.get(path)
        return resp.status, await resp.text()


async def _row(ctx: Any) -> Repository:
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == VERL))
        assert row is not None
        return row


async def test_the_night_reads_the_settings_file_and_shows_its_problem(
        app_ctx: Any, fake_github: Any) -> None:
    """Failed on main: no `settings` step, so nothing read the file; /repos/ and the report
    said nothing of it."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", BROKEN)
    result = await nightly_job(app_ctx, steps=[("settings", step_settings), ("report", step_report)])
    assert result["outcome"] == "ok"
    async with app_ctx.sessionmaker() as session:
        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
        report = await session.scalar(select(Report))
        skips = list(await session.scalars(select(Action).where(Action.kind == "config")))
    assert run is not None and run.counts["settings"] == {
        "read": 1, "invalid": 1, "failed": 0, "deferred": 0}
    row = await _row(app_ctx)
    assert row.config_error and "failure-comments (did you mean failure_comments?)" in row.config_error
    assert len(skips) == 1  # the one skip per problem, as before

    # The report: the problem on the tracker's page (escaped); in the Markdown posted on
    # GitHub, the repository and a link, nothing quoted from the file.
    assert report is not None and report.data["settings"] == [{"repo": VERL, "error": row.config_error}]
    assert "### Settings files the app cannot use" in report.markdown
    assert f"- `{VERL}`: its `.github/rltracker.yml` could not be used" in report.markdown
    assert "/repos/)" in report.markdown
    assert "failure-comments" not in report.markdown and "<b>" not in report.markdown
    status, html = await _get(app_ctx, f"/reports/{report.date}")
    assert status == 200 and 'id="settings"' in html
    assert "failure-comments (did you mean failure_comments?)" in html
    assert "<b>x</b>" not in html

    # The repositories page and its JSON say it, with what the app does meanwhile.
    status, html = await _get(app_ctx, "/repos/")
    assert status == 200
    assert ".github/rltracker.yml could not be used, so the defaults apply" in html
    assert "failure-comments (did you mean failure_comments?)" in html and "<b>x</b>" not in html
    status, body = await _get(app_ctx, "/api/repos")
    [listed] = json.loads(body)
    assert "min_confidence must be a number from 0 to 1" in listed["settings_problem"]

    # Said on no issue: the night posts nothing on the repository; a second night reading
    # the same file records no second skip.
    await nightly_job(app_ctx, steps=[("settings", step_settings)])
    async with app_ctx.sessionmaker() as session:
        assert len(list(await session.scalars(select(Action).where(Action.kind == "config")))) == 1
    assert writes(fake_github) == []

    # Fixed, the next night's read clears it everywhere.
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    await nightly_job(app_ctx, steps=[("settings", step_settings), ("report", step_report)])
    assert (await _row(app_ctx)).config_error is None
    status, html = await _get(app_ctx, "/repos/")
    assert "could not be used" not in html
    async with app_ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None and report.data["settings"] == []
    assert "Settings files the app cannot use" not in report.markdown


async def test_a_spent_or_suspended_installation_is_not_read(app_ctx: Any, fake_github: Any) -> None:
    """The webhooks' REST reserve is kept (deferred), and a suspended installation, whose
    token GitHub refuses, is not asked; neither makes the night fail."""
    from bot.store.models import Installation

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", BROKEN)
    # GitHub said this installation has 10 requests left (one answer teaches the client)
    fake_github.core_left[INST] = 10
    await (await app_ctx.github.api(INST)).getitem(f"/repos/{VERL}")
    result = await nightly_job(app_ctx, steps=[("settings", step_settings)])
    assert result["outcome"] == "ok"
    async with app_ctx.sessionmaker() as session:
        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
        assert run is not None and run.counts["settings"]["deferred"] == 1
        installation = await session.get(Installation, INST)
        assert installation is not None
        installation.suspended = True
        await session.commit()
    assert (await _row(app_ctx)).config_error is None  # not read
    fake_github.core_left.clear()
    result = await nightly_job(app_ctx, steps=[("settings", step_settings)])
    async with app_ctx.sessionmaker() as session:
        runs = list(await session.scalars(select(JobRun).where(JobRun.name == "nightly")
                                          .order_by(JobRun.id)))
    assert runs[-1].counts["settings"] == {"read": 0, "invalid": 0, "failed": 0, "deferred": 0}
    assert not fake_github.requests("GET", r"/contents/")


async def test_a_settings_file_github_fails_to_serve_makes_the_night_partial(
        app_ctx: Any, fake_github: Any) -> None:
    """A read that fails (GitHub's 500s) is counted and named in the run's error; what was
    read before stays on the row."""
    await install(app_ctx, fake_github)
    fake_github.fail_next("GET", r"/contents/\.github", 500, times=50)
    result = await nightly_job(app_ctx, steps=[("settings", step_settings)])
    assert result["outcome"] == "partial"
    async with app_ctx.sessionmaker() as session:
        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
    assert run is not None and run.counts["settings"]["failed"] == 1
    assert "the settings files of 1 repository(ies) could not be read" in (run.error or "")


async def test_the_installation_event_shows_the_problem_on_the_repositories_page(
        app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path) -> None:
    """GitHub's installation.created payload: the install preview reads the file; its
    problem was on the preview page only, which /repos/ links once a thread is stored.
    Failed on main: /repos/ said "commenting" and nothing of the file."""
    fake_github.set_file(VERL, ".github/rltracker.yml", BROKEN)
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1
    status, html = await _get(app_ctx, "/repos/")
    assert status == 200
    assert ".github/rltracker.yml could not be used" in html
    assert "min_confidence must be a number from 0 to 1" in html
    assert writes(fake_github) == []


async def test_no_app_credentials_skips_the_step(ctx: Any) -> None:
    """A token-only (or no-GitHub) service cannot read an installation's files: said, not failed."""
    result = await nightly_job(ctx, steps=[("settings", step_settings)])
    assert result["outcome"] == "ok"
    async with ctx.sessionmaker() as session:
        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
    assert run is not None and str(run.counts["settings"]).startswith("skipped: no app credentials")
