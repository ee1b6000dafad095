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
