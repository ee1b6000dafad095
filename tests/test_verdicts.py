"""People's verdicts: `/rltracker kind <failure>` and `/rltracker not-a-failure` through the
real gidgethub Router (and once through POST /webhook and the worker with GitHub's own
payload), against the fake GitHub server, on SQLite and PostgreSQL; what they do to the
failure comment, what later edits and the nightly re-analysis leave of them, the thread page
and `rltracker verdicts export`."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from bot.speaking.decide import act
from bot.speaking.render import FAILURE_MARKER
from bot.store.models import Analysis, Thread, Verdict
from bot.store.threads import upsert_comment
from bot.webhooks.commands import parse_verdict
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import FAILURE, VERL, app_comments, install, iso, open_issue
from tests.test_commands import actions, comment_event, comment_read


async def verdicts(ctx: Any) -> list[Verdict]:
    async with ctx.sessionmaker() as s:
        return list(await s.scalars(select(Verdict).order_by(Verdict.id)))


async def commented(ctx: Any, fake: Any, number: int) -> dict[str, Any]:
    """An issue with the app's failure comment (the analyzer said entropy collapse)."""
    payload = await open_issue(ctx, fake, number)
    out = await act(ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] in ("posted", "dry_run")
    return payload


async def store_analysis(ctx: Any, number: int, category: str = "entropy_collapse") -> None:
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == number))
        s.add(Analysis(thread_id=thread.id, analyzer_version="test-1", result=FAILURE,
                       is_failure_report=True, failure_category=category))
        await s.commit()


def test_parse_verdict() -> None:
    assert parse_verdict("kind", ["kl-growth"]) == (True, "kl_growth")
    assert parse_verdict("kind", ["Entropy", "collapse"]) == (True, "entropy_collapse")
    assert parse_verdict("kind", ["none"]) == (False, None)
    assert parse_verdict("not-a-failure", []) == (False, None)
    assert parse_verdict("kind", ["nonsense"]) is None
    assert parse_verdict("kind", []) is None


async def test_kind_by_the_author_rewrites_the_comment_through_the_webhook(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's issue_comment `created` payload (the opener, OWNER) through POST /webhook and
    the worker: the verdict is stored with who gave it and what the analyzer said, the failure
    comment is edited to the person's kind (no runner-up, no confidence), the command gets a
    reaction; a redelivery does nothing more."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.webhooks.replay import delivery_headers
    from bot.webhooks.worker import Worker

    repo = "Codertocat/Hello-World"
    await install(app_ctx, fake_github, repo=repo, framework="verl")
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json").read_text())
    number, cid = data["issue"]["number"], data["comment"]["id"]
    payload = await open_issue(app_ctx, fake_github, number, repo=repo, user=data["issue"]["user"]["login"])
    await act(app_ctx, repo, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
    # what the analyzer said when the issue was opened (the router runs the delivery's
    # handlers in no fixed order: the command may come before this comment's re-analysis)
    await store_analysis(app_ctx, number)
    [before] = app_comments(fake_github, repo, number)
    assert "/failures/entropy_collapse" in before["body"]
    data["comment"]["body"] = "Not entropy: the KL keeps growing.\n/rltracker kind kl-growth"
    data["installation"] = {"id": 4711}
    body = json.dumps(data).encode()
    worker = Worker(app_ctx, backoff=lambda attempt: 0.0)
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        for delivery in ("k1", "k1-again"):  # GitHub's "Redeliver" gets a new delivery id
            headers = delivery_headers("issue_comment", body, app_ctx.settings.webhook_secret, delivery)
            assert (await client.post("/webhook", data=body, headers=headers)).status == 202
            assert await worker.run_until_idle() == 1
    assert worker.counts["failed"] == 0
    [after] = app_comments(fake_github, repo, number)
    assert after["id"] == before["id"]
    assert "/failures/kl_growth" in after["body"] and "/failures/entropy_collapse" not in after["body"]
    assert "the issue's author set with `/rltracker kind`" in after["body"]
    assert "confidence" not in after["body"] and "also found signs" not in after["body"]
    assert "actor_rollout_ref.actor.use_kl_loss=True" in after["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    [v] = await verdicts(app_ctx)
    assert (v.is_failure_report, v.category, v.login, v.role, v.comment_id) == (
        True, "kl_growth", "Codertocat", "author", cid)
    from analyzers.version import ANALYZER_VERSION

    # what the analyzer said then: at opening, or on this comment when its handler ran first
    assert v.analyzer_version in ("test-1", ANALYZER_VERSION) and v.analyzer_is_failure_report is not None
    [row] = [a for a in await actions(app_ctx, "failure_comment")]
    assert row.details["category"] == "kl_growth" and row.details["set_by"] == "author"
    assert row.details["runner_up"] is None


async def test_kind_by_a_maintainer_after_a_maintainer_replied(app_ctx: Any, fake_github: Any) -> None:
    """A maintainer's reply freezes the comment against edits of the issue, not against a
    maintainer who sets the kind: they asked. The verdict names the maintainer."""
    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "maint", "write")  # a member with write access
    payload = await commented(app_ctx, fake_github, 2)
    await store_analysis(app_ctx, 2)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 2))
        await upsert_comment(s, thread, {"github_id": 77, "author": "maint", "author_association": "MEMBER",
                                         "body": "Looks like the KL term.",
                                         "created_at": iso(datetime.now(UTC) + timedelta(seconds=5))})
        await s.commit()
    out = await act(app_ctx, VERL, 2, trigger="issue_comment.created", payload=payload, analysis=FAILURE)
    assert out == {"failure_comment": "frozen"}
    result = await commands_router.dispatch(
        comment_event("/rltracker kind kl_growth", user="maint", association="MEMBER", number=2), app_ctx)
    assert result is None  # (the router returns nothing; what happened is in the records)
    [comment] = app_comments(fake_github, VERL, 2)
    assert "/failures/kl_growth" in comment["body"] and "a maintainer set" in comment["body"]
    [v] = await verdicts(app_ctx)
    assert (v.role, v.login, v.analyzer_category, v.analyzer_version) == (
        "maintainer", "maint", "entropy_collapse", "test-1")


async def test_strangers_and_bots_give_no_verdict(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 3)
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", user="mallory", number=3), app_ctx)
    await commands_router.dispatch(
        comment_event("/rltracker not-a-failure", user="ci[bot]", user_type="Bot", number=3), app_ctx)
    row, told = await actions(app_ctx, "command")  # the skip, and the one note saying so (user77)
    assert row.status == "skipped" and "author or a maintainer" in row.reason
    assert told.status == "posted" and told.details == {"note": "not_allowed"}
    assert await verdicts(app_ctx) == []
    assert not fake_github.requests("PATCH") and not fake_github.requests("POST", r"/reactions")
    assert not fake_github.requests("POST", r"/graphql")


async def test_unknown_kind_is_recorded_and_changes_nothing(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 4)
    event = comment_event("/rltracker kind gradient-gremlins", number=4)
    await commands_router.dispatch(event, app_ctx)
    [row, note] = await actions(app_ctx, "command")  # the skip, and the one reply saying so
    assert note.status == "posted" and note.details == {"note": "unknown_kind"}
    assert row.status == "skipped" and row.details["code"].startswith("unknown_kind:")
    assert "unknown failure kind" in row.reason and "kl_growth" in row.reason
    assert row.details["asked"] == "gradient-gremlins"
    assert await verdicts(app_ctx) == []
    assert not fake_github.requests("PATCH") and not fake_github.requests("POST", r"/reactions")


async def test_an_edit_that_adds_a_verdict_is_handled_once(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 5)
    event = comment_event("/rltracker kind kl_growth", number=5)
    event.data.update(action="edited", changes={"body": {"from": "it is the KL, I think"}})
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # redelivered: the command was answered
    assert [(v.category, v.comment_id) for v in await verdicts(app_ctx)] == [
        ("kl_growth", event.data["comment"]["id"])]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
    # the same comment changed to another kind: the verdict taken back (verdicts82: it was
    # kept), not answered again, the reason recorded
    event.data.update(changes={"body": {"from": "/rltracker kind kl_growth"}})
    event.data["comment"]["body"] = "/rltracker kind entropy_collapse"
    await commands_router.dispatch(event, app_ctx)
    assert await verdicts(app_ctx) == []
    rows = await actions(app_ctx, "command")
    assert (rows[-3].details or {}).get("code", "").startswith("edited_after_answer:")
    assert rows[-2].details == {"note": "edited"}  # the one note (given at the redelivery)
    assert rows[-1].details["retraction"] == "edited"  # and the retraction, recorded


async def test_verdict_in_dry_run(ctx: Any, fake_github: Any) -> None:
    """No app credentials: the verdict is stored and the would-be comment rewritten in the
    record; nothing is posted, edited or reacted to."""
    await install(ctx, fake_github)
    await commented(ctx, fake_github, 6)
    await commands_router.dispatch(comment_event("/rltracker kind response-length-drift", number=6), ctx)
    [v] = await verdicts(ctx)
    assert v.category == "response_length_drift"
    [command] = await actions(ctx, "command")
    assert command.status == "dry_run" and command.details["category"] == "response_length_drift"
    [row] = await actions(ctx, "failure_comment")
    assert row.status == "dry_run" and "/failures/response_length_drift" in row.body
    assert not fake_github.requests("POST") and not fake_github.requests("PATCH")


async def test_not_a_failure_minimises_and_mutes(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await commented(app_ctx, fake_github, 7)
    [posted] = app_comments(fake_github, VERL, 7)
    seen: list[dict[str, Any]] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        seen.append(variables)
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    cid = fake_github.add_comment(VERL, 7, "/rltracker not-a-failure", user="alice")["id"]
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=7, comment_id=cid), app_ctx)
    assert seen == [{"id": posted["node_id"], "classifier": "OUTDATED"}]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    [v] = await verdicts(app_ctx)
    assert (v.is_failure_report, v.category) == (False, None)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 7))).muted
    # later edits and rechecks leave it: no edit, no new comment
    out = await act(app_ctx, VERL, 7, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "muted"
    assert not fake_github.requests("PATCH")
    # `kind none` says the same, and the latest verdict wins (a kind in between lifts the
    # mute: test_a_kind_after_not_a_failure_lifts_the_mute_and_restores_the_comment)
    await commands_router.dispatch(comment_event("/rltracker kind none", number=7), app_ctx)
    assert [(v.is_failure_report, v.category) for v in await verdicts(app_ctx)] == [(False, None)]
    assert len(app_comments(fake_github, VERL, 7)) == 1
    assert not fake_github.requests("PATCH") and len(seen) == 1


async def test_edits_and_the_nightly_reanalysis_keep_the_persons_kind(app_ctx: Any, fake_github: Any) -> None:
    """After `kind kl_growth`, an edit of the issue (whose analysis still says entropy
    collapse), a recheck and the nightly re-analysis leave the comment on kl_growth."""
    from bot.scheduler import step_reanalyse

    await install(app_ctx, fake_github)
    payload = await commented(app_ctx, fake_github, 8)
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=8), app_ctx)
    [set_by_person] = app_comments(fake_github, VERL, 8)
    assert "/failures/kl_growth" in set_by_person["body"]
    out = await act(app_ctx, VERL, 8, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "unchanged"
    await commands_router.dispatch(comment_event("/rltracker recheck", number=8), app_ctx)
    async with app_ctx.sessionmaker() as s:  # analysed by an older analyzer version
        await s.execute(update(Analysis).values(analyzer_version="old"))
        await s.commit()
    counts = await step_reanalyse(app_ctx)
    assert counts["reanalysed"] == 1
    [still] = app_comments(fake_github, VERL, 8)
    assert still["body"] == set_by_person["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
    [v] = await verdicts(app_ctx)
    assert v.category == "kl_growth"
    [row] = await actions(app_ctx, "failure_comment")
    assert row.details["category"] == "kl_growth"


async def test_the_thread_page_shows_the_verdict(ctx: Any) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.store.verdicts import set_verdict
    from tests.test_site import seed

    await seed(ctx)
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == "huggingface/trl", Thread.number == 8))
        await set_verdict(s, thread, is_failure_report=True, category="kl_growth",
                          login="<b>eve</b>", role="maintainer", comment_id=1)
        await s.commit()
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        html = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "kind set by @&lt;b&gt;eve&lt;/b&gt; (maintainer)" in html and "<b>eve</b>" not in html
        assert 'href="/failures/kl_growth"' in html
        async with ctx.sessionmaker() as s:
            await set_verdict(s, thread, is_failure_report=False, category=None, login="bob",
                              role="author", comment_id=2)
            await s.commit()
        html = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "not a failure report, per @bob (author)" in html


async def test_export_writes_labelled_threads(ctx: Any, fake_github: Any, tmp_path: Any) -> None:
    """One labelled thread per verdict, in the shape of the shared labelled threads; the
    command comment, what follows it and the app's own comments are left out."""
    from bot.cli.verdicts import export_verdicts
    from tests.test_cli import run_cli

    await install(ctx, fake_github)
    await commented(ctx, fake_github, 9)
    await open_issue(ctx, fake_github, 10, title="How do I set the KL coefficient?", body="A question.")
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 9))
        for gid, who, body in ((1, "bob", "Same here: KL goes up to 40."),
                               (2, "rltracker[bot]", f"{FAILURE_MARKER}\nmethods"),
                               (3, "alice", "/rltracker kind kl_growth"),
                               (4, "bob", "kl_growth indeed")):
            await upsert_comment(s, thread, {"github_id": gid, "author": who, "body": body,
                                             "created_at": f"2026-01-0{gid}T00:00:00Z"})
        await s.commit()
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=9, comment_id=3), ctx)
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=10), ctx)
    rows = await export_verdicts(ctx)
    assert [(r["number"], r["labels"]) for r in rows] == [
        (9, {"is_failure_report": True, "category": "kl_growth"}),
        (10, {"is_failure_report": False, "category": None})]
    shared_keys = {"id", "repo", "number", "kind", "url", "title", "state", "author",
                   "created_at", "body", "comments", "complete", "labels"}
    # url only when stored (these threads were stored without it: the contract's missing key)
    assert set(rows[0]) | {"url"} == shared_keys | {"verdict"} and "url" not in rows[0]
    assert rows[0]["id"] == f"{VERL}#9" and rows[0]["kind"] == "issue"
    assert rows[0]["comments"] == [{"author": "bob", "created_at": "2026-01-01",
                                    "body": "Same here: KL goes up to 40."}]
    assert rows[0]["verdict"]["login"] == "alice" and rows[0]["verdict"]["role"] == "author"
    # the command line writes the same, one JSON object a line
    out = tmp_path / "verdicts.jsonl"
    result = await asyncio.to_thread(run_cli, "verdicts", "export", "--out", str(out),
                                     env={"DATABASE_URL": ctx.settings.database_url})
    assert result.returncode == 0, result.stderr
    assert "2 verdicts exported" in result.stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows


async def test_a_verdict_on_a_thread_not_stored_yet_stores_it(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """A delivery's handlers run in no fixed order: the command may come before the handler
    that stores the comment's thread. The verdict is not lost: the thread is stored first."""
    from gidgethub import sansio

    repo = "Codertocat/Hello-World"
    await install(app_ctx, fake_github, repo=repo, framework="verl")
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker not-a-failure"
    data["installation"] = {"id": 4711}
    event = sansio.Event(data, event="issue_comment", delivery_id="first-sight")
    await commands_router.dispatch(event, app_ctx)  # the commands router alone
    [v] = await verdicts(app_ctx)
    assert (v.is_failure_report, v.login, v.role) == (False, "Codertocat", "author")
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.id == v.thread_id))
        assert (thread.repo, thread.number, thread.muted) == (repo, data["issue"]["number"], True)


async def test_a_kind_without_a_comment_is_stored_and_a_recheck_uses_it(app_ctx: Any, fake_github: Any) -> None:
    """No failure comment on the thread (the analyzer saw no report): `kind` only stores the
    verdict; a later `/rltracker recheck` decides with the person's kind and posts it as theirs."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 12, title="Reward flat", body="The KL climbs to 50 by step 400.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=12), app_ctx)
    assert app_comments(fake_github, VERL, 12) == []
    assert [v.category for v in await verdicts(app_ctx)] == ["kl_growth"]
    await commands_router.dispatch(comment_event("/rltracker recheck", number=12), app_ctx)
    [comment] = app_comments(fake_github, VERL, 12)
    assert "/failures/kl_growth" in comment["body"] and "set with `/rltracker kind`" in comment["body"]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "posted" and row.details["set_by"] == "author"


async def test_a_retried_older_verdict_does_not_replace_a_newer_one(app_ctx: Any, fake_github: Any) -> None:
    """`kind response-length-drift` fails at GitHub (its PATCH answered 422) and its delivery
    waits for a retry; meanwhile a later comment says `kind kl_growth`. The retry of the
    older command does its work, but the latest verdict (by when the comments were written)
    is the one kept and said."""
    import pytest
    from gidgethub import BadRequest

    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 20)
    now = datetime.now(UTC)
    older = comment_event("/rltracker kind response-length-drift", number=20)
    older.data["comment"]["created_at"] = iso(now - timedelta(minutes=2))
    newer = comment_event("/rltracker kind kl_growth", number=20)
    newer.data["comment"]["created_at"] = iso(now - timedelta(minutes=1))
    fake_github.fail_next("PATCH", r"/issues/comments/\d+", 422)
    with pytest.raises(BadRequest):
        await commands_router.dispatch(older, app_ctx)
    await commands_router.dispatch(newer, app_ctx)
    await commands_router.dispatch(older, app_ctx)  # the worker's retry
    assert [(v.category, v.comment_id) for v in await verdicts(app_ctx)] == [
        ("kl_growth", newer.data["comment"]["id"])]
    [comment] = app_comments(fake_github, VERL, 20)
    assert "/failures/kl_growth" in comment["body"]
    assert "/failures/response_length_drift" not in comment["body"]



async def test_an_issue_processed_after_a_kind_is_commented_with_the_persons_kind(
        app_ctx: Any, fake_github: Any) -> None:
    """The issue's `opened` delivery failed and waits for its retry while the author's
    `/rltracker kind kl_growth` is handled (no failure comment yet: only stored). The retry
    posts the comment with the person's kind, said as theirs, not the analyzer's."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 21)
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=21), app_ctx)
    assert app_comments(fake_github, VERL, 21) == []
    out = await act(app_ctx, VERL, 21, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    [comment] = app_comments(fake_github, VERL, 21)
    assert "/failures/kl_growth" in comment["body"] and "/failures/entropy_collapse" not in comment["body"]
    assert "set with `/rltracker kind`" in comment["body"]


async def test_export_stops_at_the_verdict_when_its_comment_was_deleted(ctx: Any, fake_github: Any) -> None:
    """People delete a command comment once the app has acted on it: the export still leaves
    out what was written from the verdict on (a reply naming the kind names the label)."""
    from bot.cli.verdicts import export_verdicts

    await install(ctx, fake_github)
    await commented(ctx, fake_github, 22)
    event = comment_event("/rltracker kind kl_growth", number=22, comment_id=3)
    event.data["comment"]["created_at"] = "2026-01-03T00:00:00Z"
    await commands_router.dispatch(event, ctx)
    async with ctx.sessionmaker() as s:  # the command comment deleted on GitHub: not stored
        thread = await s.scalar(select(Thread).where(Thread.number == 22))
        for gid, body in ((1, "Same here: KL goes up to 40."), (4, "kl_growth indeed")):
            await upsert_comment(s, thread, {"github_id": gid, "author": "bob", "body": body,
                                             "created_at": f"2026-01-0{gid}T00:00:00Z"})
        await s.commit()
    [row] = await export_verdicts(ctx)
    assert [c["body"] for c in row["comments"]] == ["Same here: KL goes up to 40."]


async def test_a_verdict_cut_short_is_finished_by_the_retry(
        app_ctx: Any, fake_github: Any, monkeypatch: Any) -> None:
    """The worker is stopped (its task cancelled) or killed while a `kind` is being handled:
    once after the command was recorded but before the verdict was stored, once before the
    comment was rewritten. The delivery is taken again; its retry must store the verdict and
    rewrite the comment, not find the command "already handled"."""
    import pytest

    import bot.speaking.verdict
    import bot.store.verdicts

    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 23)
    for module, name in ((bot.store.verdicts, "set_verdict"),
                         (bot.speaking.verdict, "comment_after_kind")):
        real = getattr(module, name)
        calls = {"n": 0}

        async def cut_short(*args: Any, _real: Any = real, _calls: Any = calls, **kw: Any) -> Any:
            _calls["n"] += 1
            if _calls["n"] == 1:
                raise asyncio.CancelledError
            return await _real(*args, **kw)

        monkeypatch.setattr(module, name, cut_short)
        kind = "kl_growth" if name == "set_verdict" else "response_length_drift"
        event = comment_event(f"/rltracker kind {kind}", number=23)
        with pytest.raises(asyncio.CancelledError):
            await commands_router.dispatch(event, app_ctx)
        await commands_router.dispatch(event, app_ctx)  # the row taken again
        assert [v.category for v in await verdicts(app_ctx)] == [kind]
        [comment] = app_comments(fake_github, VERL, 23)
        assert f"/failures/{kind}" in comment["body"], name
        monkeypatch.setattr(module, name, real)


async def test_two_verdicts_at_once_do_not_freeze_the_comment_as_edited_by_a_person(
        app_ctx: Any, fake_github: Any) -> None:
    """Two replicas handle two `kind` commands on one thread at once: the second read our
    comment's record before the first rewrote it. Reading GitHub, it finds the first's text,
    which is ours, not a person's edit: it rewrites the comment for the latest verdict
    instead of leaving it frozen as "edited on GitHub"."""
    from bot.speaking.failure_comment import update_failure_comment, with_verdict
    from bot.speaking.repo_config import get_repo_config
    from bot.speaking.situation import load_situation
    from bot.store.verdicts import as_failure, set_verdict, verdict_of

    await install(app_ctx, fake_github)
    payload = await commented(app_ctx, fake_github, 24)
    stale = await load_situation(app_ctx, VERL, 24, payload)  # the second replica's read
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=24), app_ctx)
    async with app_ctx.sessionmaker() as s:  # the second command's verdict, the latest
        thread = await s.scalar(select(Thread).where(Thread.number == 24))
        await set_verdict(s, thread, is_failure_report=True, category="response_length_drift",
                          login="alice", role="author", comment_id=None)
        await s.commit()
        verdict = await verdict_of(s, VERL, 24)
    config = await get_repo_config(app_ctx, VERL, stale.installation_id, row=stale.repository)
    out = await update_failure_comment(app_ctx, stale, with_verdict({}, as_failure(verdict)),
                                       config, asked=True)
    assert out == "updated"
    [comment] = app_comments(fake_github, VERL, 24)
    assert "/failures/response_length_drift" in comment["body"]
    [row] = await actions(app_ctx, "failure_comment")
    assert not row.frozen and not (row.details or {}).get("edited_on_github")
    assert row.body == comment["body"]


async def test_export_keeps_a_comments_words_around_a_command_as_the_analysis_reads_them(
        ctx: Any, fake_github: Any) -> None:
    """The export is what `python -m training --extra` fits on: its comments must be what the
    app's analyzers read (bot.analysis.analysis_input): a comment's command lines left out,
    its other words kept; a comment of commands alone left out."""
    from bot.analysis import analysis_input
    from bot.cli.verdicts import export_verdicts

    await install(ctx, fake_github)
    await commented(ctx, fake_github, 24)
    bodies = ((1, "Same here: KL goes up to 40 after step 300.\n/rltracker methods kl_growth\n"),
              (2, "/rltracker recheck"))
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 24))
        for gid, body in bodies:
            await upsert_comment(s, thread, {"github_id": gid, "author": "bob", "body": body,
                                             "created_at": f"2026-01-0{gid}T00:00:00Z"})
        await s.commit()
    event = comment_event("/rltracker kind kl_growth", number=24, comment_id=3)
    event.data["comment"]["created_at"] = "2026-01-03T00:00:00Z"
    await commands_router.dispatch(event, ctx)
    [row] = await export_verdicts(ctx)
    read = analysis_input({"comments": [{"body": b} for _, b in bodies]})["comments"]
    assert [c["body"] for c in row["comments"]] == [c["body"] for c in read] == [
        "Same here: KL goes up to 40 after step 300.\n"]


class Minimising:
    """The fake server's GraphQL answers for minimizeComment / unminimizeComment: whether
    each of the app's comments (by node id) is minimised, and the mutations in order."""

    def __init__(self) -> None:
        self.minimized: dict[str, bool] = {}
        self.calls: list[tuple[str, str]] = []

    def __call__(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "nodes(" in query:  # the app reads a comment before it minimises it
            return {"data": {"rateLimit": None, "nodes": [
                {"__typename": "IssueComment", "id": node, "isMinimized": self.minimized.get(node, False),
                 "minimizedReason": "OUTDATED" if self.minimized.get(node) else None,
                 "up": {"totalCount": 0}, "down": {"totalCount": 0}} for node in variables["ids"]]}}
        node = variables["id"]
        if "unminimizeComment" in query:
            self.calls.append(("unminimize", node))
            self.minimized[node] = False
            return {"data": {"unminimizeComment": {"unminimizedComment": {"isMinimized": False}}}}
        assert "minimizeComment" in query and variables["classifier"] == "OUTDATED"
        self.calls.append(("minimize", node))
        self.minimized[node] = True
        return {"data": {"minimizeComment": {"minimizedComment": {
            "isMinimized": True, "minimizedReason": "outdated"}}}}


async def muted(ctx: Any, number: int) -> bool:
    async with ctx.sessionmaker() as s:
        return bool((await s.scalar(select(Thread).where(Thread.number == number))).muted)


def written(event: Any, at: datetime) -> Any:
    event.data["comment"]["created_at"] = iso(at)
    return event


async def test_a_kind_after_not_a_failure_lifts_the_mute_and_restores_the_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """`not-a-failure`, then (later) `kind kl_growth` on the same thread: the latest word wins.
    The mute the first set is lifted, the comment it minimised is rewritten for kl_growth and
    shown again (unminimizeComment), once: a redelivery changes nothing more. An edit of the
    issue is then decided as on any thread with a verdict, and a later `not-a-failure` mutes
    and minimises again."""
    await install(app_ctx, fake_github)
    payload = await commented(app_ctx, fake_github, 31)
    [posted] = app_comments(fake_github, VERL, 31)
    github = Minimising()
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=31), now - timedelta(minutes=3)), app_ctx)
    assert github.minimized == {posted["node_id"]: True} and await muted(app_ctx, 31)

    kind = written(comment_event("/rltracker kind kl_growth", number=31), now - timedelta(minutes=2))
    for _ in range(2):  # delivered, then redelivered
        await commands_router.dispatch(kind, app_ctx)
        assert not await muted(app_ctx, 31)
        assert github.calls == [("minimize", posted["node_id"]), ("unminimize", posted["node_id"])]
        [comment] = app_comments(fake_github, VERL, 31)
        assert comment["id"] == posted["id"]
        assert "/failures/kl_growth" in comment["body"] and "/failures/entropy_collapse" not in comment["body"]
        assert "the issue's author set with `/rltracker kind`" in comment["body"]
        assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
        [row] = await actions(app_ctx, "failure_comment")
        assert (row.is_minimized, row.minimized_reason, row.frozen) == (False, None, False)
        assert row.body == comment["body"] and row.details["category"] == "kl_growth"
        assert "minimized_by" not in row.details
    out = await act(app_ctx, VERL, 31, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "unchanged"  # the person's kind, no longer "muted"

    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=31), now - timedelta(minutes=1)), app_ctx)
    assert github.minimized == {posted["node_id"]: True} and await muted(app_ctx, 31)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized
    assert [(v.is_failure_report, v.category) for v in await verdicts(app_ctx)] == [(False, None)]


async def test_a_kind_after_stop_leaves_the_thread_muted(app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker stop` asks the app to be quiet on the thread, whatever its kind: a later
    `kind` (after a not-a-failure too) is stored and shown, and lifts neither the mute nor the
    minimised comment. A retried older `not-a-failure` after a newer `kind` does not mute:
    what is done is the latest verdict's."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 32)
    github = Minimising()
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await commands_router.dispatch(comment_event("/rltracker stop", number=32), app_ctx)
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=32), now - timedelta(minutes=2)), app_ctx)
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=32), now - timedelta(minutes=1)), app_ctx)
    assert await muted(app_ctx, 32)
    assert [c for c, _ in github.calls] == ["minimize"]
    assert not fake_github.requests("PATCH")
    assert [v.category for v in await verdicts(app_ctx)] == ["kl_growth"]

    await commented(app_ctx, fake_github, 33)
    older = written(comment_event("/rltracker not-a-failure", number=33), now - timedelta(minutes=2))
    newer = written(comment_event("/rltracker kind kl_growth", number=33), now - timedelta(minutes=1))
    await commands_router.dispatch(newer, app_ctx)
    await commands_router.dispatch(older, app_ctx)  # handled after the newer one
    assert not await muted(app_ctx, 33)
    [comment] = app_comments(fake_github, VERL, 33)
    assert "/failures/kl_growth" in comment["body"]
    assert [c for c, _ in github.calls] == ["minimize"]  # only thread 32's, by stop


def hold_the_post(fake: Any, number: int) -> tuple[asyncio.Event, asyncio.Event]:
    """The fake server holds the app's POST of a comment on issue `number` until `release`
    is set (`reached` says the post is under way), then creates it as GitHub would."""
    reached, release = asyncio.Event(), asyncio.Event()

    @fake.route("POST", rf"/repos/[^/]+/[^/]+/issues/{number}/comments")
    async def held(fake: Any, request: Any, match: Any, body: Any) -> Any:
        reached.set()
        await release.wait()
        comment = fake.add_comment(VERL, number, body["body"], "rltracker[bot]", "Bot")
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    return reached, release


async def test_a_kind_given_while_the_first_comment_is_being_posted_is_said(
        app_ctx: Any, fake_github: Any) -> None:
    """Two deliveries at once: one replica posts the first failure comment (the analyzer said
    entropy collapse) while another handles the author's `/rltracker kind kl_growth`, which
    finds the comment's slot claimed but not yet posted. The poster reads the verdict again
    once it has posted: the comment ends on kl_growth, said as the person's, with no edit
    or recheck in between, and there is one comment."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 34)
    reached, release = hold_the_post(fake_github, 34)
    posting = asyncio.create_task(
        act(app_ctx, VERL, 34, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=34), app_ctx)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "pending"  # the kind found nothing posted to rewrite
    release.set()
    assert (await posting)["failure_comment"] == "posted"
    [comment] = app_comments(fake_github, VERL, 34)
    assert "/failures/kl_growth" in comment["body"] and "/failures/entropy_collapse" not in comment["body"]
    assert "the issue's author set with `/rltracker kind`" in comment["body"]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "posted" and row.body == comment["body"]
    assert row.details["category"] == "kl_growth" and row.details["set_by"] == "author"


async def test_not_a_failure_given_while_the_first_comment_is_being_posted_hides_it(
        app_ctx: Any, fake_github: Any) -> None:
    """The same with `/rltracker not-a-failure`: the command mutes the thread but finds no
    posted comment to minimise; the poster, reading the verdict again, minimises the comment
    it has just posted."""
    await install(app_ctx, fake_github)
    github = Minimising()
    fake_github.graphql_handler = github
    payload = await open_issue(app_ctx, fake_github, 35)
    reached, release = hold_the_post(fake_github, 35)
    posting = asyncio.create_task(
        act(app_ctx, VERL, 35, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=35), app_ctx)
    assert github.calls == [] and await muted(app_ctx, 35)
    release.set()
    await posting
    [comment] = app_comments(fake_github, VERL, 35)
    assert github.minimized == {comment["node_id"]: True}
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and row.details["minimized_by"] == "not-a-failure"


async def test_not_a_failure_and_a_later_kind_at_once_end_with_the_kind(
        app_ctx: Any, fake_github: Any) -> None:
    """Two replicas: `not-a-failure` is minimising the comment (GitHub has not answered yet)
    when a later `kind kl_growth` is handled from start to end (it finds the comment still
    shown, nothing of the verdict's to undo). The first reads the verdict again after its
    work and does the latest's: the comment ends shown, on kl_growth, the thread unmuted."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 36)
    [posted] = app_comments(fake_github, VERL, 36)
    github = Minimising()
    reached, release = asyncio.Event(), asyncio.Event()

    async def held(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "unminimizeComment" not in query:
            reached.set()
            await release.wait()
        return github(query, variables)

    fake_github.graphql_handler = held
    now = datetime.now(UTC)
    first = asyncio.create_task(commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=36), now - timedelta(minutes=2)), app_ctx))
    await reached.wait()
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=36), now - timedelta(minutes=1)), app_ctx)
    release.set()
    await first
    assert github.calls == [("minimize", posted["node_id"]), ("unminimize", posted["node_id"])]
    assert not await muted(app_ctx, 36)
    [comment] = app_comments(fake_github, VERL, 36)
    assert "/failures/kl_growth" in comment["body"]
    [row] = await actions(app_ctx, "failure_comment")
    assert not row.is_minimized and row.body == comment["body"]


async def test_the_label_follows_the_kind_a_person_sets(app_ctx: Any, fake_github: Any) -> None:
    """The repository's config labels each failure kind. The failure comment added the
    analyzer's kind's label; a `/rltracker kind kl_growth` rewrote the comment for kl_growth
    and left `rl: entropy` on the issue (kl_growth's label never added), and after
    `not-a-failure` the issue still carried a failure label. The label the app added follows
    the comment's kind and goes with not-a-failure; a label a person put there stays."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "labels:\n  entropy_collapse: 'rl: entropy'\n"
                         "  kl_growth: 'rl: kl'\n")
    await commented(app_ctx, fake_github, 41)

    def labels() -> list[str]:
        return sorted(label["name"] for label in fake_github.issue(VERL, 41)["labels"])

    assert labels() == ["rl: entropy"]
    fake_github.issue(VERL, 41)["labels"].append({"name": "needs-triage"})  # a person's
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=41), now - timedelta(minutes=3)), app_ctx)
    [comment] = app_comments(fake_github, VERL, 41)
    assert "/failures/kl_growth" in comment["body"]
    assert labels() == ["needs-triage", "rl: kl"]
    github = Minimising()
    fake_github.graphql_handler = github
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=41), now - timedelta(minutes=2)), app_ctx)
    assert github.minimized == {comment["node_id"]: True}
    assert labels() == ["needs-triage"]
    # a later kind shows the comment again, with its kind's label
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=41), now - timedelta(minutes=1)), app_ctx)
    assert github.minimized == {comment["node_id"]: False}
    assert labels() == ["needs-triage", "rl: kl"]


async def test_stop_given_while_the_first_comment_is_being_posted_hides_it(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker stop` minimises the app's comments and mutes the thread. Given while
    another worker or replica is still posting the failure comment (GitHub holding the POST),
    it muted the thread and found nothing posted to minimise; the poster read only the verdict
    again, so the comment stayed shown for good. The poster now also reads whether the thread
    was stopped meanwhile and minimises what it has just posted."""
    await install(app_ctx, fake_github)
    github = Minimising()
    fake_github.graphql_handler = github
    payload = await open_issue(app_ctx, fake_github, 37)
    reached, release = hold_the_post(fake_github, 37)
    posting = asyncio.create_task(
        act(app_ctx, VERL, 37, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    await commands_router.dispatch(comment_event("/rltracker stop", number=37), app_ctx)
    assert github.calls == [] and await muted(app_ctx, 37)
    release.set()
    await posting
    [comment] = app_comments(fake_github, VERL, 37)
    assert github.minimized == {comment["node_id"]: True}
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and row.details["minimized_by"] == "stop"


async def test_not_a_failure_leaves_the_rule_summary_shown(app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker not-a-failure` minimises the app's failure comment (docs/comments.md); a
    rule-summary reply is never on a failure report, and a person saying the thread is none
    agrees with it. The verdict minimised it too, as `stop` does."""
    from tests.test_actions_e2e import PROPOSAL, RULES_MARKER

    await install(app_ctx, fake_github)
    github = Minimising()
    fake_github.graphql_handler = github
    payload = await open_issue(app_ctx, fake_github, 38, title="Add GSPO",
                               body="Please add GSPO (arXiv 2507.18071).")
    out = await act(app_ctx, VERL, 38, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=38), app_ctx)
    assert await muted(app_ctx, 38)
    assert github.calls == []
    [row] = await actions(app_ctx, "rule_summary")
    assert not row.is_minimized
    assert app_comments(fake_github, VERL, 38, RULES_MARKER)


async def test_a_kind_said_after_posting_is_finished_by_the_retry_when_github_failed(
        app_ctx: Any, fake_github: Any) -> None:
    """A kind given while the first comment was being posted: the poster rewrites the comment
    for it after posting, but GitHub fails that edit (502 on every retry). The delivery is
    retried by the worker, which found the comment posted ("owned") and did nothing more: the
    comment kept the analyzer's kind until the next edit or recheck. The retry settles the
    verdict too."""
    import gidgethub
    import pytest

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 39)
    reached, release = hold_the_post(fake_github, 39)
    posting = asyncio.create_task(
        act(app_ctx, VERL, 39, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=39), app_ctx)
    fake_github.fail_next("PATCH", r"/issues/comments/\d+$", 502, times=5)  # the client's attempts
    release.set()
    with pytest.raises(gidgethub.GitHubException):
        await posting
    [comment] = app_comments(fake_github, VERL, 39)
    assert "/failures/entropy_collapse" in comment["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+$")) == 5
    await act(app_ctx, VERL, 39, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 39)
    assert "/failures/kl_growth" in comment["body"] and "/failures/entropy_collapse" not in comment["body"]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "posted" and row.body == comment["body"]


async def test_a_kind_whose_rewrite_answer_was_lost_is_finished_by_the_redelivery(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker kind` rewrites the failure comment; GitHub applies the PATCH but the
    connection drops before its answer. The command's redelivery read the person's kind on
    GitHub, which the record did not hold yet, took the app's own text for a person's edit
    and froze the comment: no later kind could change it. The text the app was about to
    write is its own: the redelivery records it, and a later kind still rewrites the comment."""
    import pytest

    from tests.test_actions_e2e import lose_the_patch_answer

    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 41)
    lost = lose_the_patch_answer(fake_github, VERL, "disconnect")
    event = comment_event("/rltracker kind kl_growth", number=41)
    with pytest.raises(Exception):  # noqa: B017 - whatever the lost connection raises
        await commands_router.dispatch(event, app_ctx)
    [comment] = app_comments(fake_github, VERL, 41)
    assert "/failures/kl_growth" in comment["body"]  # applied
    lost["on"] = False
    await commands_router.dispatch(event, app_ctx)  # the delivery taken again
    [row] = await actions(app_ctx, "failure_comment")
    assert not row.frozen and not (row.details or {}).get("edited_on_github")
    assert row.body == comment["body"] and row.details["category"] == "kl_growth"
    await commands_router.dispatch(
        comment_event("/rltracker kind response_length_drift", number=41), app_ctx)
    [comment] = app_comments(fake_github, VERL, 41)
    assert "/failures/response_length_drift" in comment["body"]


async def test_a_member_or_collaborator_without_write_access_gives_no_verdict_on_others_threads(
        app_ctx: Any, fake_github: Any) -> None:
    """author_association MEMBER says only that the commenter belongs to the organisation
    owning the repository (its base permission may be read or none), COLLABORATOR that they
    were invited with some role (maybe read or triage). A verdict on someone else's thread
    speaks as a maintainer: it can undo a maintainer's not-a-failure (lifting the mute and
    showing the comment again) and becomes a training label. So GitHub is asked (as for
    `resume`): write, maintain or admin may; read, triage or no access get the
    `not_maintainer` skip and change nothing. The thread's author is not asked (their own
    finding to correct), nor is an OWNER."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 40)
    [posted] = app_comments(fake_github, VERL, 40)
    fake_github.calls.clear()  # (the comment's own role check of its author, alice)
    github = Minimising()
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", user="olga", association="OWNER", number=40),
        now - timedelta(minutes=5)), app_ctx)
    assert github.minimized == {posted["node_id"]: True} and await muted(app_ctx, 40)
    assert not fake_github.requests("GET", r"/collaborators/")  # an owner: not asked

    fake_github.set_permission(VERL, "dana", "read")
    fake_github.set_permission(VERL, "rita", "triage")
    for minutes, (login, association) in enumerate(
            [("dana", "MEMBER"), ("rita", "COLLABORATOR"), ("erin", "MEMBER")]):  # erin: 404
        event = written(comment_event("/rltracker kind kl_growth", user=login, association=association,
                                      number=40), now - timedelta(minutes=4 - minutes))
        await commands_router.dispatch(event, app_ctx)
    assert [(v.login, v.is_failure_report) for v in await verdicts(app_ctx)] == [("olga", False)]
    assert await muted(app_ctx, 40) and github.calls == [("minimize", posted["node_id"])]
    assert not fake_github.requests("PATCH")
    skips = [a for a in await actions(app_ctx, "command") if a.status == "skipped"]
    assert [a.details["code"].split(":")[0] for a in skips] == ["not_maintainer"] * 3
    assert len(fake_github.requests("GET", rf"/repos/{VERL}/collaborators/[^/]+/permission")) == 3

    # The thread's author, a member here, corrects the finding on their own thread unasked.
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", user="alice", opener="alice", association="MEMBER", number=40),
        now - timedelta(minutes=1)), app_ctx)
    assert not await muted(app_ctx, 40)
    assert [(v.login, v.role, v.category) for v in await verdicts(app_ctx)] == [("alice", "author", "kl_growth")]
    assert len(fake_github.requests("GET", r"/collaborators/")) == 3

    # A collaborator with write access may, as a maintainer.
    fake_github.set_permission(VERL, "walt", "write")
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", user="walt", association="COLLABORATOR", number=40), now), app_ctx)
    assert await muted(app_ctx, 40) and github.minimized == {posted["node_id"]: True}
    assert [(v.login, v.role) for v in await verdicts(app_ctx)] == [("walt", "maintainer")]


async def test_export_to_stdout_is_utf8_whatever_the_locale(ctx: Any, fake_github: Any) -> None:
    """The export is JSON lines, UTF-8 (RFC 8259; the labelled threads it is fitted with
    alongside). Under a locale that is not UTF-8 (PYTHONIOENCODING=latin-1, a redirected
    Windows console) a verdict on a Chinese thread stopped `rltracker verdicts export` on
    stdout with a UnicodeEncodeError traceback reported as a bug, exit 1, nothing exported."""
    import subprocess
    import sys

    from tests.test_cli import CLEAN_ENV

    await install(ctx, fake_github)
    await open_issue(ctx, fake_github, 11, title="训练过程中熵崩溃", body="熵在第40步后降到零。")
    await commands_router.dispatch(comment_event("/rltracker kind entropy_collapse", number=11), ctx)
    result = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot.cli", "verdicts", "export"],
        env={**CLEAN_ENV, "DATABASE_URL": ctx.settings.database_url, "PYTHONIOENCODING": "latin-1"},
        capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    [row] = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert row["title"] == "训练过程中熵崩溃" and row["labels"]["category"] == "entropy_collapse"


async def test_verdicts_export_counts_one_verdict_in_the_singular(ctx: Any, tmp_path: Any) -> None:
    """`rltracker verdicts export` ended with "1 verdicts exported"."""
    from bot.store.models import Verdict
    from bot.store.threads import upsert_thread
    from tests.test_cli import run_cli

    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {"repo": VERL, "number": 31, "kind": "issue",
                                               "title": "KL grows", "state": "open"})
        session.add(Verdict(thread_id=thread.id, is_failure_report=True, category="kl_growth",
                            login="alice", role="author"))
    result = await asyncio.to_thread(run_cli, "verdicts", "export", "--out", str(tmp_path / "v.jsonl"),
                                     env={"DATABASE_URL": ctx.settings.database_url})
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "1 verdict exported", result.stderr


def test_verdicts_wanted_limit_is_told_one_way() -> None:
    """`verdicts wanted --limit x` said "expected a whole number, 0 or more" and `--limit 0`
    then "--limit must be a whole number from 1", in another form: one rule, said as every
    other bad argument is."""
    from tests.test_cli import run_cli

    for value in ("0", "-1", "x"):
        result = run_cli("verdicts", "wanted", "--limit", value, env={})
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == (
            f"rltracker verdicts wanted: argument --limit: '{value}': expected a whole number "
            "from 1 (see `rltracker verdicts wanted --help`)"), result.stderr
