"""What the app would have posted unasked, posted once the installation accepts the permission
GitHub refused it for (left66).

The installation grants Issues read only: GitHub refuses the app's failure comment on a new
report, or its rule summary on a new proposal (403 "Resource not accessible by integration"),
and the decision is a `not_permitted` skip. Accepting the permission (GitHub's
`installation.new_permissions_accepted`) handled again only the commands refused so; the
comments nobody asked for stayed unposted for good. Now their deliveries are handled again
too: the decision is made anew, with its live checks (open, unlocked, no comment of the app's
there yet) and its window (`quiet.MAX_AGE`, 48 hours since the opening, as for any late
first comment), and posts once. Through the real worker, the one fake GitHub, SQLite and
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.speaking.render import FAILURE_MARKER, RULES_MARKER
from bot.store.models import Action, Delivery
from bot.webhooks.commands import router as commands_router
from bot.webhooks.installations import answer_when_permitted
from bot.webhooks.worker import Worker
from tests.test_actions_e2e import INST, VERL, app_comments, install, open_issue
from tests.test_commands import comment_event
from tests.test_once_on_github import deliver


def no_wait(attempt: int) -> float:
    return 0.0


def _fixture(shared_dir: Path, event: str, action: str, **repos: list[str]) -> dict[str, Any]:
    """GitHub's `event`.`action` payload (the shared fixture) for the test's installation, its
    repository lists (`repositories`, `repositories_added`) naming `repos`' repositories."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / event / f"{action}.json")
                         .read_text())
    payload["installation"].update(id=INST, account={**payload["installation"]["account"],
                                                     "login": "verl-project"})
    for key, names in repos.items():
        payload[key] = [{"id": 7000 + i, "node_id": f"R_{i}", "name": name.split("/")[1],
                         "full_name": name, "private": False} for i, name in enumerate(names)]
    return payload


async def _accepted(ctx: Any, fake: Any, shared_dir: Path) -> None:
    """The account accepts Issues write (the fake's next tokens carry it), and GitHub's
    `installation.new_permissions_accepted` is stored in the inbox as POST /webhook stores
    it (the worker handles it)."""
    fake.installations[INST]["permissions"]["issues"] = "write"
    await deliver(ctx, sansio.Event(
        _fixture(shared_dir, "installation", "new_permissions_accepted", repositories=[VERL]),
        event="installation", delivery_id="unused"))


async def _report_refused(ctx: Any, fake: Any, number: int, *,
                          opened: datetime | None = None) -> Worker:
    """An issue whose author set its kind (the decision then needs no confidence bar), opened
    while the installation grants Issues read: its `issues.opened` delivery is handled by the
    worker and the failure comment is refused for the permission."""
    payload = await open_issue(ctx, fake, number, title="Reward flat", body="The KL climbs to 50.",
                               created_at=opened)
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=number), ctx)
    fake.installations[INST]["permissions"]["issues"] = "read"
    ctx.github.invalidate_token(INST)  # (its next token carries what is granted now)
    await deliver(ctx, sansio.Event(payload, event="issues", delivery_id="x"))
    worker = Worker(ctx, backoff=no_wait)
    assert await worker.run_until_idle() == 1
    assert worker.counts["failed"] == 0, worker.counts
    assert app_comments(fake, VERL, number) == []
    return worker


async def _skips(ctx: Any, kind: str) -> list[Action]:
    async with ctx.sessionmaker() as s:
        return list(await s.scalars(select(Action).where(
            Action.kind == kind, Action.status == "skipped").order_by(Action.id)))


async def test_a_failure_comment_refused_for_the_permission_is_posted_once_it_is_accepted(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Failed on main: accepting the permission re-queued nothing (no command was refused),
    and the report never got its comment. Now it is posted once; a redelivery of the
    installation event, and the worker going over the inbox again, post nothing more."""
    await install(app_ctx, fake_github)
    worker = await _report_refused(app_ctx, fake_github, 91)
    [skip] = await _skips(app_ctx, "failure_comment")
    assert skip.details["code"] == "not_permitted" and skip.details.get("delivery")

    await _accepted(app_ctx, fake_github, shared_dir)
    assert await worker.run_until_idle() == 2  # the acceptance, then the report's delivery
    [comment] = app_comments(fake_github, VERL, 91)
    assert FAILURE_MARKER in comment["body"]
    async with app_ctx.sessionmaker() as s:
        [row] = await s.scalars(select(Action).where(Action.kind == "failure_comment"))
    assert row.status == "posted" and row.comment_id == comment["id"]

    # GitHub redelivers the installation event: nothing owed, nothing posted again.
    await _accepted(app_ctx, fake_github, shared_dir)
    assert await worker.run_until_idle() == 1  # the acceptance alone
    assert len(app_comments(fake_github, VERL, 91)) == 1
    assert len(fake_github.requests("POST", r"/issues/91/comments$")) == 2  # refused, posted


async def test_two_workers_handling_the_acceptance_at_once_requeue_the_delivery_once(
        app_ctx: Any, fake_github: Any) -> None:
    """Two replicas handle two deliveries of the acceptance at the same time: the refused
    delivery is handed back once (the second finds it pending already), one comment."""
    await install(app_ctx, fake_github)
    worker = await _report_refused(app_ctx, fake_github, 92)
    fake_github.installations[INST]["permissions"]["issues"] = "write"
    app_ctx.github.invalidate_token(INST)
    first, second = await asyncio.gather(answer_when_permitted(app_ctx, INST),
                                         answer_when_permitted(app_ctx, INST))
    assert len(first) + len(second) == 1, (first, second)
    assert await worker.run_until_idle() == 1
    assert len(app_comments(fake_github, VERL, 92)) == 1


async def test_a_report_past_the_window_gets_no_late_comment(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Refused when it was new, the permission accepted three days after the opening: the
    decision made again finds the issue past the 48 hours of a first comment (`too_old`);
    nothing is posted."""
    await install(app_ctx, fake_github)
    opened = datetime.now(UTC) - timedelta(hours=47, minutes=59)
    worker = await _report_refused(app_ctx, fake_github, 93, opened=opened)
    async with app_ctx.sessionmaker() as s:  # the acceptance comes days later
        thread_opened = opened - timedelta(days=3)
        from bot.store.models import Thread

        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 93))
        thread.created_at = thread_opened
        await s.commit()
    fake_github.issue(VERL, 93)["created_at"] = thread_opened.strftime("%Y-%m-%dT%H:%M:%SZ")
    await _accepted(app_ctx, fake_github, shared_dir)
    assert await worker.run_until_idle() == 2
    assert app_comments(fake_github, VERL, 93) == []
    codes = [s.details["code"] for s in await _skips(app_ctx, "failure_comment")]
    assert "too_old" in codes, codes


async def test_a_locked_report_gets_no_late_comment(app_ctx: Any, fake_github: Any,
                                                    shared_dir: Path) -> None:
    """Locked on GitHub before the permission is accepted: nothing is posted."""
    await install(app_ctx, fake_github)
    worker = await _report_refused(app_ctx, fake_github, 94)
    fake_github.issue(VERL, 94)["locked"] = True
    await _accepted(app_ctx, fake_github, shared_dir)
    assert await worker.run_until_idle() == 2
    assert app_comments(fake_github, VERL, 94) == []
    assert "locked" in [s.details["code"] for s in await _skips(app_ctx, "failure_comment")]


async def test_a_rule_summary_refused_for_the_permission_is_posted_once_it_is_accepted(
        app_ctx: Any, fake_github: Any) -> None:
    """A proposal (an arXiv paper the catalog knows, asked to be added) opened while the
    installation grants Issues read: the rule summary is a `not_permitted` skip; accepting the
    permission posts it, once."""
    from tests.test_actions_e2e import PROPOSAL

    await install(app_ctx, fake_github)
    fake_github.installations[INST]["permissions"]["issues"] = "read"
    app_ctx.github.invalidate_token(INST)
    payload = await open_issue(app_ctx, fake_github, 95, title="Add GSPO",
                               body="Please add GSPO (arXiv 2507.18071).")
    # the decision through the worker, with the analysis a proposal gets
    from bot.speaking.decide import act

    payload["_delivery_id"] = await deliver(app_ctx, sansio.Event(payload, event="issues",
                                                                  delivery_id="y"))
    async with app_ctx.sessionmaker() as s:
        delivery = await s.scalar(select(Delivery).where(
            Delivery.delivery_id == payload["_delivery_id"]))
        delivery.status = "done"
        await s.commit()
    out = await act(app_ctx, VERL, 95, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:not_permitted", out
    [skip] = await _skips(app_ctx, "rule_summary")
    assert skip.details.get("delivery") == payload["_delivery_id"]
    fake_github.installations[INST]["permissions"]["issues"] = "write"
    app_ctx.github.invalidate_token(INST)
    requeued = await answer_when_permitted(app_ctx, INST)
    assert requeued == [payload["_delivery_id"]]
    assert await _skips(app_ctx, "rule_summary") == []
    assert await answer_when_permitted(app_ctx, INST) == []  # owed once
    async with app_ctx.sessionmaker() as s:
        delivery = await s.scalar(select(Delivery).where(
            Delivery.delivery_id == payload["_delivery_id"]))
    assert delivery.status == "pending" and delivery.attempts == 0
    out = await act(app_ctx, VERL, 95, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted", out
    assert len(app_comments(fake_github, VERL, 95, RULES_MARKER)) == 1


async def test_a_comment_refused_for_a_repository_not_covered_is_decided_when_it_is_added(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub answers "Resource not accessible by integration" too for a repository the
    installation no longer covers (taken out of it, its `removed` not handled yet). Added
    back (`installation_repositories.added`, the shared fixture), the refused report's
    delivery is handled again and the comment posted, once."""
    await install(app_ctx, fake_github)
    fake_github.installations[INST]["repositories"] = []  # taken out of the installation
    payload = await open_issue(app_ctx, fake_github, 96, title="Reward flat",
                               body="The KL climbs to 50.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=96), app_ctx)
    await deliver(app_ctx, sansio.Event(payload, event="issues", delivery_id="x"))
    worker = Worker(app_ctx, backoff=no_wait)
    assert await worker.run_until_idle() == 1
    assert app_comments(fake_github, VERL, 96) == []
    assert [s.details["code"] for s in await _skips(app_ctx, "failure_comment")] == [
        "not_permitted"]
    fake_github.installations[INST]["repositories"] = [VERL]
    await deliver(app_ctx, sansio.Event(
        _fixture(shared_dir, "installation_repositories", "added", repositories_added=[VERL]),
        event="installation_repositories", delivery_id="unused"))
    assert await worker.run_until_idle() == 2
    assert len(app_comments(fake_github, VERL, 96)) == 1

