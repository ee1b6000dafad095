"""What the app derived from a repository made private leaves with it (privacy62).

The nightly study step records its result (JobRun "study": each detected landing names the
merged pull request behind it); the nightly report lists the landings that record first saw,
and is posted as a comment. A framework repository (or a related one whose threads count)
made private between the study step and the report step, or once both ran, must not be named
by what the app stored or posted since. Driven through the `repository` webhook, the study's
nightly step and the report's build; GitHub through the fake server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.store.models import Analysis, JobRun, Report, Repository, Thread
from tests.test_private_repos import _repository_event, dispatch_all

FW = "OpenRLHF/OpenRLHF"  # a framework repository of the shipped catalog
KEY = f"{FW}#77"
# a thread of it, as a key or a page link (the catalog, project data, names the repository
# and its commits: that is no thread of it)
THREADS = ("openrlhf/openrlhf#", "threads/openrlhf/openrlhf/")


def names_a_thread(text: str) -> bool:
    return any(t in text.lower() for t in THREADS)


async def seed_merged_landing(ctx: Any) -> None:
    """A merged OpenRLHF pull request naming CISPO, which the catalog does not list for
    OpenRLHF: the study's nightly step records it as a detected landing."""
    async with ctx.sessionmaker() as session:
        session.add(Repository(full_name=FW, github_id=4242))
        thread = Thread(repo=FW, number=77, kind="pull_request", state="merged",
                        title="Add CISPO loss", closed_at=datetime(2025, 12, 1, tzinfo=UTC))
        session.add(thread)
        await session.flush()
        session.add(Analysis(thread_id=thread.id, analyzer_version="test", is_proposal=True,
                             review_state="merged", methods=["cispo"],
                             result={"review": {"state": "merged", "replied_from_other": True,
                                                "concerns": []}}))
        await session.commit()


async def study_records(ctx: Any) -> str:
    async with ctx.sessionmaker() as session:
        return json.dumps([r.counts for r in await session.scalars(
            select(JobRun).where(JobRun.name == "study"))])


async def test_forgetting_scrubs_the_studys_nightly_record(ctx: Any) -> None:
    """Study step, then `privatized`, then the report step: before, the stored study record
    kept the pull request's key and the report built after it listed it as a new landing."""
    from bot.site.report import build_report, render_markdown
    from bot.site.study import refresh_study

    await seed_merged_landing(ctx)
    done = await refresh_study(ctx)
    assert done["new_detected"] == ["cispo@openrlhf"]
    assert KEY in await study_records(ctx)

    await dispatch_all(ctx, "repository", _repository_event("privatized", FW, is_private=True,
                                                            rid=4242))
    assert not names_a_thread(await study_records(ctx))
    data = await build_report(ctx)
    assert not names_a_thread(json.dumps(data))
    assert not names_a_thread(render_markdown(data, "http://x"))


async def test_a_study_record_written_after_forgetting_is_not_listed(ctx: Any) -> None:
    """The study step read the threads before `privatized` and recorded its result after it
    (the record holds the key, nothing scrubs it again): the report must not list it."""
    from bot.site.report import build_report
    from bot.site.study import build_study, detected_since
    from bot.store.jobs import record_job_run
    from bot.store.types import utcnow

    await seed_merged_landing(ctx)
    async with ctx.sessionmaker() as session:
        study, _ = await build_study(session)  # the step's read, before the change
    await dispatch_all(ctx, "repository", _repository_event("privatized", FW, is_private=True,
                                                            rid=4242))
    from bot.site.study import _compact

    for x in study["landings"]:
        if x["detected"]:
            x["detected_at"] = "2026-12-04T03:00:00Z"
    await record_job_run(ctx, "study", None, started_at=utcnow(), finished_at=utcnow(),
                         outcome="ok", counts=_compact(study))
    assert KEY in await study_records(ctx)  # written after the scrub
    async with ctx.sessionmaker() as session:
        assert await detected_since(session, None) == []
    data = await build_report(ctx)
    assert not names_a_thread(json.dumps(data))


async def test_a_report_stored_after_forgetting_keeps_nothing_of_it(ctx: Any) -> None:
    """The report step read the threads before `privatized` and stored the report after
    it: its stored data and Markdown must not keep the repository's keys."""
    from bot.site.report import build_report, render_markdown, store_report

    await seed_merged_landing(ctx)
    data = await build_report(ctx)  # read before the change
    assert KEY in json.dumps(data)
    await dispatch_all(ctx, "repository", _repository_event("privatized", FW, is_private=True,
                                                            rid=4242))
    await store_report(ctx, data, render_markdown(data, "http://x") + f"\n`{KEY}`\n")
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
        assert report is not None
        assert not names_a_thread(json.dumps(report.data))
        assert not names_a_thread(report.markdown)
        assert await session.scalar(select(func.count()).select_from(Report)) == 1


# ---------------------------------------------------------------- a rename merging two rows
OLD, NEW = "someorg/old-name", "someorg/new-name"


@pytest.mark.parametrize(("marked", "stored_under"), [
    # The row dropped (no id, under the new name: `privatized` handled under that name
    # before the rename reached the id's row) is the marked one, the thread stored under the
    # former name: before, the mark was lost and the thread stayed published.
    (NEW, OLD),
    # The row kept (holding the id) is the marked one; the other, public, brings its thread
    # under the new name: before, it was stored under a repository marked private.
    (OLD, NEW),
], ids=["mark-on-the-row-dropped", "mark-on-the-row-kept"])
async def test_a_rename_merge_keeps_the_private_mark_and_forgets_the_threads(
        ctx: Any, marked: str, stored_under: str) -> None:
    """Two rows of one repository merged by a rename (the one holding its id under the former
    name, one under the new name without an id), one of them marked private: the merged row
    keeps the mark and no thread stays stored under it."""
    from bot.store.repositories import settle_repository

    async with ctx.sessionmaker() as session:
        session.add_all([Repository(full_name=OLD, github_id=555, private=marked == OLD),
                         Repository(full_name=NEW, private=marked == NEW),
                         Thread(repo=stored_under, number=3, kind="issue", title="Stored")])
        await session.commit()
    async with ctx.sessionmaker() as session:
        await settle_repository(session, NEW, 555, former=[OLD])
        await session.commit()
    async with ctx.sessionmaker() as session:
        [row] = list(await session.scalars(select(Repository)))
        assert (row.full_name, row.github_id, row.private) == (NEW, 555, True)
        assert await session.scalar(select(func.count()).select_from(Thread)) == 0


# ---------------------------------------------------------------- the marked row itself
async def test_a_marked_row_keeps_no_config_pause_reason_or_resumer(ctx: Any) -> None:
    """The row of a repository made private keeps its mark, its id and installation, not what
    was read from it: its `.github/rltracker.yml` (parsed, or the error quoting it), the pause
    reason the reception of the app's comments there gave, who lifted a pause there."""
    async with ctx.sessionmaker() as session:
        session.add(Repository(
            full_name=FW, github_id=4242, config={"comments": {"failure": False}},
            config_error="line 3: mapping values are not allowed here: `secret: [x`",
            config_fetched_at=datetime(2026, 12, 1, tzinfo=UTC), comments_paused=True,
            paused_reason="2 of 3 comments hidden (paused 2026-12-01)",
            resumed_by="@maintainer", resumed_at=datetime(2026, 11, 30, tzinfo=UTC)))
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", FW, is_private=True,
                                                            rid=4242))
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository))
        assert row is not None and row.private is True and row.github_id == 4242
        assert (row.config, row.config_error, row.config_fetched_at) == (None, None, None)
        assert "hidden" not in (row.paused_reason or "")
        assert (row.resumed_by, row.resumed_at) == (None, None)


# ---------------------------------------------------------------- a report already posted
async def test_a_posted_report_naming_a_repository_made_private_is_edited(
        app_ctx: Any, fake_github: Any) -> None:
    """Night one's report posted on the report issue names TRL's proposals; TRL is made
    private; the next report run edits night one's comment (one PATCH) to drop them: before,
    the stored report was scrubbed and the posted comment kept naming them. A comment
    deleted on GitHub since is not posted anew."""
    import dataclasses

    from bot.site.report import run_report
    from bot.store.models import Action
    from tests.test_report import DAY1, DAY2, T, report_issue_with_night_one

    ctx = app_ctx
    await report_issue_with_night_one(ctx, fake_github)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    [night] = fake_github.comments_of("tracker-org/tracker", 1)
    assert f"{T}#12" in night["body"]
    fake_github.private_repos.add(T.lower())  # GitHub says so when the app asks
    await dispatch_all(ctx, "repository", _repository_event("privatized", T, is_private=True,
                                                            rid=9191))
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.kind == "report"))
        assert action is not None and f"{T}#" not in (action.body or "")
    patches = len(fake_github.requests("PATCH", r"/issues/comments/\d+$"))

    ctx.settings = dataclasses.replace(ctx.settings, public_url="http://tracker.test")
    assert (await run_report(ctx, DAY2))["posted"] == "posted"
    first, second = fake_github.comments_of("tracker-org/tracker", 1)
    assert first["id"] == night["id"] and f"<!-- rltracker:report:{DAY1} -->" in first["body"]
    assert f"{T}#" not in first["body"] and f"threads/{T}/" not in first["body"]
    assert f"{T}#" not in second["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+$")) == patches + 1
    # once edited, not again
    await run_report(ctx, DAY2)
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+$")) == patches + 2  # DAY2's own


async def test_a_stored_reports_markdown_loses_the_whole_section_of_a_framework_made_private(
        ctx: Any) -> None:
    """Before, the heading of the framework's section went and its lines stayed, read as the
    previous framework's; a waiting list kept the days of each link it lost ("15.5 d")."""
    trl = "huggingface/trl"
    markdown = (
        "## Nightly report\n"
        "### verl (`verl-project/verl`)\n"
        "- Waiting for any reply: [`verl-project/verl#1`](http://x/threads/verl-project/verl/1)"
        f" 3.5 d, [`{trl}#2`](http://x/threads/{trl}/2) 15.5 d.\n"
        f"### TRL (`{trl}`)\n- Proposals: 3 (open 2).\n- Failure reports of the day: kl growth 2.\n"
        "### OpenRLHF (`OpenRLHF/OpenRLHF`)\n- Proposals: 1.\n")
    async with ctx.sessionmaker() as session:
        session.add(Report(date="2026-12-01", markdown=markdown, data={}))
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", trl, is_private=True,
                                                            rid=9191))
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert trl not in report.markdown and ".5 d." not in report.markdown
    assert "Proposals: 3" not in report.markdown and "kl growth" not in report.markdown
    assert "### OpenRLHF (`OpenRLHF/OpenRLHF`)\n- Proposals: 1.\n" in report.markdown
    assert "verl-project/verl#1`](http://x/threads/verl-project/verl/1) 3.5 d" in report.markdown


async def test_forgetting_scrubs_every_job_runs_counts(ctx: Any) -> None:
    """The nightly run's counts name the repositories it synced (threads per repository, its
    failed streams "owner/name:kind"); an install preview's name each repository with what
    its config read said (a YAML error quotes the file). Before, only the threads went."""
    secret = "someorg/secret-repo"
    async with ctx.sessionmaker() as session:
        session.add_all([
            JobRun(name="nightly", outcome="partial", counts={"sync": {
                "repos": {secret: 3, "a/b": 1}, "failed_streams": [f"{secret}:issue", "a/b:pr"]}}),
            JobRun(name="install_preview", outcome="ok", counts={"repos": {
                secret: {"config": "failed: line 2: `token: hunter2`"}, "a/b": {"config": "ok"}},
                "skipped": []})])
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", secret, is_private=True))
    async with ctx.sessionmaker() as session:
        runs = {r.name: r.counts for r in await session.scalars(select(JobRun))}
    assert secret not in json.dumps(runs)
    assert runs["nightly"] == {"sync": {"repos": {"a/b": 1}, "failed_streams": ["a/b:pr"]}}
    assert runs["install_preview"]["repos"] == {"a/b": {"config": "ok"}}


async def test_a_scrubbed_reports_totals_count_what_it_lists(ctx: Any) -> None:
    """Before, the report kept "new proposals 2" and "1 new landing" (the list page shows both)
    after the repository's proposal and landing left its lists."""
    secret = "someorg/secret-repo"
    async with ctx.sessionmaker() as session:
        session.add(Report(date="2026-12-01", markdown="# Report\n", data={
            "totals": {"new_proposals": 2, "merged": 0}, "new_landings": 1,
            "frameworks": {"x": {
                "changes": {"new_proposals": [{"key": f"{secret}#5"}, {"key": "a/b#1"}],
                            "merged": []},
                "new_landings": [{"method": "m", "pull_request": f"{secret}#7"}]}}}))
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", secret, is_private=True))
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert report.data["totals"] == {"new_proposals": 1, "merged": 0}
    assert report.data["new_landings"] == 0


async def test_a_posted_report_deleted_on_github_is_not_posted_again_to_redact_it(
        app_ctx: Any, fake_github: Any) -> None:
    """Night one's comment deleted on GitHub before the edit: nothing is posted anew for it
    (the next night's report is posted, once), and it is not tried again."""
    import dataclasses

    from bot.site.report import redact_posted_reports, run_report
    from tests.test_report import DAY1, DAY2, T, report_issue_with_night_one

    ctx = app_ctx
    await report_issue_with_night_one(ctx, fake_github)
    await run_report(ctx, DAY1)
    [night] = fake_github.comments_of("tracker-org/tracker", 1)
    del fake_github.comments[night["id"]]
    fake_github.private_repos.add(T.lower())
    await dispatch_all(ctx, "repository", _repository_event("privatized", T, is_private=True,
                                                            rid=9191))
    ctx.settings = dataclasses.replace(ctx.settings, public_url="http://tracker.test")
    summary = await run_report(ctx, DAY2)
    assert summary["posted"] == "posted" and summary.get("redacted") == 1
    [second] = fake_github.comments_of("tracker-org/tracker", 1)
    assert f"rltracker:report:{DAY2}" in second["body"]
    assert await redact_posted_reports(ctx) == 0


async def test_a_config_read_finishing_after_forget_stores_nothing(
        app_ctx: Any, fake_github: Any) -> None:
    """A read of `.github/rltracker.yml` that finishes once the repository is marked private
    (begun before `privatized`: the preview, a decision) stored the file's settings on the
    marked row again, after `forget` had cleared them."""
    from bot.speaking.repo_config import get_repo_config
    from bot.store.privacy import forget_repository
    from tests.test_actions_e2e import INST, VERL, install

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 0.9\n")
    async with app_ctx.sessionmaker() as session:
        await forget_repository(session, VERL)
        await session.commit()
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == VERL))
    assert row is not None and row.private is True
    assert (row.config, row.config_error, row.config_fetched_at) == (None, None, None)
