"""The app's side effects on GitHub happen once, and stay known as the app's, across a crash
between a write on GitHub and its record (review 50): the kind label, the failure comment,
the rule summary, the nightly report. Against the fake GitHub server, on SQLite and
PostgreSQL; the crash is a store failure injected at the database level (a trigger refusing
the record's write) while the real worker handles the delivery, then the worker's retry on
the same database.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from bot.webhooks.commands import router as commands_router
from bot.webhooks.inbox import Inbox, InboxRow
from bot.webhooks.worker import Worker
from tests.test_actions_e2e import VERL, app_comments, install, open_issue
from tests.test_commands import actions, comment_event
from tests.test_github_writes import CONFIG, labels
from tests.test_verdicts import Minimising, commented, written


def no_wait(attempt: int) -> float:
    return 0.0


async def refuse_action_writes(ctx: Any, containing: str | None = None, *,
                               when: str | None = None) -> None:
    """From now on the database refuses any write of an `actions` row whose details contain
    `containing` (a JSON fragment), or for which `when` (SQL on NEW) holds: the process that
    wrote to GitHub dies before its record."""
    pattern = "%" + (containing or "").replace("'", "''") + "%"
    sqlite = when or f"NEW.details LIKE '{pattern}'"
    postgres = when or f"NEW.details::text LIKE '{pattern}'"
    async with ctx.engine.begin() as conn:
        if ctx.engine.dialect.name == "sqlite":
            for what in ("INSERT", "UPDATE"):
                await conn.execute(text(
                    f"CREATE TRIGGER refuse_{what.lower()} BEFORE {what} ON actions "
                    f"WHEN {sqlite} "
                    "BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END"))
        else:
            await conn.execute(text(
                "CREATE FUNCTION refuse_action() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF {postgres} THEN "
                "RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$"))
            await conn.execute(text(
                "CREATE TRIGGER refuse_action BEFORE INSERT OR UPDATE ON actions "
                "FOR EACH ROW EXECUTE FUNCTION refuse_action()"))


async def allow_action_writes(ctx: Any) -> None:
    async with ctx.engine.begin() as conn:
        if ctx.engine.dialect.name == "sqlite":
            for when in ("insert", "update"):
                await conn.execute(text(f"DROP TRIGGER IF EXISTS refuse_{when}"))
        else:
            await conn.execute(text("DROP TRIGGER IF EXISTS refuse_action ON actions"))
            await conn.execute(text("DROP FUNCTION IF EXISTS refuse_action()"))


async def deliver(ctx: Any, event: Any) -> str:
    """The delivery stored in the inbox as POST /webhook stores it; returns its id."""
    inbox = Inbox(ctx.engine)
    inbox.start()
    delivery = str(uuid.uuid4())
    try:
        await inbox.submit(InboxRow(delivery_id=delivery, event=event.event,
                                    action=event.data.get("action"), repo=VERL,
                                    installation_id=None, payload=json.dumps(event.data)))
    finally:
        await inbox.close()
    return delivery


async def test_a_label_added_on_github_before_a_crash_stays_the_apps(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker kind kl_growth` through the worker: GitHub takes the swap of the app's
    label (`rl: entropy` removed, `rl: kl` added) and the process dies before the record
    says `rl: kl` is the app's (the database refuses the write). The retry found `rl: kl` on
    the issue, took it for a person's and recorded no label of the app's; a later
    `not-a-failure` then left `rl: kl` on an issue a person said is no failure report."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 81)
    assert labels(fake_github, 81) == ["rl: entropy"]
    fake_github.graphql_handler = Minimising()
    now = datetime.now(UTC)
    await deliver(app_ctx, written(comment_event("/rltracker kind kl_growth", number=81),
                                   now - timedelta(minutes=2)))
    worker = Worker(app_ctx, commands_router, backoff=no_wait)
    await refuse_action_writes(app_ctx, '"label": "rl: kl"')
    try:
        assert await worker.process_one()  # the first attempt: GitHub written, record refused
    finally:
        await allow_action_writes(app_ctx)
    assert worker.counts["retry"] == 1
    assert labels(fake_github, 81) == ["rl: kl"]
    assert await worker.run_until_idle() == 1  # the retry, on the same database
    assert worker.counts["done"] == 1
    [row] = await actions(app_ctx, "failure_comment")
    assert row.details.get("label") == "rl: kl"
    await deliver(app_ctx, written(comment_event("/rltracker not-a-failure", number=81),
                                   now - timedelta(minutes=1)))
    assert await worker.run_until_idle() == 1
    assert labels(fake_github, 81) == []


async def test_the_first_label_added_before_a_crash_stays_the_apps(
        app_ctx: Any, fake_github: Any) -> None:
    """The failure comment's first post through the worker (a `/rltracker recheck` deciding
    with the author's kind): GitHub takes the comment and the kind label, and the process dies
    before the record says the label is the app's. The retry found the comment posted
    (`owned`) and knew of no label of its own to finish, so a later `not-a-failure` left the
    label on the issue."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await open_issue(app_ctx, fake_github, 82, title="Reward flat", body="The KL climbs to 50.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=82), app_ctx)
    assert app_comments(fake_github, VERL, 82) == []
    await deliver(app_ctx, comment_event("/rltracker recheck", number=82))
    worker = Worker(app_ctx, commands_router, backoff=no_wait)
    await refuse_action_writes(app_ctx, '"label": "rl: kl"')
    try:
        assert await worker.process_one()
    finally:
        await allow_action_writes(app_ctx)
    assert worker.counts["retry"] == 1
    assert labels(fake_github, 82) == ["rl: kl"] and len(app_comments(fake_github, VERL, 82)) == 1
    assert await worker.run_until_idle() == 1
    assert worker.counts["done"] == 1
    assert len(app_comments(fake_github, VERL, 82)) == 1
    [row] = await actions(app_ctx, "failure_comment")
    assert row.details.get("label") == "rl: kl" and not row.details.get("label_pending")
    assert len(fake_github.requests("POST", r"/issues/82/labels$")) == 1
    fake_github.graphql_handler = Minimising()
    await deliver(app_ctx, comment_event("/rltracker not-a-failure", number=82))
    assert await worker.run_until_idle() == 1
    assert labels(fake_github, 82) == []


def test_a_label_of_spaces_is_refused_by_the_config() -> None:
    """`labels: {kl_growth: "   "}` passed the config's validation (a printable string of 1 to
    50 characters), and every label add then met GitHub's 422. Refused with a clear reason."""
    import pytest

    from bot.speaking.repo_config import ConfigError, parse_config_text

    for blank in ("'   '", "' \t '", "'\u3000'"):
        with pytest.raises(ConfigError) as caught:
            parse_config_text(f"labels:\n  kl_growth: {blank}\n  entropy_collapse: 'rl: entropy'\n")
        assert "labels: the label for kl_growth is blank" in str(caught.value)
    assert parse_config_text("labels:\n  kl_growth: ' rl: kl'\n").labels == {"kl_growth": " rl: kl"}


async def test_a_config_label_of_spaces_is_never_sent_to_github(
        app_ctx: Any, fake_github: Any) -> None:
    """The repository's config names a label of spaces: the comment is posted, the config
    problem recorded once (a `config` skip), and GitHub is never asked to add the label."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "labels:\n  entropy_collapse: '   '\n")
    await commented(app_ctx, fake_github, 83)
    assert len(app_comments(fake_github, VERL, 83)) == 1
    assert not fake_github.requests("POST", r"/issues/83/labels$")
    [skip] = await actions(app_ctx, "config")
    assert "blank" in skip.reason


async def opened_through_worker_with_a_verdict(ctx: Any, fake: Any, number: int) -> None:
    """An issue whose author set its kind (`/rltracker kind kl_growth`, no comment yet: only
    stored), then its `issues.opened` delivery stored in the inbox: the worker's pipeline
    decides with the person's kind (no confidence bar), whatever the analyzer makes of it."""
    payload = await open_issue(ctx, fake, number, title="Reward flat", body="The KL climbs to 50.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=number), ctx)
    from gidgethub import sansio

    await deliver(ctx, sansio.Event(payload, event="issues", delivery_id="x"))


def die_after_github_takes_the_comment(fake: Any, number: int, task: list[Any], *,
                                       taken: bool = True) -> None:
    """GitHub creates the comment, and the process that asked dies before the answer comes
    back (the worker's task cancelled as a stop or a kill leaves it: nothing after the POST
    runs, the claim stays `pending`). `taken=False`: it dies as it sends the POST, which
    GitHub never gets."""

    @fake.route("POST", rf"/repos/{VERL}/issues/{number}/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        task[0].cancel()
        if not taken:
            return 502, {"message": "never reached"}
        comment = fake_.add_comment(VERL, number, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}


async def proposal_whose_summary_died_as_posted(app_ctx: Any, fake_github: Any,
                                                 number: int) -> tuple[dict[str, Any], Any]:
    """A proposal opened as `number` whose rule summary GitHub created as the deciding process
    died (`die_after_github_takes_the_comment`); the worker's retry, at once, finds the claim
    held. Returns the delivery's payload and the ClaimHeld the retry raised."""
    from bot.speaking.claims import ClaimHeld
    from bot.speaking.decide import act
    from tests.test_actions_e2e import PROPOSAL

    payload = {**await open_issue(app_ctx, fake_github, number, title="Add GSPO",
                                  body="Please add GSPO."), "_delivery_id": f"d-{number}"}
    task: list[Any] = []
    die_after_github_takes_the_comment(fake_github, number, task)
    task.append(asyncio.create_task(act(app_ctx, VERL, number, trigger="issues.opened",
                                        payload=payload, analysis=PROPOSAL)))
    with pytest.raises(asyncio.CancelledError):
        await task[0]
    with pytest.raises(ClaimHeld) as held:
        await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                  analysis=PROPOSAL)
    return payload, held.value


async def ten_minutes_pass(ctx: Any) -> None:
    """For the claims and the inbox's waiting retries, ten minutes and more pass."""
    from sqlalchemy import select, update

    from bot.store.models import Action, Delivery

    async with ctx.sessionmaker() as s:
        for row in await s.scalars(select(Action).where(Action.status == "pending")):
            row.updated_at = row.updated_at - timedelta(minutes=11)
        await s.execute(update(Delivery).where(Delivery.status == "pending")
                        .values(next_attempt_at=datetime.now(UTC)))
        await s.commit()


async def a_worker_dies_in(ctx: Any, task: list[Any]) -> None:
    """A worker takes the oldest delivery and its process dies where `task[0]` (its task) is
    cancelled; then its lease runs out (the next worker takes the delivery: SQLite's `recover`
    at start, PostgreSQL's claim once the lease has lapsed). A lease of 0 seconds once stood
    for that: the heartbeat then beat without pause, and a beat cut off mid-transaction by
    the cancellation could still hold the delivery's row lock on PostgreSQL when the next
    worker claimed, which skipped the row (SKIP LOCKED) and did nothing (a flaky retry count,
    about 1 run in 6). With a real lease the heartbeat sleeps when the task dies."""
    from sqlalchemy import update

    from bot.store.models import Delivery

    first = Worker(ctx, backoff=no_wait)
    task.append(asyncio.create_task(first.process_one()))
    try:
        await task[0]
    except asyncio.CancelledError:
        pass
    async with ctx.sessionmaker() as s:
        await s.execute(update(Delivery).where(Delivery.status == "processing")
                        .values(next_attempt_at=datetime.now(UTC) - timedelta(seconds=1)))
        await s.commit()


async def test_a_comment_posted_before_the_process_died_is_adopted_by_the_retry(
        app_ctx: Any, fake_github: Any) -> None:
    """The worker posting the failure comment dies after GitHub created it and before the
    claim was recorded `posted`. The delivery is taken again (a restart; another replica once
    the lease ends): its decision found the slot `pending` (the dead run's claim, not ten
    minutes old), answered "owned" and the delivery was done. Nobody came back: the claim
    stayed `pending` for good, the app did not know its comment, and a `/rltracker stop`
    found nothing to hide. The retry now waits for the claim to turn stale, takes it over,
    finds the comment by its marker and records it; one comment on GitHub."""

    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 84)
    task: list[Any] = []
    die_after_github_takes_the_comment(fake_github, 84, task)
    await a_worker_dies_in(app_ctx, task)
    assert len(app_comments(fake_github, VERL, 84)) == 1
    second = Worker(app_ctx, backoff=no_wait)
    await second.recover()
    await second.run_until_idle()
    assert second.counts["retry"] == 1  # the claim is not stale yet: waited for
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "pending"
    await ten_minutes_pass(app_ctx)
    await second.run_until_idle()
    [comment] = app_comments(fake_github, VERL, 84)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "posted" and row.comment_id == comment["id"]
    assert second.counts["failed"] == 0
    fake_github.graphql_handler = Minimising()
    await deliver(app_ctx, comment_event("/rltracker stop", number=84))
    await second.run_until_idle()
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized


@pytest.mark.parametrize("taken", [True, False], ids=["posted", "not-posted"])
async def test_a_comment_posted_before_the_process_died_is_adopted_after_a_maintainer_replied(
        app_ctx: Any, fake_github: Any, taken: bool) -> None:
    """As above, and a maintainer replies while the dead run's claim waits to turn stale. The
    stored thread then says someone is on it: the decision that took the claim over stayed
    quiet (`maintainer_replied`) before looking on GitHub, and the comment the dead run
    posted stayed unknown. A claim a run may have posted from is looked up on GitHub first;
    found, it is recorded whatever the quiet rules say now; not there (the run died before
    GitHub got it), the stored thread's quiet rule holds: nothing posted, the slot given up."""

    from sqlalchemy import select

    from bot.store.models import Thread
    from bot.store.threads import upsert_comment
    from tests.test_actions_e2e import iso

    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 85)
    task: list[Any] = []
    die_after_github_takes_the_comment(fake_github, 85, task, taken=taken)
    await a_worker_dies_in(app_ctx, task)
    second = Worker(app_ctx, backoff=no_wait)
    await second.recover()
    await second.run_until_idle()
    fake_github.add_comment(VERL, 85, "Try a lower learning rate.", "maint", author_association="MEMBER")
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 85))
        await upsert_comment(s, thread, {"github_id": 9901, "author": "maint",
                                         "author_association": "MEMBER",
                                         "body": "Try a lower learning rate.",
                                         "created_at": iso(datetime.now(UTC))})
        await s.commit()
    await ten_minutes_pass(app_ctx)
    await second.run_until_idle()
    rows = await actions(app_ctx, "failure_comment")
    if not taken:
        assert app_comments(fake_github, VERL, 85) == []
        assert [(r.status, r.reason) for r in rows] == [
            ("skipped", "a maintainer has already replied")]
        return
    [comment] = app_comments(fake_github, VERL, 85)
    assert [(r.status, r.comment_id, r.reason) for r in rows] == [("posted", comment["id"], None)]


async def test_a_comment_whose_record_was_lost_is_found_past_a_hundred_comments_as_edited(
        app_ctx: Any, fake_github: Any) -> None:
    """The failure comment posted on a thread of 150 comments, its record refused by the
    database (the attempt fails, the slot given back); a maintainer corrects the comment on
    GitHub before the retry. The retry reads every page of comments (100 a page), finds the
    app's comment on the second, sees a text the app never wrote: it is recorded as the app's,
    frozen and `edited_on_github`, nothing posted or edited again."""
    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 86)
    for n in range(150):
        fake_github.add_comment(VERL, 86, f"same here ({n})", "bob")
    worker = Worker(app_ctx, backoff=no_wait)
    await refuse_action_writes(app_ctx, when="NEW.status = 'posted' AND NEW.kind = 'failure_comment'")
    try:
        assert await worker.process_one()
    finally:
        await allow_action_writes(app_ctx)
    assert worker.counts["retry"] == 1
    [comment] = app_comments(fake_github, VERL, 86)
    fake_github.comments[comment["id"]]["body"] = comment["body"].replace("KL", "KL (see #90)", 1)
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    assert [c["id"] for c in app_comments(fake_github, VERL, 86)] == [comment["id"]]
    assert len(fake_github.requests("POST", r"/issues/86/comments$")) == 1
    assert not fake_github.requests("PATCH", r"/issues/comments/")
    pages = fake_github.requests("GET", r"/issues/86/comments$")
    assert {c.query.get("page", "1") for c in pages} == {"1", "2"}
    [row] = [a for a in await actions(app_ctx, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"] and row.frozen and row.details["edited_on_github"]


async def test_a_rule_summary_twice_at_once_and_across_a_death_is_posted_once(
        app_ctx: Any, fake_github: Any) -> None:
    """A method proposal's `issues.opened` decided twice at once (the delivery and GitHub's
    redelivery on two replicas): one reply. Then a proposal whose reply GitHub created as the
    process deciding it died: the retry of the same delivery (its id in the payload, as the
    worker gives it) found the dead run's claim `pending`, answered "owned" and the reply
    stayed unknown for good; now it waits for the claim to turn stale (ClaimHeld, the wait
    the worker keeps), takes it over and records the reply found by its marker."""
    import asyncio

    from bot.speaking.decide import act
    from bot.speaking.render import RULES_MARKER
    from tests.test_actions_e2e import PROPOSAL

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 87, title="Add GSPO", body="Please add GSPO.")
    outs = await asyncio.gather(*[act(app_ctx, VERL, 87, trigger="issues.opened",
                                      payload={**payload, "_delivery_id": f"d{n}"},
                                      analysis=PROPOSAL) for n in range(2)])
    assert sorted(o["rule_summary"] for o in outs) == ["owned", "posted"]
    assert len(app_comments(fake_github, VERL, 87, RULES_MARKER)) == 1

    payload, held = await proposal_whose_summary_died_as_posted(app_ctx, fake_github, 88)
    assert 590 < held.retry_after <= 601
    await ten_minutes_pass(app_ctx)
    out = await act(app_ctx, VERL, 88, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    [reply] = app_comments(fake_github, VERL, 88, RULES_MARKER)
    [row] = [a for a in await actions(app_ctx, "rule_summary") if a.number == 88]
    assert row.status == "posted" and row.comment_id == reply["id"]


async def first_comment_answer_lost(ctx: Any, fake: Any, number: int) -> tuple[dict[str, Any], Worker]:
    """The worker posts the failure comment on issue `number`: GitHub creates it and answers
    502 (the answer lost), and the delivery fails its one attempt; the comment GitHub holds,
    and the worker (to handle the replay)."""
    answered = {"lost": 1}

    @fake.route("POST", rf"/repos/{VERL}/issues/{number}/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake_.add_comment(VERL, number, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        if answered["lost"]:
            answered["lost"] -= 1
            return 502, {"message": "Server Error"}
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    worker = Worker(ctx, backoff=no_wait, max_attempts=1, max_transient_attempts=1)
    assert await worker.run_until_idle() == 1 and worker.counts["failed"] == 1
    [comment] = app_comments(fake, VERL, number)
    return comment, worker


async def test_a_comment_whose_answer_was_lost_is_adopted_by_a_replay_after_a_reply(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub created the failure comment and answered 502 (not repeated: it may have been
    created); the delivery failed past its retries. A maintainer replied, and the delivery
    was replayed later (`rltracker deliveries retry`): the decision stayed quiet on the stored
    thread (`maintainer_replied`) before looking on GitHub, and the app never knew its
    comment (a `stop` found nothing to hide). A failed attempt whose text was recorded may
    have posted: it is looked up first."""
    from sqlalchemy import select

    from bot.cli.deliveries import retry_deliveries
    from bot.store.models import Thread
    from bot.store.threads import upsert_comment
    from tests.test_actions_e2e import iso

    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 89)
    comment, worker = await first_comment_answer_lost(app_ctx, fake_github, 89)
    fake_github.add_comment(VERL, 89, "Looking into it.", "maint", author_association="MEMBER")
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 89))
        await upsert_comment(s, thread, {"github_id": 9902, "author": "maint",
                                         "author_association": "MEMBER", "body": "Looking into it.",
                                         "created_at": iso(datetime.now(UTC))})
        await s.commit()
    assert len(await retry_deliveries(app_ctx.engine, None)) == 1
    assert await worker.run_until_idle() == 1
    assert [c["id"] for c in app_comments(fake_github, VERL, 89)] == [comment["id"]]
    [row] = [a for a in await actions(app_ctx, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"]


async def test_a_comment_the_app_hid_before_a_crash_is_shown_again_by_a_kind(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker not-a-failure` through the worker: GitHub minimised the app's failure
    comment (OUTDATED) and the record saying the verdict hid it was refused (the process
    died). The retry read the comment hidden and took the hiding for a person's, so a later
    `/rltracker kind` left it hidden and unrewritten: the person's latest word lost. The
    hiding is an intent recorded before the mutation: found hidden as OUTDATED with the
    intent there, it is the verdict's, and the kind shows the comment again, rewritten."""
    from tests.test_github_writes import Hidden

    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 92)
    [comment] = app_comments(fake_github, VERL, 92)
    github = Hidden()
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await deliver(app_ctx, written(comment_event("/rltracker not-a-failure", number=92),
                                   now - timedelta(minutes=2)))
    worker = Worker(app_ctx, commands_router, backoff=no_wait)
    await refuse_action_writes(app_ctx, '"minimized_by": "not-a-failure"')
    try:
        assert await worker.process_one()
    finally:
        await allow_action_writes(app_ctx)
    assert worker.counts["retry"] == 1 and github.minimized == {comment["node_id"]: True}
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and row.details.get("minimized_by") == "not-a-failure"
    await deliver(app_ctx, written(comment_event("/rltracker kind kl_growth", number=92),
                                   now - timedelta(minutes=1)))
    assert await worker.run_until_idle() == 1
    assert github.minimized == {comment["node_id"]: False}
    [after] = app_comments(fake_github, VERL, 92)
    assert "/failures/kl_growth" in after["body"]


async def test_a_rule_summary_posted_before_the_process_died_is_adopted_after_the_close(
        app_ctx: Any, fake_github: Any) -> None:
    """The rule summary GitHub created as its process died; the proposal is closed while the
    dead run's claim waits to turn stale. The decision that takes it over stayed quiet on
    the stored thread (`closed`) before looking on GitHub: the reply stayed unknown, its
    claim pending. Looked up first, as the failure comment's: found, it is recorded."""

    from sqlalchemy import update

    from bot.speaking.decide import act
    from bot.speaking.render import RULES_MARKER
    from bot.store.models import Thread
    from tests.test_actions_e2e import PROPOSAL

    await install(app_ctx, fake_github)
    payload, _ = await proposal_whose_summary_died_as_posted(app_ctx, fake_github, 93)
    fake_github.issue(VERL, 93)["state"] = "closed"
    async with app_ctx.sessionmaker() as s:
        await s.execute(update(Thread).where(Thread.number == 93).values(state="closed"))
        await s.commit()
    await ten_minutes_pass(app_ctx)
    await act(app_ctx, VERL, 93, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    [reply] = app_comments(fake_github, VERL, 93, RULES_MARKER)
    rows = [a for a in await actions(app_ctx, "rule_summary") if a.number == 93]
    assert [(r.status, r.comment_id) for r in rows] == [("posted", reply["id"])]


async def decided_in_a_batch(ctx: Any, numbers: list[int], number: int, *, payload: Any,
                             analysis: dict[str, Any]) -> dict[str, str]:
    """`number`'s `issues.opened` decided as the worker's batches decide (bot.pipeline's
    threads_changed): with what the batch read for all of `numbers` at once (`prefetch`)."""
    from bot.speaking.decide import act
    from bot.speaking.situation import prefetch
    from bot.store.threads import get_thread, load_comments, thread_record

    async with ctx.sessionmaker() as s:
        threads = [await get_thread(s, VERL, n) for n in numbers]
        records = {t.number: (t, thread_record(t, await load_comments(s, t))) for t in threads}
        prefetched = await prefetch(s, [(t.repo, t.number) for t in threads])
    return await act(ctx, VERL, number, trigger="issues.opened", payload=payload,
                     analysis=analysis, thread=records[number], prefetched=prefetched)


async def test_a_batch_looks_up_a_comment_whose_answer_was_lost_after_a_reply(
        app_ctx: Any, fake_github: Any) -> None:
    """As test_a_comment_whose_answer_was_lost_is_adopted_by_a_replay_after_a_reply, the
    replay decided in a batch with other threads (the failed attempt's recorded text read
    with the claims of the whole batch, review 59): looked up on GitHub first and recorded,
    whatever the stored thread's maintainer reply says; nothing posted again."""
    from sqlalchemy import select

    from bot.store.models import Thread
    from bot.store.threads import upsert_comment
    from tests.test_actions_e2e import FAILURE, iso

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 88, title="Other", body="Entropy collapses.")
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 87)
    comment, worker = await first_comment_answer_lost(app_ctx, fake_github, 87)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 87))
        await upsert_comment(s, thread, {"github_id": 9903, "author": "maint",
                                         "author_association": "MEMBER", "body": "On it.",
                                         "created_at": iso(datetime.now(UTC))})
        await s.commit()
    outcome = await decided_in_a_batch(app_ctx, [88, 87], 87, payload={}, analysis=FAILURE)
    assert outcome["failure_comment"] == "posted"
    assert [c["id"] for c in app_comments(fake_github, VERL, 87)] == [comment["id"]]
    [row] = [a for a in await actions(app_ctx, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"]


async def test_a_batch_looks_up_a_rule_summary_that_died_as_posted_after_the_close(
        app_ctx: Any, fake_github: Any) -> None:
    """As test_a_rule_summary_posted_before_the_process_died_is_adopted_after_the_close, the
    retry that takes the claim over decided in a batch with another thread (the pending
    claim's recorded text read with the claims of the whole batch, review 59)."""
    from sqlalchemy import update

    from bot.speaking.render import RULES_MARKER
    from bot.store.models import Thread
    from tests.test_actions_e2e import PROPOSAL

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 95, title="Other", body="Which logger?")
    payload, _ = await proposal_whose_summary_died_as_posted(app_ctx, fake_github, 94)
    fake_github.issue(VERL, 94)["state"] = "closed"
    async with app_ctx.sessionmaker() as s:
        await s.execute(update(Thread).where(Thread.number == 94).values(state="closed"))
        await s.commit()
    await ten_minutes_pass(app_ctx)
    outcome = await decided_in_a_batch(app_ctx, [95, 94], 94, payload=payload,
                                       analysis=PROPOSAL)
    assert outcome["rule_summary"] == "posted"
    [reply] = app_comments(fake_github, VERL, 94, RULES_MARKER)
    rows = [a for a in await actions(app_ctx, "rule_summary") if a.number == 94]
    assert [(r.status, r.comment_id) for r in rows] == [("posted", reply["id"])]


def deleted_on_github(fake: Any, number: int, comment: dict[str, Any]) -> dict[str, Any]:
    """A maintainer deletes `comment` on GitHub; the `issue_comment.deleted` delivery GitHub
    sends then (the comment as it was, its author the app's bot)."""
    import copy

    from tests.test_actions_e2e import INST

    del fake.comments[comment["id"]]
    fake.issue(VERL, number)["comments"] -= 1
    return {"action": "deleted", "issue": copy.deepcopy(fake.issue(VERL, number)),
            "comment": {k: v for k, v in comment.items() if not k.startswith("_")},
            "repository": fake.repo_json(VERL), "installation": {"id": INST},
            "sender": {"login": "maint", "type": "User"}}


async def test_a_comment_whose_answer_was_lost_and_a_maintainer_deleted_is_not_posted_again(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub created the failure comment and answered 502; the delivery failed. Before its
    replay a maintainer deleted the comment (the `deleted` delivery handled). The replay
    found no comment of the app's on GitHub and posted it again: a deleted comment is an
    answer (an edit never re-posts one), and the pause rule counts deletions."""
    from gidgethub import sansio

    from bot.cli.deliveries import retry_deliveries

    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 94)
    comment, worker = await first_comment_answer_lost(app_ctx, fake_github, 94)
    await deliver(app_ctx, sansio.Event(deleted_on_github(fake_github, 94, comment),
                                        event="issue_comment", delivery_id="del-94"))
    assert await worker.run_until_idle() == 1
    assert len(await retry_deliveries(app_ctx.engine, None)) == 1
    assert await worker.run_until_idle() == 1
    assert app_comments(fake_github, VERL, 94) == []
    rows = [a for a in await actions(app_ctx, "failure_comment") if a.number == 94]
    assert not [a for a in rows if a.status in ("posted", "pending")], rows
    assert "deleted" in {(a.details or {}).get("code") for a in rows if a.status == "skipped"}


async def test_a_rule_summary_whose_answer_was_lost_and_a_maintainer_deleted_is_not_posted_again(
        app_ctx: Any, fake_github: Any) -> None:
    """As above for the rule summary: created, answered 502, deleted by a maintainer (the
    `deleted` delivery handled), then the delivery's retry posted it again."""
    from gidgethub import GitHubBroken

    from bot.speaking.decide import act
    from bot.speaking.render import RULES_MARKER
    from bot.webhooks.events import handle
    from tests.test_actions_e2e import PROPOSAL

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 95, title="Add GSPO", body="Please add GSPO.")
    answered = {"lost": 1}

    @fake_github.route("POST", rf"/repos/{VERL}/issues/95/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        made = fake_.add_comment(VERL, 95, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        if answered["lost"]:
            answered["lost"] -= 1
            return 502, {"message": "Server Error"}
        return 201, {k: v for k, v in made.items() if not k.startswith("_")}

    with pytest.raises(GitHubBroken):
        await act(app_ctx, VERL, 95, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    [reply] = app_comments(fake_github, VERL, 95, RULES_MARKER)
    await handle("issue_comment", deleted_on_github(fake_github, 95, reply), app_ctx)
    out = await act(app_ctx, VERL, 95, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert app_comments(fake_github, VERL, 95, RULES_MARKER) == [], out
    rows = [a for a in await actions(app_ctx, "rule_summary") if a.number == 95]
    assert not [a for a in rows if a.status in ("posted", "pending")], rows


async def test_a_comment_whose_answer_was_lost_deleted_before_its_deleted_delivery_is_handled(
        app_ctx: Any, fake_github: Any) -> None:
    """As above, but the retry runs before the `deleted` delivery is handled: the comment's
    `created` delivery was (the app's comment stored with its marker), and GitHub no longer
    has it. It was created and is gone: deleted, not posted again."""
    from sqlalchemy import select

    from bot.cli.deliveries import retry_deliveries
    from bot.store.models import Thread
    from bot.store.threads import upsert_comment

    await install(app_ctx, fake_github)
    await opened_through_worker_with_a_verdict(app_ctx, fake_github, 96)
    comment, worker = await first_comment_answer_lost(app_ctx, fake_github, 96)
    async with app_ctx.sessionmaker() as s:  # its `created` delivery, handled
        thread = await s.scalar(select(Thread).where(Thread.number == 96))
        await upsert_comment(s, thread, {"github_id": comment["id"], "author": comment["user"]["login"],
                                         "author_is_bot": True, "author_association": "NONE",
                                         "body": comment["body"], "created_at": comment["created_at"]})
        await s.commit()
    deleted_on_github(fake_github, 96, comment)  # its `deleted` delivery not handled yet
    assert len(await retry_deliveries(app_ctx.engine, None)) == 1
    assert await worker.run_until_idle() == 1
    assert app_comments(fake_github, VERL, 96) == []
    rows = [a for a in await actions(app_ctx, "failure_comment") if a.number == 96]
    assert not [a for a in rows if a.status in ("posted", "pending")], rows
