"""`/rltracker methods` with no kind named (user72). It answered "Not a failure kind rltracker
knows": the person had named none, and the thread's own kind was at hand. Now it answers with
the kind the tracker shows for the thread (a person's verdict where there is one, else the
analyzer's finding, as `bot.store.verdicts.shown_failure` says); a thread with none gets a
note saying so and how to name one, never "not a failure kind". The real
`issue_comment.created` payload from ../shared/fixtures/webhooks/, GitHub is
tests/fakegithub.py over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.store.models import Action, Analysis, Thread
from bot.store.verdicts import set_verdict
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import FAILURE, NOT_FAILURE, VERL, install, open_issue
from tests.test_app_comment_author import comment_payload
from tests.test_commands import note_replies


def replies_of(fake: Any, number: int) -> list[dict[str, Any]]:
    """The app's replies to commands on VERL#`number`, its notes left out."""
    return [c for c in fake.comments_of(VERL, number) if "<!-- rltracker:reply-to:" in c["body"]]


async def _thread_with(ctx: Any, fake: Any, number: int, analysis: dict[str, Any] | None,
                       author: str) -> None:
    await open_issue(ctx, fake, number, user=author)
    if analysis is None:
        return
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == number))
        failure = analysis["failure"]
        s.add(Analysis(thread_id=thread.id, analyzer_version="t", result=analysis,
                       is_failure_report=failure["is_failure_report"],
                       failure_category=failure["category"]))
        await s.commit()


async def _a_maintainers_verdict(ctx: Any, number: int, is_failure: bool,
                                 kind: str | None) -> None:
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == number))
        await set_verdict(s, thread, is_failure_report=is_failure, category=kind,
                          login="maint", role="maintainer", comment_id=5)
        await s.commit()


async def _ask(ctx: Any, shared_dir: Path, number: int, comment_id: int, body: str) -> dict:
    data = comment_payload(shared_dir, number, comment_id, body)
    await commands_router.dispatch(
        sansio.Event(data, event="issue_comment", delivery_id=f"methods-{comment_id}"), ctx)
    return data


KL_GROWTH = {**FAILURE, "failure": {**FAILURE["failure"], "category": "kl_growth",
                                    "categories": ["kl_growth"]}}


@pytest.mark.parametrize("analysis, verdict, kind", [
    (FAILURE, None, "entropy_collapse"),          # the analyzer's finding
    (FAILURE, (True, "kl_growth"), "kl_growth"),  # a person's kind over the analyzer's
    (NOT_FAILURE, (True, "kl_growth"), "kl_growth"),
])
async def test_methods_without_a_kind_answers_for_the_threads_own_kind(
        app_ctx: Any, fake_github: Any, shared_dir: Path, analysis: dict[str, Any],
        verdict: tuple[bool, str] | None, kind: str) -> None:
    """Failed on main: a note "Not a failure kind rltracker knows" and no methods."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 7, 1, "")["issue"]["user"]["login"]
    await _thread_with(app_ctx, fake_github, 7, analysis, author)
    if verdict is not None:
        await _a_maintainers_verdict(app_ctx, 7, *verdict)
    await _ask(app_ctx, shared_dir, 7, 920001, "Which knobs help here?\n/rltracker methods")
    assert note_replies(fake_github, 7) == []
    [reply] = replies_of(fake_github, 7)
    assert f"/failures/{kind}" in reply["body"], reply["body"]
    assert "Not a failure kind" not in reply["body"]
    # the same answer as naming the kind
    await _ask(app_ctx, shared_dir, 7, 920002, f"/rltracker methods {kind}")
    first, named = replies_of(fake_github, 7)
    assert first["body"].replace("920001", "920002") == named["body"]


@pytest.mark.parametrize("analysis, verdict", [
    (None, None),                # not analysed (yet)
    (NOT_FAILURE, None),         # no failure report, says the analyzer
    (FAILURE, (False, None)),    # a person said it is none
])
async def test_methods_without_a_kind_on_a_thread_of_none_says_how_to_name_one(
        app_ctx: Any, fake_github: Any, shared_dir: Path, analysis: dict[str, Any] | None,
        verdict: tuple[bool, None] | None) -> None:
    """Failed on main: "Not a failure kind rltracker knows" (nothing was named). The note says
    the thread has no kind and how to name one; an edit naming one is answered."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 8, 1, "")["issue"]["user"]["login"]
    await _thread_with(app_ctx, fake_github, 8, analysis, author)
    if verdict is not None:
        await _a_maintainers_verdict(app_ctx, 8, *verdict)
    data = await _ask(app_ctx, shared_dir, 8, 920003, "/rltracker methods")
    assert replies_of(fake_github, 8) == []
    [note] = note_replies(fake_github, 8)
    body = note["body"]
    assert "Not a failure kind" not in body
    assert "no failure kind" in body and "`/rltracker methods <failure>`" in body, body
    assert "`entropy_collapse`" in body and "Edit your comment" in body
    async with app_ctx.sessionmaker() as s:
        codes = [a.details.get("code") for a in await s.scalars(
            select(Action).where(Action.number == 8, Action.status == "skipped"))]
    assert codes == ["no_kind:920003"]
    # an edit naming a kind is answered
    edited = {**data, "action": "edited", "changes": {"body": {"from": "/rltracker methods"}},
              "comment": {**data["comment"], "body": "/rltracker methods kl-growth"}}
    await commands_router.dispatch(
        sansio.Event(edited, event="issue_comment", delivery_id="methods-edit"), app_ctx)
    [reply] = replies_of(fake_github, 8)
    assert "/failures/kl_growth" in reply["body"]
