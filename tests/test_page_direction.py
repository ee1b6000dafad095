"""security79: GitHub's text holding a direction control, on every page that shows it.

test_page_safety.py checks a thread's title, labels, a linked paper's title and cue words on
four pages. Here every field of GitHub's text a page can show holds an unclosed override
(RLO): the title, the author's login, who closed it and who chose its answer, its labels, a
verdict's login, a repository's name (an installed one with such a name can only come from a
stored record or an import: GitHub allows none, the page isolates it all the same), who
resumed a repository, and a linked paper's title; each HTML page that lists them is read and
each text run holding RLO must sit in an element that isolates its direction (<bdi>, or one
with a `dir` attribute) or be the page's <title> (where `plain_title` wraps the text in FSI
and PDI). SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sqlalchemy import select

from tests.test_page_safety import RLO, _Isolation, _override_everywhere
from tests.test_thread_page import _client

ODD_REPO = f"hugging{RLO}face/trl-fork"


async def _override_in_every_field(ctx: Any) -> None:
    from bot.store.models import Action, Analysis, Paper, Repository, Thread, Verdict
    from bot.store.threads import upsert_thread
    from tests.test_site import THREADS

    await _override_everywhere(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        thread = await session.scalar(select(Thread).where(Thread.repo == "huggingface/trl",
                                                           Thread.number == 8))
        assert thread is not None
        thread.author = f"bob{RLO}by"
        thread.closed_by = f"ali{RLO}ce"
        thread.answer_chosen_by = f"car{RLO}ol"
        session.add(Verdict(thread_id=thread.id, category="entropy_collapse", is_failure_report=True,
                            login=f"mall{RLO}ory", role="maintainer"))
        # a settings file's problem quotes the file (a key holding an override, docs80's find)
        session.add(Repository(full_name=ODD_REPO, installation_id=5, resumed_by=f"dav{RLO}e",
                               config_error=f"unknown setting 'dai{RLO}ly'"))
        odd = await upsert_thread(session, {"repo": ODD_REPO, "number": 1, "kind": "issue",
                                            "title": "KL grows", "state": "open",
                                            "author": f"er{RLO}in"})
        record, result = THREADS[3]  # trl#8's analysis: a failure report
        session.add(Analysis(thread_id=odd.id, analyzer_version="test", result=result,
                             is_failure_report=True, failure_category="entropy_collapse",
                             is_proposal=False, review_state="open_no_reply"))
        session.add(Paper(arxiv_id="2599.00001", title=f"A {RLO}paper on entropy",
                          method="clip-higher", first_public="2025-01-01"))
        session.add(Action(repo=ODD_REPO, number=1, kind="failure_comment", status="posted",
                           dedupe_key="odd", body="…"))


PAGES = ["/", "/failures/entropy_collapse", "/threads/huggingface/trl/8",
         "/repos/huggingface/trl/preview", "/proposals", "/verdicts", "/repos/",
         "/methods/clip-higher", "/frameworks/trl", "/study", f"/threads/{quote(ODD_REPO)}/1",
         f"/repos/{quote(ODD_REPO)}/preview"]


async def test_github_text_in_every_field_is_isolated_on_every_page(ctx: Any) -> None:
    client = await _client(ctx)
    await _override_in_every_field(ctx)
    try:
        bare: dict[str, list[str]] = {}
        for path in PAGES:
            resp = await client.get(path)
            assert resp.status == 200, path
            parser = _Isolation()
            parser.feed(await resp.text())
            found = [run for run, isolated in parser.runs if not isolated]
            if found:
                bare[path] = found
        assert not bare, "\n".join(f"{k}: {v!r}" for k, v in bare.items())
    finally:
        await client.close()


async def test_names_in_the_nightly_report_page_are_isolated(ctx: Any) -> None:
    """The report page named a resumed repository, who resumed it and a paused repository in
    bare <code> (which isolates nothing): an override in one reversed the rest of its line.
    Names that are ASCII, as GitHub's are, stay as they were."""
    from bot.site.report import render_html, run_report
    from bot.store.models import Installation, Report, Repository
    from bot.store.types import utcnow
    from tests.test_report import DAY1, DAY2, night_one

    await night_one(ctx)
    await run_report(ctx, DAY1)
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Installation(id=97, account="settings-owner"))
        session.add_all([
            Repository(full_name=ODD_REPO, comments_paused=False, resumed_by=f"@ma{RLO}ya",
                       resumed_at=utcnow()),
            Repository(full_name=f"open{RLO}rlhf/x", comments_paused=True,
                       paused_reason="2 of the app's last 2 comments were hidden"),
            # a settings file the app cannot use (user79's list, in the page and the post)
            Repository(full_name=f"sett{RLO}ings/y", installation_id=97, private=False,
                       config_error=f"dai{RLO}ly_budget must be a whole number")])
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
    assert row is not None
    parser = _Isolation()
    parser.feed(render_html(row.data))
    assert len(parser.runs) >= 3 and all(isolated for _, isolated in parser.runs), parser.runs
    # the Markdown the report posts on GitHub: its code spans isolate nothing
    assert RLO not in row.markdown and "huggingface/trl-fork" in row.markdown
    assert "`settings/y`: its `.github/rltracker.yml` could not be used" in row.markdown
