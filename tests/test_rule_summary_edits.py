"""The rule summary after the proposal is edited (speak62): the reply names earlier proposals
of the paper or method the thread proposes, so an edit that changes what it proposes
rewrites it, as an edit of a report rewrites the failure comment; and, as that comment, not
once a maintainer replied after it, nor after a person edited it on GitHub. A change of the
framework's rules alone rewrites nothing posted (a reply states the rules as they were when
it was posted; the tracker's framework page has them now). Against the fake GitHub server,
on SQLite and PostgreSQL. Short project-written threads only."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.speaking.decide import act
from bot.speaking.render import RULES_MARKER
from bot.store.models import Analysis
from bot.store.threads import upsert_comment, upsert_thread
from tests.test_actions_e2e import (
    PROPOSAL,
    TRL,
    VERL,
    actions_of,
    app_comments,
    hold_first_comments_read,
    install,
    iso,
    open_issue,
)

CISPO = {"arxiv_id": "2506.13585", "title": "MiniMax-M1", "method": "cispo", "how": "method_name",
         "score": 1.0}


def proposing(paper: dict[str, Any]) -> dict[str, Any]:
    analysis = copy.deepcopy(PROPOSAL)
    analysis["papers"] = [paper]
    return analysis


async def earlier_of_both(ctx: Any) -> None:
    """A merged GSPO proposal in TRL and a declined CISPO one in TRL, both long before."""
    now = datetime.now(UTC)
    async with ctx.sessionmaker() as s:
        for number, methods, arxiv, state in ((301, ["gspo"], ["2507.18071"], "merged"),
                                              (302, ["cispo"], ["2506.13585"], "declined")):
            t = await upsert_thread(s, {"repo": TRL, "number": number, "kind": "issue",
                                        "title": "a method", "state": "open",
                                        "created_at": iso(now - timedelta(days=30))})
            s.add(Analysis(thread_id=t.id, analyzer_version="t", result={}, is_proposal=True,
                           review_state=state, methods=methods, arxiv_ids=arxiv))
        await s.commit()


async def proposed_then_edited(ctx: Any, fake: Any, number: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A GSPO proposal whose reply lists TRL's GSPO proposal; returns (the edit's payload, the
    reply as posted)."""
    await install(ctx, fake)
    await earlier_of_both(ctx)
    payload = await open_issue(ctx, fake, number, title="Add GSPO", body="Please add GSPO.",
                               created_at=datetime.now(UTC) - timedelta(hours=1))
    out = await act(ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    [reply] = app_comments(fake, VERL, number, RULES_MARKER)
    assert f"{TRL}#301" in reply["body"] and f"{TRL}#302" not in reply["body"]
    edit = {**payload, "action": "edited", "sender": {"login": "alice", "type": "User"},
            "changes": {"body": {"from": "Please add GSPO."}}}
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": VERL, "number": number, "title": "Add CISPO",
                                "body": "Please add CISPO (MiniMax-M1) instead."})
        await s.commit()
    return edit, reply


async def test_an_edit_that_changes_the_method_proposed_rewrites_the_earlier_proposals(
        app_ctx: Any, fake_github: Any) -> None:
    """The author edits "Add GSPO" into "Add CISPO": the reply went on listing the GSPO
    proposals (the rule summary had no edit path) and never the CISPO one declined in TRL."""
    edit, reply = await proposed_then_edited(app_ctx, fake_github, 120)
    out = await act(app_ctx, VERL, 120, trigger="issues.edited", payload=edit,
                    analysis=proposing(CISPO))
    assert out.get("rule_summary") == "updated", out
    [after] = app_comments(fake_github, VERL, 120, RULES_MARKER)
    assert after["id"] == reply["id"]
    assert f"{TRL}#302" in after["body"] and f"{TRL}#301" not in after["body"]
    [row] = await actions_of(app_ctx, 120, "rule_summary")
    assert row.status == "posted" and row.body == after["body"]
    again = await act(app_ctx, VERL, 120, trigger="issues.edited", payload=edit,
                      analysis=proposing(CISPO))
    assert again.get("rule_summary") == "unchanged"  # (a redelivery)


async def test_a_pull_request_edited_likewise(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await earlier_of_both(app_ctx)
    payload = await open_issue(app_ctx, fake_github, 121, kind="pull_request", title="GSPO loss",
                               created_at=datetime.now(UTC) - timedelta(hours=1))
    assert (await act(app_ctx, VERL, 121, trigger="pull_request.opened", payload=payload,
                      analysis=PROPOSAL))["rule_summary"] == "posted"
    edit = {**payload, "action": "edited", "sender": {"login": "alice", "type": "User"}}
    out = await act(app_ctx, VERL, 121, trigger="pull_request.edited", payload=edit,
                    analysis=proposing(CISPO))
    assert out == {"rule_summary": "updated"}
    [after] = app_comments(fake_github, VERL, 121, RULES_MARKER)
    assert f"{TRL}#302" in after["body"]


async def test_not_rewritten_once_a_maintainer_replied(app_ctx: Any, fake_github: Any) -> None:
    edit, reply = await proposed_then_edited(app_ctx, fake_github, 122)
    fake_github.add_comment(VERL, 122, "GSPO was merged in TRL, see the reply.", "maint",
                            author_association="MEMBER")
    async with app_ctx.sessionmaker() as s:
        from sqlalchemy import select

        from bot.store.models import Thread

        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 122))
        await upsert_comment(s, thread, {"github_id": 99122, "author": "maint",
                                         "author_association": "MEMBER",
                                         "body": "GSPO was merged in TRL, see the reply.",
                                         "created_at": iso(datetime.now(UTC) + timedelta(seconds=5))})
        await s.commit()
    out = await act(app_ctx, VERL, 122, trigger="issues.edited", payload=edit,
                    analysis=proposing(CISPO))
    assert out.get("rule_summary") == "frozen", out
    [after] = app_comments(fake_github, VERL, 122, RULES_MARKER)
    assert after["body"] == reply["body"]


async def test_a_reply_a_person_edited_on_github_is_left_as_it_is(
        app_ctx: Any, fake_github: Any) -> None:
    edit, reply = await proposed_then_edited(app_ctx, fake_github, 123)
    fake_github.comments[reply["id"]]["body"] = reply["body"] + "\n(maintainers: see also #9)"
    out = await act(app_ctx, VERL, 123, trigger="issues.edited", payload=edit,
                    analysis=proposing(CISPO))
    assert out.get("rule_summary") == "edited", out
    assert fake_github.comments[reply["id"]]["body"].endswith("(maintainers: see also #9)")
    [row] = await actions_of(app_ctx, 123, "rule_summary")
    assert row.frozen and (row.details or {}).get("edited_on_github")


async def test_an_edit_that_leaves_no_proposal_leaves_the_reply(
        app_ctx: Any, fake_github: Any) -> None:
    """Edited into something the analyzer does not call a proposal: the rules still serve
    whoever goes on to contribute; the reply stays as posted."""
    from tests.test_actions_e2e import NOT_FAILURE

    edit, reply = await proposed_then_edited(app_ctx, fake_github, 124)
    out = await act(app_ctx, VERL, 124, trigger="issues.edited", payload=edit, analysis=NOT_FAILURE)
    assert out.get("rule_summary") in (None, "unchanged"), out
    [after] = app_comments(fake_github, VERL, 124, RULES_MARKER)
    assert after["body"] == reply["body"]


async def test_an_edit_handled_while_another_worker_posts_the_reply_reaches_it(
        app_ctx: Any, fake_github: Any) -> None:
    """Worker A claims the rule summary of a new GSPO proposal and is posting it; the author
    edits it into a CISPO proposal and worker B, storing the edit, finds the claim pending
    (nothing posted to rewrite). A posts what it composed before the edit, then reads the
    stored thread and analysis again and rewrites the reply once."""
    import asyncio

    from sqlalchemy import select

    from bot.store.models import Thread

    await install(app_ctx, fake_github)
    await earlier_of_both(app_ctx)
    payload = await open_issue(app_ctx, fake_github, 125, title="Add GSPO", body="Please add GSPO.",
                               created_at=datetime.now(UTC) - timedelta(hours=1))
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 125))
        s.add(Analysis(thread_id=thread.id, analyzer_version="test", result=PROPOSAL))
        await s.commit()
    reached, release = hold_first_comments_read(fake_github, VERL, 125)

    worker_a = asyncio.create_task(
        act(app_ctx, VERL, 125, trigger="issues.opened", payload=payload, analysis=PROPOSAL))
    await reached.wait()
    async with app_ctx.sessionmaker() as s:  # worker B stores the edited proposal
        await upsert_thread(s, {"repo": VERL, "number": 125, "title": "Add CISPO",
                                "body": "Please add CISPO instead."})
        row = await s.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        row.result = proposing(CISPO)
        await s.commit()
    edit = {**payload, "action": "edited", "sender": {"login": "alice", "type": "User"}}
    out = await act(app_ctx, VERL, 125, trigger="issues.edited", payload=edit,
                    analysis=proposing(CISPO))
    assert "rule_summary" not in out  # the claim was pending: A's to finish
    release.set()
    assert (await worker_a)["rule_summary"] == "posted"
    [reply] = app_comments(fake_github, VERL, 125, RULES_MARKER)
    assert f"{TRL}#302" in reply["body"] and f"{TRL}#301" not in reply["body"], reply["body"][:400]
    [row] = await actions_of(app_ctx, 125, "rule_summary")
    assert row.status == "posted" and row.body == reply["body"]
