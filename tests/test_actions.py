"""Quiet rules as pure functions, and the whole chain through the real Router: webhook payload
-> events handler -> stored thread -> pipeline (analysis stored) -> actions."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.speaking.quiet import live_record, maintainer_replies, quiet_reason
from bot.speaking.render import FAILURE_MARKER
from bot.speaking.repo_config import RepoConfig
from bot.store.models import Action, Analysis
from tests.test_actions_e2e import INST, VERL, install, iso

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def record(**kw: Any) -> dict[str, Any]:
    base = {"kind": "issue", "state": "open", "author": "alice", "author_is_bot": False,
            "labels": [], "assignees": [], "comments": [], "created_at": iso(NOW - timedelta(hours=1))}
    base.update(kw)
    return base


def reason(rec: dict[str, Any], trigger: str = "issues.opened", **kw: Any) -> str | None:
    config = kw.pop("config", RepoConfig())
    out = quiet_reason(rec, config=config, trigger=trigger, now=NOW, **kw)
    return out[0] if out else None


def test_quiet_rules_table() -> None:
    maint = {"author": "bob", "author_association": "MEMBER", "body": "Looking.", "created_at": iso(NOW)}
    assert reason(record()) is None
    assert reason(record(comments=[maint])) == "maintainer_replied"
    # commands, the app's own comments, bots and the opener's own comments do not count
    for c in (
        {**maint, "body": "/rltracker recheck"},
        {**maint, "author": "rltracker[bot]", "author_is_bot": True, "body": FAILURE_MARKER + " hi"},
        {**maint, "author": "ci[bot]", "author_is_bot": True},
        {**maint, "author": "alice"},
        {**maint, "author_association": "CONTRIBUTOR"},
    ):
        assert reason(record(comments=[c])) is None, c
    # the app's marker in a person's comment makes it no comment of the app's (security71)
    assert reason(record(comments=[{**maint, "body": FAILURE_MARKER + " hi"}])) == "maintainer_replied"
    assert reason(record(assignees=["bob"])) == "assigned"
    assert reason(record(labels=["needs-info"])) == "labelled"
    assert reason(record(labels=["bug"]), ignore_labels={"bug"}) is None
    assert reason(record(labels=["Bug"]), config=RepoConfig(ignore_labels=("bug",))) is None
    assert reason(record(labels=["rl: entropy"]), config=RepoConfig(labels={"entropy_collapse": "rl: entropy"})) is None
    assert reason(record(), linked_pr=12) == "linked_pr"
    assert reason(record(created_at=iso(NOW - timedelta(hours=49)))) == "too_old"
    assert reason(record(state="closed")) == "closed"
    assert reason(record(kind="pull_request")) == "not_issue"
    assert reason(record(author="x[bot]")) == "bot_author"
    assert reason(record(), muted=True) == "muted"
    assert reason(record(), paused=True) == "paused"
    assert reason(record(), config=RepoConfig(failure_comments=False)) == "config_off"
    # A recheck asked for by the author or a maintainer lifts the "people are on it" rules.
    assert reason(record(comments=[maint], labels=["x"], created_at=iso(NOW - timedelta(days=9))), "command") is None
    assert reason(record(state="closed"), "command") == "closed"


def test_maintainer_replies_after() -> None:
    early = {"author": "bob", "author_association": "OWNER", "body": "a", "created_at": iso(NOW - timedelta(hours=2))}
    late = {**early, "created_at": iso(NOW)}
    rec = record(comments=[early, late])
    assert len(maintainer_replies(rec)) == 2
    assert maintainer_replies(rec, after=NOW - timedelta(hours=1)) == [late]


def test_a_maintainers_words_after_a_command_are_a_reply() -> None:
    """A command is a line (bot/command_syntax.py), as the analyzers and the command handler
    read it: a comment of commands alone is no reply, but one that goes on after its command
    line answers the report like any other."""
    maint = {"author": "bob", "author_association": "MEMBER", "created_at": iso(NOW)}
    for body in ("/rltracker recheck", "  /rltracker ignore\n", "/rltracker methods kl_growth\n/rltracker rules"):
        assert maintainer_replies(record(comments=[{**maint, "body": body}])) == [], body
    for body in ("/rltracker methods kl_growth\nWe have seen this: lower the learning rate.",
                 "/rltrackers are not what you need here."):
        assert len(maintainer_replies(record(comments=[{**maint, "body": body}]))) == 1, body


def test_live_record_from_rest() -> None:
    issue = {"state": "open", "labels": [{"name": "x"}], "assignees": [{"login": "bob"}],
             "user": {"login": "alice", "type": "User"}}
    comments = [{"user": {"login": "bob", "type": "User"}, "author_association": "MEMBER",
                 "body": "hi", "created_at": iso(NOW)}]
    live = live_record(issue, comments, record())
    assert live["labels"] == ["x"] and live["assignees"] == ["bob"]
    assert maintainer_replies(live)[0]["author"] == "bob"
    assert live_record({**issue, "pull_request": {}}, [], record())["kind"] == "pull_request"


def opened_payload(fake: Any, number: int, title: str, body: str) -> dict[str, Any]:
    issue = fake.add_issue(VERL, number, title, body, "alice", created_at=iso(datetime.now(UTC)))
    return json.loads(json.dumps({
        "action": "opened", "issue": copy.deepcopy(issue), "repository": fake.repo_json(VERL),
        "installation": {"id": INST}, "sender": {"login": "alice", "type": "User"},
    }))


async def test_router_chain_non_failure_issue(app_ctx: Any, fake_github: Any) -> None:
    from bot.webhooks.routers import router

    await install(app_ctx, fake_github)
    payload = opened_payload(fake_github, 101, "Docs: typo in the quickstart", "The word 'teh' should be 'the'.")
    await router.dispatch(sansio.Event(payload, event="issues", delivery_id="r-101"), app_ctx)
    async with app_ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Action).where(Action.number == 101)))
        assert await s.scalar(select(Analysis.id)) is not None
    assert [(r.kind, r.status) for r in rows] == [("failure_comment", "skipped")]
    assert not fake_github.comments_of(VERL, 101)


async def test_router_chain_failure_issue(app_ctx: Any, fake_github: Any) -> None:
    from bot.webhooks.routers import router

    await install(app_ctx, fake_github)
    payload = opened_payload(
        fake_github, 102, "Entropy collapse during GRPO training",
        "Policy entropy collapses to almost zero after 150 steps and the reward plateaus. "
        "Training keeps running without errors, but the model stops exploring.",
    )
    event = sansio.Event(payload, event="issues", delivery_id="r-102")
    await router.dispatch(event, app_ctx)
    async with app_ctx.sessionmaker() as s:
        analysis = await s.scalar(select(Analysis))
    if not analysis.is_failure_report or (analysis.result["failure"].get("confidence") or 0) < 0.7:
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    await router.dispatch(event, app_ctx)  # the same delivery again
    posted = [c for c in fake_github.comments_of(VERL, 102) if FAILURE_MARKER in c["body"]]
    assert len(posted) == 1


async def test_concurrent_pipeline_runs_store_one_analysis_and_one_decision(app_ctx: Any, fake_github: Any) -> None:
    import asyncio

    from bot.pipeline import thread_changed
    from tests.test_actions_e2e import open_issue

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 103, title="Question about batch size", body="Which value?")
    await asyncio.gather(*[
        thread_changed(app_ctx, VERL, 103, trigger="issues.opened", payload=payload) for _ in range(3)
    ])
    async with app_ctx.sessionmaker() as s:
        assert len(list(await s.scalars(select(Analysis)))) == 1
        rows = list(await s.scalars(select(Action).where(Action.number == 103)))
    assert len(rows) == 1 and rows[0].status == "skipped"
    assert not fake_github.comments_of(VERL, 103)


async def test_router_chain_chinese_report_with_config(app_ctx: Any, fake_github: Any) -> None:
    """A Chinese report pasting a verl script with clip-higher already on: a Chinese comment
    that names the setting as already on and does not suggest it."""
    from bot.webhooks.routers import router

    await install(app_ctx, fake_github)
    body = (
        "训练两百步之后熵降到接近零，奖励也不再上升，请问应该怎么调整？\n"
        "```bash\npython3 -m verl.trainer.main_ppo \\\n"
        "    actor_rollout_ref.actor.clip_ratio_high=0.28 \\\n    algorithm.adv_estimator=grpo\n```"
    )
    payload = opened_payload(fake_github, 104, "GRPO 训练中熵迅速下降", body)
    await router.dispatch(sansio.Event(payload, event="issues", delivery_id="r-104"), app_ctx)
    async with app_ctx.sessionmaker() as s:
        analysis = await s.scalar(select(Analysis))
    if not analysis.is_failure_report or analysis.failure_category != "entropy_collapse":
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    [comment] = [c for c in fake_github.comments_of(VERL, 104) if FAILURE_MARKER in c["body"]]
    text = comment["body"]
    assert "置信度" in text and "你的配置中已开启" in text
    suggested = text.split("你的配置中已开启")[0]
    assert "clip_ratio_high" not in suggested
    assert "请问应该怎么调整" not in text


async def test_concurrent_pipeline_runs_on_a_failure_report_post_one_comment(app_ctx: Any, fake_github: Any) -> None:
    import asyncio

    from bot.pipeline import thread_changed
    from tests.test_actions_e2e import open_issue

    await install(app_ctx, fake_github)
    payload = await open_issue(
        app_ctx, fake_github, 105, title="Entropy collapse during GRPO training",
        body="Policy entropy collapses to almost zero after 150 steps and the reward plateaus. "
             "Training keeps running without errors, but the model stops exploring.",
    )
    results = await asyncio.gather(*[
        thread_changed(app_ctx, VERL, 105, trigger="issues.opened", payload=payload) for _ in range(3)
    ])
    if not results[0]["failure"]["is_failure_report"]:
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    posted = [c for c in fake_github.comments_of(VERL, 105) if FAILURE_MARKER in c["body"]]
    assert len(posted) == 1
    async with app_ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Action).where(Action.number == 105)))
    assert [(r.kind, r.status) for r in rows if r.kind == "failure_comment"] == [("failure_comment", "posted")]
