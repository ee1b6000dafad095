"""The failure comment and the rule-summary reply, end to end against the fake GitHub server:
app JWT -> installation token -> live issue read -> comment posted once; on SQLite and
PostgreSQL (the `db_url` fixture behind `app_ctx`).

The analysis is given to `bot.actions.act` the way `bot.pipeline.thread_changed` gives it
(these tests must not depend on the failure analyzer's wording rules); the pipeline and
router paths are exercised in tests/test_commands.py and at the end of this file.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import gidgethub
import pytest
from aiohttp import ClientError, web
from sqlalchemy import select

from bot.speaking.decide import act
from bot.speaking.render import FAILURE_MARKER, RULES_MARKER
from bot.speaking.repo_config import get_repo_config
from bot.store.models import Action, Analysis, Installation, Repository, Thread
from bot.store.threads import upsert_comment, upsert_thread

VERL = "verl-project/verl"
TRL = "huggingface/trl"
INST = 4711

FAILURE = {
    "failure": {"is_failure_report": True, "category": "entropy_collapse",
                "categories": ["entropy_collapse"], "confidence": 0.92,
                "evidence": ["entropy falling", "reward plateau"]},
    "papers": [],
    "proposal": {"is_proposal": False, "confidence": 0.1},
    "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
}
NOT_FAILURE = {
    "failure": {"is_failure_report": False, "category": None, "categories": [], "confidence": 0.1},
    "papers": [], "proposal": {"is_proposal": False, "confidence": 0.0},
    "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
}
PROPOSAL = {
    "failure": {"is_failure_report": False, "category": None, "categories": [], "confidence": 0.0},
    "papers": [{"arxiv_id": "2507.18071", "title": "GSPO", "method": "gspo", "how": "arxiv_id", "score": 1.0}],
    "proposal": {"is_proposal": True, "confidence": 0.9},
    "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
}
SECRET_TEXT = "zebra-quokka-7731 my private run notes"
BODY = f"Training entropy drops to 0.01 after 200 steps and reward stops improving. {SECRET_TEXT}"


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def install(ctx: Any, fake: Any, repo: str = VERL, framework: str = "verl") -> None:
    fake.add_installation(INST, repo.split("/")[0], repos=[repo])
    async with ctx.sessionmaker() as s:
        if await s.get(Installation, INST) is None:
            s.add(Installation(id=INST, account=repo.split("/")[0]))
            await s.flush()
        s.add(Repository(full_name=repo, framework=framework, installation_id=INST))
        await s.commit()


async def open_issue(
    ctx: Any, fake: Any, number: int, *, repo: str = VERL, title: str = "Entropy collapse in GRPO run",
    body: str = BODY, user: str = "alice", labels: list[str] | None = None,
    created_at: datetime | None = None, state: str = "open", kind: str = "issue",
    author_is_bot: bool = False, association: str = "NONE",
) -> dict[str, Any]:
    created = created_at or datetime.now(UTC)
    issue = fake.add_issue(repo, number, title, body, user, labels=labels, created_at=iso(created),
                           state=state, pull_request=kind == "pull_request",
                           author_association=association)
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {
            "repo": repo, "number": number, "kind": kind, "title": title, "body": body,
            "author": user, "author_association": association, "author_is_bot": author_is_bot,
            "state": state, "labels": labels or [], "assignees": [], "created_at": iso(created),
        })
        await s.commit()
    # a copy: the fake's issue keeps changing, the delivered payload does not
    return {"action": "opened", "issue": copy.deepcopy(issue), "repository": fake.repo_json(repo),
            "installation": {"id": INST}}


def app_comments(fake: Any, repo: str, number: int, marker: str = FAILURE_MARKER) -> list[dict[str, Any]]:
    return [c for c in fake.comments_of(repo, number) if marker in c["body"]]


async def actions_of(ctx: Any, number: int | None = None, kind: str | None = None) -> list[Action]:
    async with ctx.sessionmaker() as s:
        q = select(Action).order_by(Action.id)
        if number is not None:
            q = q.where(Action.number == number)
        if kind is not None:
            q = q.where(Action.kind == kind)
        return list(await s.scalars(q))


async def test_posted_once_with_this_frameworks_options(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    posted = app_comments(fake_github, VERL, 1)
    assert len(posted) == 1
    body = posted[0]["body"]
    assert "`actor_rollout_ref.actor.clip_ratio_high=0.28`" in body
    assert "GRPOConfig" not in body  # not another framework's option
    assert f"{app_ctx.settings.public_url}/methods/clip-higher" in body
    assert SECRET_TEXT not in body and "0.01 after 200" not in body
    assert posted[0]["user"]["type"] == "Bot"
    # JWT for the token, the installation token for the repository calls
    assert fake_github.requests("POST", r"/app/installations/\d+/access_tokens")[0].auth == "jwt"
    post = fake_github.requests("POST", r"/repos/.*/issues/1/comments")
    assert len(post) == 1 and post[0].auth == "installation"
    [row] = await actions_of(app_ctx, 1, "failure_comment")
    assert row.status == "posted" and row.comment_id == posted[0]["id"] and row.body == body
    assert row.dedupe_key == f"{VERL}#1:failure_comment"

    # Redelivery, the same delivery twice, and a recheck: still one comment.
    for trigger in ("issues.opened", "issues.opened", "command"):
        await act(app_ctx, VERL, 1, trigger=trigger, payload=payload, analysis=FAILURE)
    assert len(app_comments(fake_github, VERL, 1)) == 1
    assert len(fake_github.requests("POST", r"/repos/.*/issues/1/comments")) == 1


async def test_trl_gets_trl_settings(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github, TRL, "trl")
    payload = await open_issue(app_ctx, fake_github, 5, repo=TRL)
    await act(app_ctx, TRL, 5, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, TRL, 5)
    assert "GRPOConfig(epsilon_high=0.28)" in comment["body"]
    assert "actor_rollout_ref" not in comment["body"]


async def test_two_kinds_listed_names_the_second_without_its_methods(app_ctx: Any, fake_github: Any) -> None:
    """The analysis lists a second kind: the posted comment links both kinds' pages, hedges
    ("Possibly") at any confidence, suggests the leading kind's methods only, and the stored
    action keeps the leading kind as `category`. An edit that leaves one kind drops the second."""
    public = app_ctx.settings.public_url
    two = {**FAILURE, "failure": {**FAILURE["failure"], "confidence": 0.97,
                                  "categories": ["entropy_collapse", "kl_growth"]}}
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 81)
    out = await act(app_ctx, VERL, 81, trigger="issues.opened", payload=payload, analysis=two)
    assert out["failure_comment"] == "posted"
    [comment] = app_comments(fake_github, VERL, 81)
    head = comment["body"].splitlines()[1]
    assert head.startswith(f"**Possibly [Entropy collapse]({public}/failures/entropy_collapse)**, or "
                           f"[KL keeps growing]({public}/failures/kl_growth)")
    assert "confidence 0.97 that this reports a failing run" in head
    assert f"{public}/methods/clip-higher" in comment["body"]
    for kl_only in ("kl-penalty", "k3-kl", "reference-reset"):  # methods for KL growth only
        assert f"{public}/methods/{kl_only}" not in comment["body"]
    [row] = await actions_of(app_ctx, 81, "failure_comment")
    assert row.details["category"] == "entropy_collapse" and row.details["runner_up"] == "kl_growth"
    # The edit reads one kind now: the comment is rewritten in place, sure again, one kind.
    out = await act(app_ctx, VERL, 81, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "updated"
    [after] = app_comments(fake_github, VERL, 81)
    assert after["id"] == comment["id"]
    assert after["body"].splitlines()[1].startswith("**Very likely [Entropy collapse]")
    assert "/failures/kl_growth" not in after["body"]
    [row] = await actions_of(app_ctx, 81, "failure_comment")
    assert row.details["category"] == "entropy_collapse" and row.details["runner_up"] is None


async def test_two_concurrent_runs_post_one_comment(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 2)
    results = await asyncio.gather(
        *[act(app_ctx, VERL, 2, trigger="issues.opened", payload=payload, analysis=FAILURE) for _ in range(4)]
    )
    assert sorted(r["failure_comment"] for r in results).count("posted") == 1
    assert len(app_comments(fake_github, VERL, 2)) == 1
    rows = [a for a in await actions_of(app_ctx, 2, "failure_comment") if a.status != "skipped"]
    assert len(rows) == 1


async def test_edit_updates_the_comment_instead_of_posting(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 3)
    await act(app_ctx, VERL, 3, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [before] = app_comments(fake_github, VERL, 3)
    assert "clip_ratio_high=0.28`" in before["body"]
    # The reporter edits in their config: clip-higher is already on.
    new_body = BODY + "\n```\nactor_rollout_ref.actor.clip_ratio_high=0.28\n```"
    async with app_ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": VERL, "number": 3, "kind": "issue", "body": new_body})
        await s.commit()
    out = await act(app_ctx, VERL, 3, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "updated"
    [after] = app_comments(fake_github, VERL, 3)
    assert after["id"] == before["id"]
    assert "Already set in your config" in after["body"] and "`0.28`" in after["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
    # The same edit again changes nothing.
    await act(app_ctx, VERL, 3, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1
    # An edit that no longer reads as a failure withdraws the suggestion (still one comment).
    await act(app_ctx, VERL, 3, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    [withdrawn] = app_comments(fake_github, VERL, 3)
    assert "withdrawn" in withdrawn["body"]


async def test_no_edits_after_a_maintainer_replied(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 4)
    await act(app_ctx, VERL, 4, trigger="issues.opened", payload=payload, analysis=FAILURE)
    later = datetime.now(UTC) + timedelta(seconds=5)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 4))
        await upsert_comment(s, thread, {"github_id": 99, "author": "maint", "author_association": "MEMBER",
                                         "body": "Try a lower learning rate.", "created_at": iso(later)})
        await s.commit()
    out = await act(app_ctx, VERL, 4, trigger="issue_comment.created", payload=payload, analysis=FAILURE)
    assert out == {"failure_comment": "frozen"}
    [row] = await actions_of(app_ctx, 4, "failure_comment")
    assert row.frozen
    out = await act(app_ctx, VERL, 4, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "frozen"
    assert not fake_github.requests("PATCH")


async def test_non_failure_issue_gets_nothing(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 6, title="How do I set the learning rate?")
    await act(app_ctx, VERL, 6, trigger="issues.opened", payload=payload, analysis=NOT_FAILURE)
    assert not fake_github.comments_of(VERL, 6)
    [row] = await actions_of(app_ctx, 6)
    assert row.status == "skipped" and "not a training-failure report" in row.reason


async def test_config_file_turns_comments_off(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    payload = await open_issue(app_ctx, fake_github, 7)
    await act(app_ctx, VERL, 7, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 7)
    [row] = await actions_of(app_ctx, 7)
    assert row.status == "skipped" and "rltracker.yml" in row.reason
    assert fake_github.requests("GET", r"/contents/\.github/rltracker\.yml")[0].auth == "installation"


async def test_min_confidence_and_labels_from_config(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "min_confidence: 0.95\nlabels:\n  entropy_collapse: 'rl: entropy'\n")
    payload = await open_issue(app_ctx, fake_github, 8)
    await act(app_ctx, VERL, 8, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 8)
    sure = {**FAILURE, "failure": {**FAILURE["failure"], "confidence": 0.97}}
    payload = await open_issue(app_ctx, fake_github, 9)
    await act(app_ctx, VERL, 9, trigger="issues.opened", payload=payload, analysis=sure)
    assert len(app_comments(fake_github, VERL, 9)) == 1
    assert {"name": "rl: entropy"} in fake_github.issue(VERL, 9)["labels"]


async def test_invalid_config_uses_defaults_and_records_why(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 7\nfailure_comments: [oops\n")
    payload = await open_issue(app_ctx, fake_github, 10)
    await act(app_ctx, VERL, 10, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert len(app_comments(fake_github, VERL, 10)) == 1  # defaults: comments on
    config_rows = await actions_of(app_ctx, kind="config")
    assert len(config_rows) == 1 and config_rows[0].status == "skipped"
    assert "not valid YAML" in config_rows[0].reason


async def test_opt_out_holds_when_another_setting_is_invalid(app_ctx: Any, fake_github: Any) -> None:
    """A repository that turned comments off stays off when a typo elsewhere in the file makes
    it invalid (`min_confidence: 80` meant as a percentage): the other settings take their
    defaults, the opt-outs it states are kept, and the problem is recorded as usual."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "failure_comments: false\ndry_run: true\nmin_confidence: 80\n")
    for number in (12, 13):  # the second decision reads the cached config
        payload = await open_issue(app_ctx, fake_github, number)
        await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
        assert not fake_github.comments_of(VERL, number)
        [row] = await actions_of(app_ctx, number)
        assert row.status == "skipped" and "turned off" in row.reason
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "min_confidence" in config_row.reason
    config = await get_repo_config(app_ctx, VERL, INST)
    assert (config.source, config.failure_comments, config.dry_run) == ("invalid", False, True)
    assert config.min_confidence is None and config.rule_summaries  # the rest: defaults


async def test_chinese_issue_gets_chinese_comment(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 11, title="GRPO 训练中熵迅速下降",
                               body="训练两百步之后熵降到接近零，奖励也不再上升，请问应该怎么调整？")
    await act(app_ctx, VERL, 11, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 11)
    assert "判定为训练失败报告的置信度 0.92" in comment["body"] and "Methods that address" not in comment["body"]
    assert "`actor_rollout_ref.actor.clip_ratio_high=0.28`" in comment["body"]
    assert "请问应该怎么调整" not in comment["body"]
    [row] = await actions_of(app_ctx, 11, "failure_comment")
    assert row.language == "zh"


async def test_maintainer_reply_before_processing_means_no_comment(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 12)
    # Processing lags: on GitHub a maintainer has replied; the stored thread does not know yet.
    fake_github.add_comment(VERL, 12, "Looking into it.", user="maint", author_association="MEMBER")
    out = await act(app_ctx, VERL, 12, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:maintainer_replied"
    assert not app_comments(fake_github, VERL, 12)
    rows = await actions_of(app_ctx, 12)
    assert [r.status for r in rows] == ["skipped"] and rows[0].details["checked"] == "live"


async def test_label_before_processing_means_no_comment(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 13, labels=["bug"])  # template label
    fake_github.issue(VERL, 13)["labels"].append({"name": "needs-repro"})  # a maintainer's
    out = await act(app_ctx, VERL, 13, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:labelled"
    assert not fake_github.comments_of(VERL, 13)
    # The template label alone does not count.
    payload = await open_issue(app_ctx, fake_github, 14, labels=["bug"])
    out = await act(app_ctx, VERL, 14, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"


async def test_stored_maintainer_reply_assignment_and_linked_pr(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 15)
    async with app_ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": VERL, "number": 15, "kind": "issue", "assignees": ["maint"]})
        await s.commit()
    out = await act(app_ctx, VERL, 15, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:assigned"
    payload = await open_issue(app_ctx, fake_github, 16)
    await open_issue(app_ctx, fake_github, 17, kind="pull_request", title="Fix entropy",
                     body="Fixes #16 by raising clip_ratio_high")
    out = await act(app_ctx, VERL, 16, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:linked_pr"
    assert not app_comments(fake_github, VERL, 15) and not app_comments(fake_github, VERL, 16)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"state": "closed"}, "closed"),
        ({"user": "dependabot[bot]", "author_is_bot": True}, "bot_author"),
        ({"created_at": datetime.now(UTC) - timedelta(hours=49)}, "too_old"),
    ],
)
async def test_quiet_rules(app_ctx: Any, fake_github: Any, kwargs: dict[str, Any], code: str) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 20, **kwargs)
    out = await act(app_ctx, VERL, 20, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == f"skipped:{code}"
    assert not fake_github.comments_of(VERL, 20)


async def test_paused_and_muted_and_not_installed(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 21)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 21))
        thread.muted = True
        await s.commit()
    out = await act(app_ctx, VERL, 21, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:muted"
    async with app_ctx.sessionmaker() as s:
        repo = await s.scalar(select(Repository).where(Repository.full_name == VERL))
        repo.comments_paused, repo.paused_reason = True, "2 of the last 10 comments were hidden"
        await s.commit()
    payload = await open_issue(app_ctx, fake_github, 22)
    out = await act(app_ctx, VERL, 22, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:paused"
    # A repository without the app installed: nothing at all, not even a record.
    payload = await open_issue(app_ctx, fake_github, 23, repo="THUDM/slime")
    payload.pop("installation")
    assert await act(app_ctx, "THUDM/slime", 23, trigger="issues.opened", payload=payload, analysis=FAILURE) == {}
    assert not fake_github.requests("POST", r"/repos/.*/comments")


async def test_pull_request_gets_no_failure_comment(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 24, kind="pull_request")
    await act(app_ctx, VERL, 24, trigger="pull_request.opened", payload=payload, analysis=FAILURE)
    await act(app_ctx, VERL, 24, trigger="command", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 24)


async def test_daily_budget_holds(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    outcomes = []
    for n in range(30, 35):
        payload = await open_issue(app_ctx, fake_github, n)
        outcomes.append((await act(app_ctx, VERL, n, trigger="issues.opened", payload=payload, analysis=FAILURE))["failure_comment"])
    assert outcomes == ["posted"] * 3 + ["skipped:budget"] * 2
    skipped = [a for a in await actions_of(app_ctx, kind="failure_comment") if a.status == "skipped"]
    assert len(skipped) == 2 and all("budget of 3" in a.reason for a in skipped)


async def test_budget_holds_under_concurrency(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payloads = {n: await open_issue(app_ctx, fake_github, n) for n in range(40, 46)}
    results = await asyncio.gather(*[
        act(app_ctx, VERL, n, trigger="issues.opened", payload=p, analysis=FAILURE) for n, p in payloads.items()
    ])
    assert [r["failure_comment"] for r in results].count("posted") == 3
    assert sum(len(app_comments(fake_github, VERL, n)) for n in payloads) == 3


async def test_pasted_config_already_set(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    partly = BODY + "\n```bash\npython3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.actor.clip_ratio_high=0.28 \\\n  actor_rollout_ref.actor.entropy_coeff=0.001\n```"
    payload = await open_issue(app_ctx, fake_github, 50, body=partly)
    await act(app_ctx, VERL, 50, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 50)
    body = comment["body"]
    assert "Already set in your config" in body and "Clip-higher" in body.split("Already set")[1]
    suggested = body.split("Already set")[0]
    assert "clip_ratio_high=0.28" not in suggested and "entropy_coeff" not in suggested
    # Everything verl has for entropy collapse already on: no comment at all.
    everything = partly.replace(
        "entropy_coeff=0.001",
        "entropy_coeff=0.001 \\\n  actor_rollout_ref.actor.policy_loss.loss_mode=cispo",
    )
    # (loss_mode takes one value at a time, and one key pasted with two values is unknown
    # (speech64): Clip-Cov is covered by the declined-methods path)
    async with app_ctx.sessionmaker() as s:
        t = await upsert_thread(s, {"repo": VERL, "number": 900, "kind": "issue", "title": "Add Clip-Cov",
                                    "state": "closed", "comments": []})
        s.add(Analysis(thread_id=t.id, analyzer_version="t", result={}, is_proposal=True,
                       review_state="declined", methods=["clip-cov-kl-cov"]))
        await s.commit()
    payload = await open_issue(app_ctx, fake_github, 51, body=everything)
    out = await act(app_ctx, VERL, 51, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:nothing_to_suggest"
    assert not fake_github.comments_of(VERL, 51)


async def test_declined_method_is_never_suggested(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    async with app_ctx.sessionmaker() as s:
        t = await upsert_thread(s, {"repo": VERL, "number": 901, "kind": "issue", "title": "Add CISPO",
                                    "state": "closed"})
        s.add(Analysis(thread_id=t.id, analyzer_version="t", result={}, is_proposal=True,
                       review_state="redirected", methods=["cispo"]))
        await s.commit()
    payload = await open_issue(app_ctx, fake_github, 52)
    await act(app_ctx, VERL, 52, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 52)
    assert "/methods/cispo" not in comment["body"]
    [row] = await actions_of(app_ctx, 52, "failure_comment")
    assert row.details["declined"] == ["cispo"]


async def test_dry_run_records_without_posting(ctx: Any, fake_github: Any) -> None:
    # `ctx` has no GitHub client and dry_run on: the decision is made, nothing is posted.
    await install(ctx, fake_github)
    payload = await open_issue(ctx, fake_github, 60)
    out = await act(ctx, VERL, 60, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "dry_run"
    [row] = await actions_of(ctx, 60)
    assert row.status == "dry_run" and FAILURE_MARKER in row.body
    assert not fake_github.comments_of(VERL, 60)
    await act(ctx, VERL, 60, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert len(await actions_of(ctx, 60)) == 1


async def test_dry_run_from_config(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "dry_run: true\n")
    payload = await open_issue(app_ctx, fake_github, 61)
    out = await act(app_ctx, VERL, 61, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "dry_run" and not fake_github.comments_of(VERL, 61)


async def test_post_failure_releases_the_slot_for_the_retry(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 62)
    fake_github.fail_next("POST", r"/issues/62/comments$", 422, times=1)
    with pytest.raises(gidgethub.GitHubException):
        await act(app_ctx, VERL, 62, trigger="issues.opened", payload=payload, analysis=FAILURE)
    out = await act(app_ctx, VERL, 62, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert len(app_comments(fake_github, VERL, 62)) == 1
    statuses = sorted(a.status for a in await actions_of(app_ctx, 62))
    assert statuses == ["failed", "posted"]


async def test_existing_marker_comment_is_adopted_not_duplicated(app_ctx: Any, fake_github: Any) -> None:
    # A crash after posting but before recording: the retry finds the comment by its marker.
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 63)
    fake_github.add_comment(VERL, 63, FAILURE_MARKER + "\nold text", user="rltracker[bot]", user_type="Bot")
    await act(app_ctx, VERL, 63, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 63)
    assert "clip_ratio_high" in comment["body"]


async def test_another_apps_comment_with_our_marker_is_not_taken_for_ours(
        app_ctx: Any, fake_github: Any) -> None:
    """Another bot's comment carrying our hidden marker (a second deployment of rltracker on
    the repository, a bot that mirrors comments) was taken for the app's own: the app skipped
    the quiet rules, PATCHed that bot's comment with its text and posted nothing of its own.
    Only a comment by the app's own bot login (GET /app: `{slug}[bot]`) is ours."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 64)
    theirs = FAILURE_MARKER + "\nthe staging app's comment"
    other = fake_github.add_comment(VERL, 64, theirs, user="rltracker-staging[bot]", user_type="Bot")
    out = await act(app_ctx, VERL, 64, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert fake_github.comments[other["id"]]["body"] == theirs
    assert not fake_github.requests("PATCH", rf"/issues/comments/{other['id']}$")
    mine = [c for c in app_comments(fake_github, VERL, 64) if c["user"]["login"] == "rltracker[bot]"]
    assert len(mine) == 1 and "clip_ratio_high" in mine[0]["body"]
    [action] = await actions_of(app_ctx, 64, "failure_comment")
    assert action.comment_id == mine[0]["id"]


async def test_rule_summary_reply_once(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    async with app_ctx.sessionmaker() as s:
        t = await upsert_thread(s, {"repo": TRL, "number": 300, "kind": "issue", "title": "GSPO support",
                                    "state": "closed"})
        s.add(Analysis(thread_id=t.id, analyzer_version="t", result={}, is_proposal=True,
                       review_state="merged", methods=["gspo"], arxiv_ids=["2507.18071"]))
        await s.commit()
    payload = await open_issue(app_ctx, fake_github, 70, title="Add GSPO", body="Please add GSPO (arXiv 2507.18071).")
    for _ in range(2):
        await act(app_ctx, VERL, 70, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    replies = app_comments(fake_github, VERL, 70, RULES_MARKER)
    assert len(replies) == 1
    body = replies[0]["body"]
    assert "`huggingface/trl#300`" in body and "merged" in body
    assert "tests and documentation" in body
    assert "Please add GSPO" not in body
    # A maintainer's own proposal gets no rule summary.
    payload = await open_issue(app_ctx, fake_github, 71, title="Add GSPO", association="MEMBER")
    out = await act(app_ctx, VERL, 71, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:maintainer_author"


async def test_rule_summary_lists_earlier_proposals_of_the_method_newest_first(
        app_ctx: Any, fake_github: Any) -> None:
    """The list a proposer reads: proposals (not threads citing the paper) of the method
    proposed, opened before this one, newest first, each linked to its tracker page. It
    listed the oldest first (cut to four, so the latest were the ones left out), threads
    opened after this one, and every proposal that cited the GRPO or PPO it builds on."""
    await install(app_ctx, fake_github)
    now = datetime.now(UTC)
    earlier = [  # (repo, number, days before now, is_proposal, state, methods, arXiv ids)
        (TRL, 301, 400, True, "merged", ["gspo"], ["2507.18071"]),
        ("OpenRLHF/OpenRLHF", 20, 90, True, "declined", ["grpo", "gspo"], ["2402.03300"]),
        ("alibaba/ROLL", 5, 30, True, "open_replied", ["grpo"], ["2402.03300"]),   # GRPO only
        ("THUDM/slime", 8, 20, False, "open_no_reply", ["gspo"], ["2507.18071"]),  # not a proposal
        ("NVIDIA-NeMo/RL", 11, 10, True, "lapsed", [], ["2507.18071"]),           # by arXiv id
        ("areal-project/AReaL", 9, -1, True, "open_no_reply", ["gspo"], []),      # opened later
    ]
    async with app_ctx.sessionmaker() as s:
        for repo, number, days, is_proposal, state, methods, arxiv in earlier:
            t = await upsert_thread(s, {"repo": repo, "number": number, "kind": "issue",
                                        "title": "GSPO", "state": "open",
                                        "created_at": iso(now - timedelta(days=days))})
            s.add(Analysis(thread_id=t.id, analyzer_version="t", result={}, is_proposal=is_proposal,
                           review_state=state, methods=methods, arxiv_ids=arxiv))
        await s.commit()
    analysis = copy.deepcopy(PROPOSAL)
    analysis["papers"].append({"arxiv_id": "2402.03300", "title": "DeepSeekMath", "method": "grpo",
                               "how": "method_name", "score": 1.0})
    payload = await open_issue(app_ctx, fake_github, 73, title="Add GSPO",
                               created_at=now - timedelta(hours=1))
    out = await act(app_ctx, VERL, 73, trigger="issues.opened", payload=payload, analysis=analysis)
    assert out["rule_summary"] == "posted"
    [reply] = app_comments(fake_github, VERL, 73, RULES_MARKER)
    listed = [line for line in reply["body"].splitlines() if line.startswith("- [`")]
    public = app_ctx.settings.public_url
    assert listed == [
        f"- [`NVIDIA-NeMo/RL#11`]({public}/threads/NVIDIA-NeMo/RL/11) (NeMo-RL): closed as inactive",
        f"- [`OpenRLHF/OpenRLHF#20`]({public}/threads/OpenRLHF/OpenRLHF/20) (OpenRLHF, [GSPO]({public}/methods/gspo)): declined",
        f"- [`huggingface/trl#301`]({public}/threads/huggingface/trl/301) (TRL, [GSPO]({public}/methods/gspo)): merged",
    ]


async def test_rule_summary_on_a_pull_request(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 72, kind="pull_request", title="Implement GSPO loss")
    out = await act(app_ctx, VERL, 72, trigger="pull_request.opened", payload=payload, analysis=PROPOSAL)
    assert out == {"rule_summary": "posted"}
    assert len(app_comments(fake_github, VERL, 72, RULES_MARKER)) == 1
    assert not app_comments(fake_github, VERL, 72)  # and no failure comment on a PR


async def test_deleted_comment_is_not_reposted_on_edit(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 64)
    await act(app_ctx, VERL, 64, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 64)
    del fake_github.comments[comment["id"]]  # a maintainer deleted it
    out = await act(app_ctx, VERL, 64, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "deleted"
    [row] = await actions_of(app_ctx, 64, "failure_comment")
    assert row.comment_deleted and row.frozen
    await act(app_ctx, VERL, 64, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 64)


async def test_a_maintainers_edit_of_the_comment_is_not_overwritten(app_ctx: Any, fake_github: Any) -> None:
    """A maintainer corrected the app's failure comment on GitHub; a later edit of the issue
    rewrote it with the app's text, their correction gone."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 65)
    await act(app_ctx, VERL, 65, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 65)
    edited = comment["body"] + "\n\nMaintainer: this is the known NCCL timeout, see #12."
    fake_github.comments[comment["id"]]["body"] = edited
    out = await act(app_ctx, VERL, 65, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "edited"
    assert fake_github.comments[comment["id"]]["body"] == edited
    [row] = await actions_of(app_ctx, 65, "failure_comment")
    assert row.frozen and row.details.get("edited_on_github") and not row.comment_deleted
    await act(app_ctx, VERL, 65, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert fake_github.comments[comment["id"]]["body"] == edited


async def test_stale_pending_claim_is_taken_over(app_ctx: Any, fake_github: Any) -> None:
    # A worker crashed after claiming: the slot is taken over after ten minutes, not lost.
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 65)
    old = datetime.now(UTC) - timedelta(minutes=20)
    async with app_ctx.sessionmaker() as s:
        s.add(Action(repo=VERL, number=65, kind="failure_comment", status="pending",
                     dedupe_key=f"{VERL}#65:failure_comment", created_at=old, updated_at=old))
        await s.commit()
    out = await act(app_ctx, VERL, 65, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert len(app_comments(fake_github, VERL, 65)) == 1
    [row] = await actions_of(app_ctx, 65, "failure_comment")
    assert row.status == "posted"
    # a fresh pending claim (another worker busy posting) is left alone
    async with app_ctx.sessionmaker() as s:
        s.add(Action(repo=VERL, number=66, kind="failure_comment", status="pending",
                     dedupe_key=f"{VERL}#66:failure_comment"))
        await s.commit()
    payload = await open_issue(app_ctx, fake_github, 66)
    out = await act(app_ctx, VERL, 66, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "owned" and not fake_github.comments_of(VERL, 66)


async def test_a_slow_run_whose_claim_was_taken_over_does_not_post_a_second_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """A pending claim older than ten minutes is taken over as a crashed worker's. The worker
    was alive but slow: GitHub had read it the issue's comments (none) and took its time
    answering. Another run took the claim over, found no comment, posted.
    The slow run then posted with what it had read: two failure comments. A run now checks,
    right before posting, that the claim is still its own (the lease the claim wrote), and
    leaves the comment to the run that took it over. Time is the claim's: its updated_at is
    moved back past STALE_PENDING while the slow run waits."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 67)
    reached, release = asyncio.Event(), asyncio.Event()
    waited: list[int] = []

    @fake_github.route("GET", rf"/repos/{VERL}/issues/67/comments")
    async def comments(fake: Any, request: Any, match: Any, body: Any) -> Any:
        read = [{k: v for k, v in c.items() if not k.startswith("_")}
                for c in fake.comments_of(VERL, 67)]
        if not waited:  # the slow run's: read, then answered late
            waited.append(1)
            reached.set()
            await release.wait()
        return read

    slow = asyncio.create_task(
        act(app_ctx, VERL, 67, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    async with app_ctx.sessionmaker() as s:  # ten minutes pass for the claim
        [row] = list(await s.scalars(select(Action).where(
            Action.dedupe_key == f"{VERL}#67:failure_comment")))
        assert row.status == "pending"
        row.updated_at = row.updated_at - timedelta(minutes=11)
        await s.commit()
    out = await act(app_ctx, VERL, 67, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    release.set()
    assert (await slow)["failure_comment"] == "owned"
    [comment] = app_comments(fake_github, VERL, 67)
    [row] = await actions_of(app_ctx, 67, "failure_comment")
    assert row.status == "posted" and row.comment_id == comment["id"]


async def test_an_adopted_comment_a_person_edited_meanwhile_is_left_as_it_is(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub created the failure comment but its answer never came back (the connection
    dropped): the run failed and the worker retried. A maintainer corrected the comment
    meanwhile; the retry found it by its marker and PATCHed its own text over theirs, though a
    comment a person edited on GitHub is left as it is (docs/comments.md). It is now adopted
    as it stands: recorded as posted (the slot held, nothing posted again), frozen, and
    marked edited on GitHub, as an edit of the issue would find it."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 68)

    @fake_github.route("POST", rf"/repos/{VERL}/issues/68/comments")
    async def created_unanswered(fake: Any, request: Any, match: Any, body: Any) -> Any:
        fake.add_comment(VERL, 68, body["body"], "rltracker[bot]", "Bot")
        request.transport.close()  # created; the answer never reaches the app
        return web.Response(status=499)

    with pytest.raises(Exception):  # noqa: B017 - whatever the lost connection raises
        await act(app_ctx, VERL, 68, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 68)
    edited = comment["body"] + "\n\nMaintainer: this is the known NCCL timeout, see #12."
    fake_github.comments[comment["id"]]["body"] = edited
    await act(app_ctx, VERL, 68, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert fake_github.comments[comment["id"]]["body"] == edited
    assert not fake_github.requests("PATCH", rf"/issues/comments/{comment['id']}$")
    assert len(app_comments(fake_github, VERL, 68)) == 1
    [row] = [a for a in await actions_of(app_ctx, 68, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"] and row.frozen and row.details.get("edited_on_github")
    await act(app_ctx, VERL, 68, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert fake_github.comments[comment["id"]]["body"] == edited


async def test_an_adopted_comment_nobody_edited_is_brought_up_to_date(
        app_ctx: Any, fake_github: Any) -> None:
    """The same lost answer, nobody touched the comment, and the retry composes a different
    text (the reporter edited their issue meanwhile): the comment is ours as it was posted,
    and is edited to the new text, not left behind."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 69)

    @fake_github.route("POST", rf"/repos/{VERL}/issues/69/comments")
    async def created_unanswered(fake: Any, request: Any, match: Any, body: Any) -> Any:
        fake.add_comment(VERL, 69, body["body"], "rltracker[bot]", "Bot")
        request.transport.close()
        return web.Response(status=499)

    with pytest.raises(Exception):  # noqa: B017
        await act(app_ctx, VERL, 69, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 69)
    first = comment["body"]
    two_kinds = {**FAILURE, "failure": {**FAILURE["failure"],
                                        "categories": ["entropy_collapse", "kl_growth"]}}
    await act(app_ctx, VERL, 69, trigger="issues.opened", payload=payload, analysis=two_kinds)
    [now] = app_comments(fake_github, VERL, 69)
    assert now["id"] == comment["id"] and now["body"] != first and "/failures/kl_growth" in now["body"]
    [row] = [a for a in await actions_of(app_ctx, 69, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"] and row.body == now["body"] and not row.frozen


def lose_the_patch_answer(fake: Any, repo: str, how: str) -> dict[str, bool]:
    """GitHub applies every PATCH of a comment, but while `lost["on"]` its answer never reaches
    the app: the connection dropped after the edit (`how="disconnect"`), or a 502 after it (on
    each of the client's attempts)."""
    lost = {"on": True}

    @fake.route("PATCH", rf"/repos/{repo}/issues/comments/(?P<id>\d+)")
    async def applied(fake: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake.comments[int(match["id"])]
        comment["body"] = body["body"]
        if not lost["on"]:
            return {k: v for k, v in comment.items() if not k.startswith("_")}
        if how == "disconnect":
            request.transport.close()
            return web.Response(status=499)  # never reaches the client
        return 502, {"message": "Server Error"}

    return lost


@pytest.mark.parametrize("how", ["disconnect", "502"])
async def test_a_rewrite_whose_answer_was_lost_is_not_taken_for_a_persons_edit(
        app_ctx: Any, fake_github: Any, how: str) -> None:
    """An edit of the issue rewrites the failure comment; GitHub applies the PATCH but its
    answer is lost (the connection dropped, or a 5xx after applying), so the record kept the
    old text. The worker retries the edit: the app read its own new text on GitHub, took it
    for a person's edit and froze the comment for good (`edited_on_github`). The text is now
    recorded before the PATCH and any text the app recorded is its own: the retry brings the
    record up to date, and later edits still rewrite the comment (a person's edit still
    freezes it)."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 70)
    await act(app_ctx, VERL, 70, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 70)
    first = comment["body"]
    lost = lose_the_patch_answer(fake_github, VERL, how)
    two_kinds = {**FAILURE, "failure": {**FAILURE["failure"],
                                        "categories": ["entropy_collapse", "kl_growth"]}}
    with pytest.raises((gidgethub.GitHubException, ClientError)):
        await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=two_kinds)
    rewritten = fake_github.comments[comment["id"]]["body"]
    assert rewritten != first and "/failures/kl_growth" in rewritten  # applied
    lost["on"] = False
    await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=two_kinds)
    [row] = await actions_of(app_ctx, 70, "failure_comment")
    assert not row.frozen and not row.details.get("edited_on_github")
    assert row.body == rewritten and row.details["runner_up"] == "kl_growth"
    out = await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "updated"
    assert "withdrawn" in fake_github.comments[comment["id"]]["body"]
    # a person's edit is still theirs
    fake_github.comments[comment["id"]]["body"] = rewritten + "\n\nMaintainer: see the FAQ."
    out = await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "edited"
    assert fake_github.comments[comment["id"]]["body"].endswith("see the FAQ.")


async def test_an_adopted_rule_summary_a_person_edited_meanwhile_is_left_as_it_is(
        app_ctx: Any, fake_github: Any) -> None:
    """As for the failure comment: GitHub created the rule-summary reply but its answer never
    came back; a maintainer edited the reply meanwhile; the worker's retry found it by its
    marker and PATCHed the app's text over theirs (the reply's text was not recorded before
    posting, so no text counted as the app's). It is now adopted as it stands."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 73, title="Add GSPO",
                               body="Please add GSPO (arXiv 2507.18071).")

    @fake_github.route("POST", rf"/repos/{VERL}/issues/73/comments")
    async def created_unanswered(fake: Any, request: Any, match: Any, body: Any) -> Any:
        fake.add_comment(VERL, 73, body["body"], "rltracker[bot]", "Bot")
        request.transport.close()  # created; the answer never reaches the app
        return web.Response(status=499)

    with pytest.raises(ClientError):
        await act(app_ctx, VERL, 73, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    [reply] = app_comments(fake_github, VERL, 73, RULES_MARKER)
    edited = reply["body"] + "\n\nMaintainer: please open a design discussion first."
    fake_github.comments[reply["id"]]["body"] = edited
    out = await act(app_ctx, VERL, 73, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert fake_github.comments[reply["id"]]["body"] == edited
    assert not fake_github.requests("PATCH", rf"/issues/comments/{reply['id']}$")
    assert out["rule_summary"] == "edited"
    assert len(app_comments(fake_github, VERL, 73, RULES_MARKER)) == 1
    [row] = [a for a in await actions_of(app_ctx, 73, "rule_summary") if a.status == "posted"]
    assert row.comment_id == reply["id"] and row.details.get("edited_on_github")


def rename_the_app(fake: Any, old: str, new: str) -> None:
    """The app renamed on GitHub: GET /app gives the new slug, and its bot account (the same
    account, the same id) is renamed, so every comment it wrote shows the new login."""
    fake.app_slug = new
    for comment in fake.comments.values():
        user = comment.get("user") or {}
        if user.get("login") == f"{old}[bot]":
            comment["user"] = {**user, "login": f"{new}[bot]"}


async def test_after_the_app_is_renamed_its_comment_is_still_its_own(
        app_ctx: Any, fake_github: Any) -> None:
    """The app's login (`{slug}[bot]`, GET /app) was read once per process. Renamed on GitHub
    (a new slug: its bot account and every comment it wrote show the new login), a running
    process still looked for its comments under the old login: the failure comment GitHub
    created without answering (a lost connection) was not found by the retry, which posted
    a second one. A marker comment by a bot login the app does not know makes it read
    GET /app again: under the new login the comment is its own, adopted, not duplicated."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 90)
    out = await act(app_ctx, VERL, 90, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"  # the process knows its login: rltracker[bot]
    rename_the_app(fake_github, "rltracker", "rltracker-ci")
    payload = await open_issue(app_ctx, fake_github, 91)

    lost = {"answers": 1}

    @fake_github.route("POST", rf"/repos/{VERL}/issues/91/comments")
    async def created_unanswered(fake: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake.add_comment(VERL, 91, body["body"], f"{fake.app_slug}[bot]", "Bot")
        if not lost["answers"]:
            return 201, fake._served(comment)
        lost["answers"] -= 1
        request.transport.close()  # created; the answer never reaches the app
        return web.Response(status=499)

    with pytest.raises(Exception):  # noqa: B017 - whatever the lost connection raises
        await act(app_ctx, VERL, 91, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [comment] = app_comments(fake_github, VERL, 91)
    out = await act(app_ctx, VERL, 91, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert [c["id"] for c in app_comments(fake_github, VERL, 91)] == [comment["id"]]
    [row] = [a for a in await actions_of(app_ctx, 91, "failure_comment") if a.status == "posted"]
    assert row.comment_id == comment["id"]
    assert len(fake_github.requests("GET", r"^/app$")) == 2  # read again once, on the rename


async def test_what_a_context_learnt_of_the_apps_login_stays_with_it(
        app_ctx: Any, fake_github: Any) -> None:
    """The app's login and the other bots' logins were remembered in module-level dicts keyed
    by the API URL and app id, so a second context on the same address (a test server on a
    reused port; a second app in one process) started with what the first had learnt: a
    stale login and a memo that kept it from asking GET /app. Each context asks for itself."""
    from bot.context import AppContext
    from bot.speaking.posting import app_login

    assert await app_login(app_ctx) == "rltracker[bot]"
    fake_github.app_slug = "rltracker-ci"  # renamed on GitHub
    second = AppContext.create(app_ctx.settings)
    second.github = app_ctx.github  # one client on the fake (closed by its fixture)
    try:
        assert await app_login(second) == "rltracker-ci[bot]"
    finally:
        second.github = None
        await second.close()
    assert await app_login(app_ctx) == "rltracker[bot]"  # the first process has not re-read


async def test_another_bots_marker_comment_asks_github_once_and_stays_theirs(
        app_ctx: Any, fake_github: Any) -> None:
    """The other side of the rule above: a marker comment by another bot (a staging
    deployment of the app) makes the app read GET /app again once, finds it is still not
    the app's login, and leaves it alone; on the next thread with that bot's comment it does
    not ask again (one read per unknown login an hour)."""
    await install(app_ctx, fake_github)
    for number in (92, 93):
        payload = await open_issue(app_ctx, fake_github, number)
        theirs = FAILURE_MARKER + "\nthe staging app's comment"
        other = fake_github.add_comment(VERL, number, theirs, user="rltracker-staging[bot]",
                                        user_type="Bot")
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=FAILURE)
        assert out["failure_comment"] == "posted"
        assert fake_github.comments[other["id"]]["body"] == theirs
        mine = [c for c in app_comments(fake_github, VERL, number)
                if c["user"]["login"] == "rltracker[bot]"]
        assert len(mine) == 1
    assert len(fake_github.requests("GET", r"^/app$")) == 2


def hold_first_comments_read(fake: Any, repo: str, number: int) -> tuple[asyncio.Event, asyncio.Event]:
    """GitHub's comment list of `repo#number`, its first read (worker A's, before it posts)
    held: `reached` is set when A is inside it, and it answers once `release` is set."""
    reached, release = asyncio.Event(), asyncio.Event()
    held: list[int] = []

    @fake.route("GET", rf"/repos/{repo}/issues/{number}/comments")
    async def comments(fake: Any, request: Any, match: Any, body: Any) -> Any:
        read = [{k: v for k, v in c.items() if not k.startswith("_")}
                for c in fake.comments_of(repo, number)]
        if not held:
            held.append(1)
            reached.set()
            await release.wait()
        return read

    return reached, release


async def _stored_comment(ctx: Any, number: int, comment: dict[str, Any],
                          minimized_reason: str | None) -> None:
    """`comment` (the fake GitHub's) stored as the sync stores it, with why GitHub shows it
    hidden (GraphQL minimizedReason, lower-case: bot.github.sync.minimized_reason)."""
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == number))
        await upsert_comment(s, thread, {
            "github_id": comment["id"], "node_id": comment["node_id"],
            "author": comment["user"]["login"],
            "author_association": comment["author_association"], "body": comment["body"],
            "created_at": comment["created_at"], "minimized_reason": minimized_reason})
        await s.commit()


@pytest.mark.parametrize(("reason", "quiet"), [("off-topic", False), ("spam", False),
                                               ("abuse", False), ("outdated", True),
                                               ("resolved", True), (None, True)])
async def test_a_maintainers_comment_hidden_as_spam_or_off_topic_is_no_reply(
        app_ctx: Any, fake_github: Any, reason: str | None, quiet: bool) -> None:
    """A maintainer's comment GitHub shows hidden as spam, abuse or off-topic (the sync stores
    why: comments.minimized_reason) is no part of the thread's discussion: the analyzers do
    not read it (bot.analysis.analysis_input), and it was still a maintainer's reply to the
    quiet rules: the failure comment was not posted ("maintainer_replied", on the stored
    thread and again on the live one, whose REST comments do not say what is hidden), and a
    posted one was frozen at the next edit instead of rewritten. Hidden as outdated or
    resolved, it was a reply that was made: quiet and frozen as before."""
    await install(app_ctx, fake_github)
    # Opened while processing lagged: a maintainer's comment is on the thread, hidden.
    payload = await open_issue(app_ctx, fake_github, 60)
    hidden = fake_github.add_comment(VERL, 60, "Wrong thread, sorry.", user="maint",
                                     author_association="MEMBER")
    await _stored_comment(app_ctx, 60, hidden, reason)
    out = await act(app_ctx, VERL, 60, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == ("skipped:maintainer_replied" if quiet else "posted")
    assert len(app_comments(fake_github, VERL, 60)) == (0 if quiet else 1)

    # Posted, then a maintainer's comment hidden the same way; the author edits the issue.
    payload = await open_issue(app_ctx, fake_github, 61)
    await act(app_ctx, VERL, 61, trigger="issues.opened", payload=payload, analysis=FAILURE)
    later = fake_github.add_comment(VERL, 61, "Wrong thread, sorry.", user="maint",
                                    author_association="MEMBER")
    later["created_at"] = iso(datetime.now(UTC) + timedelta(seconds=5))
    await _stored_comment(app_ctx, 61, later, reason)
    out = await act(app_ctx, VERL, 61, trigger="issues.edited", payload=payload,
                    analysis=NOT_FAILURE)
    assert out["failure_comment"] == ("frozen" if quiet else "updated")
    [row] = await actions_of(app_ctx, 61, "failure_comment")
    assert row.frozen is quiet


async def test_an_edit_handled_while_another_worker_posts_reaches_the_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """speak61 left it: worker A claims the failure comment of a new issue and is posting it
    (GitHub reading it the thread); the author edits the issue, worker B stores the new
    analysis (another kind) and finds the claim pending: "unchanged", nothing to rewrite yet.
    A then posted the finding it had composed before the edit, and the comment said the
    pre-edit kind until the next edit. The poster reads the stored analysis again after
    posting and rewrites its comment once. Two tasks, each on its own connection of the
    pool (PostgreSQL: two sessions); A is held inside GitHub's answer, no sleeps."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 69)
    edited = {**FAILURE, "failure": {**FAILURE["failure"], "category": "kl_growth",
                                     "categories": ["kl_growth"]}}
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 69))
        s.add(Analysis(thread_id=thread.id, analyzer_version="test", result=FAILURE))
        await s.commit()
    reached, release = hold_first_comments_read(fake_github, VERL, 69)

    worker_a = asyncio.create_task(
        act(app_ctx, VERL, 69, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    async with app_ctx.sessionmaker() as s:  # worker B stores the edited issue's analysis
        row = await s.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        row.result = edited
        await s.commit()
    out = await act(app_ctx, VERL, 69, trigger="issues.edited", payload=payload, analysis=edited)
    assert out["failure_comment"] == "unchanged"  # the claim was pending: A's to finish
    release.set()
    assert (await worker_a)["failure_comment"] == "posted"
    [comment] = app_comments(fake_github, VERL, 69)
    assert "/failures/kl_growth" in comment["body"], comment["body"][:300]
    assert "/failures/entropy_collapse" not in comment["body"], comment["body"][:300]
    [row] = await actions_of(app_ctx, 69, "failure_comment")
    assert row.status == "posted" and row.body == comment["body"]


async def test_an_edit_of_the_pasted_setup_alone_while_another_worker_posts_reaches_the_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """left62 left it: as the test above, but the author's edit pastes their config only
    (clip-higher set) and the analyzers' finding stays the same. Worker B stores the edited
    thread (the analysis unchanged) and finds the claim pending: "unchanged". A compared the
    stored analysis with its own, found them equal and kept the comment it had composed from
    the pre-edit body, which suggested clip-higher, already on in the pasted config, until
    the next edit. The comment is composed from the thread too: it is rewritten once."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 70)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == VERL, Thread.number == 70))
        s.add(Analysis(thread_id=thread.id, analyzer_version="test", result=FAILURE))
        await s.commit()
    reached, release = hold_first_comments_read(fake_github, VERL, 70)

    worker_a = asyncio.create_task(
        act(app_ctx, VERL, 70, trigger="issues.opened", payload=payload, analysis=FAILURE))
    await reached.wait()
    pasted = BODY + "\n\n```\nactor_rollout_ref.actor.clip_ratio_high=0.28\n```\n"
    async with app_ctx.sessionmaker() as s:  # worker B stores the edited issue (same finding)
        await upsert_thread(s, {"repo": VERL, "number": 70, "body": pasted})
        await s.commit()
    out = await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "unchanged"  # the claim was pending: A's to finish
    release.set()
    assert (await worker_a)["failure_comment"] == "posted"
    [comment] = app_comments(fake_github, VERL, 70)
    assert "Already set in your config" in comment["body"], comment["body"][:600]
    assert "`actor_rollout_ref.actor.clip_ratio_high=0.28`" not in comment["body"]
    [row] = await actions_of(app_ctx, 70, "failure_comment")
    assert row.status == "posted" and row.body == comment["body"]
