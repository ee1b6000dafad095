"""When the app speaks on a thread, and what it says first, as a maintainer of a framework
that installed it sees it: real webhook payloads (../shared/fixtures/webhooks, adapted to a
tracked repository and the fake GitHub) through the Router, or the decision (`act`) given an
analysis as the pipeline gives it; GitHub is the fake server of tests/fakegithub.py. On
SQLite and PostgreSQL (`app_ctx`)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from gidgethub import sansio
from sqlalchemy import select

from bot.speaking.decide import act
from bot.speaking.render import RULES_MARKER
from bot.speaking.repo_config import get_repo_config
from bot.store.models import Analysis
from tests.test_actions_e2e import (
    FAILURE,
    INST,
    PROPOSAL,
    VERL,
    actions_of,
    app_comments,
    install,
    iso,
    open_issue,
)

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "webhooks"

QUESTION = ("Which rollout batch size do you recommend for a 7B model on 8 GPUs? "
            "The docs do not say.")
REPORT = ("Policy entropy collapses to almost zero after 150 steps and the reward plateaus. "
          "Training keeps running without errors, but the model stops exploring.")


def fixture(event: str, name: str) -> dict[str, Any]:
    path = FIXTURES / event / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return json.loads(path.read_text(encoding="utf-8"))


def issue_payload(fake: Any, action: str, number: int, title: str, body: str | None, *,
                  updated: datetime, name: str | None = None) -> dict[str, Any]:
    """GitHub's example `issues.<action>` payload, moved to verl's issue `number` as the fake
    serves it (title, body, author, times), delivered through installation INST."""
    payload = fixture("issues", name or action)
    issue = fake.issue(VERL, number)
    if issue is None:
        issue = fake.add_issue(VERL, number, title, body, "alice", created_at=iso(updated))
    issue.update(title=title, body=body, updated_at=iso(updated))
    delivered = payload["issue"]
    delivered.update(copy.deepcopy(fake._served(issue)))
    delivered.update(author_association="NONE", labels=[], assignees=[], assignee=None,
                     milestone=None)
    payload["repository"] = fake.repo_json(VERL)
    payload["installation"] = {"id": INST}
    payload["sender"] = {"login": "alice", "type": "User", "id": 1}
    if action == "edited":
        payload["changes"] = {"body": {"from": "(before)"}}
    return json.loads(json.dumps(payload))


async def deliver(ctx: Any, payload: dict[str, Any], event: str, delivery: str) -> None:
    from bot.webhooks.routers import router

    await router.dispatch(sansio.Event(payload, event=event, delivery_id=delivery), ctx)


async def test_a_question_edited_into_a_failure_report_gets_one_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """Opened as a question (nothing to say), then edited into a training-failure report
    minutes later: the report gets the failure comment then, once, however often it is edited
    afterwards. On main an edit only ever rewrote a comment already there: a report written
    into an issue after opening (a template submitted first, filled in by an edit) never got
    one."""
    await install(app_ctx, fake_github)
    start = datetime.now(UTC) - timedelta(minutes=30)
    opened = issue_payload(fake_github, "opened", 301, "Question about training", QUESTION,
                           updated=start)
    await deliver(app_ctx, opened, "issues", "q-301-opened")
    assert not app_comments(fake_github, VERL, 301)
    edited = issue_payload(fake_github, "edited", 301, "Entropy collapse during GRPO training",
                           REPORT, updated=start + timedelta(minutes=5))
    await deliver(app_ctx, edited, "issues", "q-301-edit-1")
    async with app_ctx.sessionmaker() as s:
        analysis = await s.scalar(select(Analysis))
    if not analysis.is_failure_report or (analysis.failure_confidence or 0) < 0.7:
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    posted = app_comments(fake_github, VERL, 301)
    assert len(posted) == 1, [a.status for a in await actions_of(app_ctx, 301)]
    for i in range(2, 6):  # edited again and again, the same delivery redelivered too
        again = issue_payload(fake_github, "edited", 301, "Entropy collapse during GRPO training",
                              REPORT + "\n" * i, updated=start + timedelta(minutes=5 + i))
        await deliver(app_ctx, again, "issues", f"q-301-edit-{i}")
        await deliver(app_ctx, again, "issues", f"q-301-edit-{i}")
    assert len(app_comments(fake_github, VERL, 301)) == 1
    assert len(fake_github.requests("POST", r"/repos/.*/issues/301/comments")) == 1
    [row] = [a for a in await actions_of(app_ctx, 301, "failure_comment") if a.status == "posted"]
    assert row.details["trigger"] == "issues.edited"


async def test_an_old_issue_edited_into_a_report_gets_no_comment(app_ctx: Any, fake_github: Any) -> None:
    """The age rule holds for an edit: an issue opened a week ago and edited into a report
    today is not commented on (the reporter has moved on, or someone is on it)."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 302, title="Question", body=QUESTION,
                     created_at=datetime.now(UTC) - timedelta(days=7))
    out = await act(app_ctx, VERL, 302, trigger="issues.edited", payload=None, analysis=FAILURE)
    assert out.get("failure_comment") == "skipped:too_old"
    assert not app_comments(fake_github, VERL, 302)


async def test_no_comment_on_an_issue_locked_before_the_worker_runs(
        app_ctx: Any, fake_github: Any) -> None:
    """A maintainer locked the conversation between the opening and the decision: the app,
    which can still write there, stays quiet (the live check before posting). On main it
    posted on the locked issue."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 303)
    fake_github.issue(VERL, 303).update(locked=True, active_lock_reason="resolved")
    out = await act(app_ctx, VERL, 303, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:locked"
    assert not app_comments(fake_github, VERL, 303)
    [skip] = [a for a in await actions_of(app_ctx, 303) if a.status == "skipped"]
    assert skip.details["code"] == "locked" and skip.details["checked"] == "live"


async def test_comments_turned_off_after_the_delivery_was_queued(
        app_ctx: Any, fake_github: Any) -> None:
    """The maintainers push `failure_comments: false` while the delivery waits (the config
    was read, and cached, minutes before): nothing is posted. On main the cached config
    (up to ten minutes old) decided, and the comment was posted after the opt-out."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: true\n")
    config = await get_repo_config(app_ctx, VERL, INST)
    assert config.failure_comments
    payload = await open_issue(app_ctx, fake_github, 304)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    out = await act(app_ctx, VERL, 304, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:config_off"
    assert not app_comments(fake_github, VERL, 304)
    # dry_run turned on meanwhile: recorded, not posted
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: true\n")
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    payload = await open_issue(app_ctx, fake_github, 305)
    fake_github.set_file(VERL, ".github/rltracker.yml", "dry_run: true\n")
    out = await act(app_ctx, VERL, 305, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "dry_run"
    assert not app_comments(fake_github, VERL, 305)


async def test_rule_summaries_turned_off_after_the_delivery_was_queued(
        app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "rule_summaries: true\n")
    await get_repo_config(app_ctx, VERL, INST)
    payload = await open_issue(app_ctx, fake_github, 306, title="Add GSPO", body="Please add GSPO.")
    fake_github.set_file(VERL, ".github/rltracker.yml", "rule_summaries: false\n")
    out = await act(app_ctx, VERL, 306, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:config_off"
    assert not app_comments(fake_github, VERL, 306, RULES_MARKER)


async def test_a_budget_or_bar_set_after_the_delivery_was_queued_holds(
        app_ctx: Any, fake_github: Any) -> None:
    """The maintainers push `daily_budget: 0`, or raise `min_confidence` above the finding's,
    while the delivery waits: nothing is posted. On main the config was read again before
    posting for its opt-outs only: the cached budget (up to ten minutes old) let the claim
    through and the cached bar passed a 0.92 finding, and the comment appeared minutes after
    the maintainer had said none today, or none this unsure."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: true\n")
    await get_repo_config(app_ctx, VERL, INST)
    payload = await open_issue(app_ctx, fake_github, 311)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 0\n")
    out = await act(app_ctx, VERL, 311, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:budget"
    assert not app_comments(fake_github, VERL, 311)

    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: true\n")
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    payload = await open_issue(app_ctx, fake_github, 312)
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 0.99\n")
    out = await act(app_ctx, VERL, 312, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:low_confidence"
    assert not app_comments(fake_github, VERL, 312)

    fake_github.set_file(VERL, ".github/rltracker.yml", "rule_summaries: true\n")
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    payload = await open_issue(app_ctx, fake_github, 313, title="Add GSPO", body="Please add GSPO.")
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 0.95\n")
    out = await act(app_ctx, VERL, 313, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:low_confidence"
    assert not app_comments(fake_github, VERL, 313, RULES_MARKER)
    # a budget with room (311 to 313 gave their slots back) lets the next comment be posted
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 1\n")
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    payload = await open_issue(app_ctx, fake_github, 314)
    out = await act(app_ctx, VERL, 314, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted" and app_comments(fake_github, VERL, 314)


@pytest.mark.parametrize("change", ["closed", "locked"])
async def test_no_rule_summary_on_a_proposal_closed_or_locked_before_the_worker_runs(
        app_ctx: Any, fake_github: Any, change: str) -> None:
    """The rule summary reads the live issue before posting, as the failure comment does: a
    proposal a maintainer closed (declined) or locked before the decision gets no reply. On
    main the stored (opening) state decided and the reply was posted on the closed issue."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 307, title="Add GSPO", body="Please add GSPO.")
    if change == "closed":
        fake_github.issue(VERL, 307).update(state="closed", state_reason="not_planned")
    else:
        fake_github.issue(VERL, 307).update(locked=True)
    out = await act(app_ctx, VERL, 307, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == f"skipped:{change}"
    assert not app_comments(fake_github, VERL, 307, RULES_MARKER)
    # the slot is given back: a later decision (nothing changed) stays quiet the same way
    out = await act(app_ctx, VERL, 307, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert not app_comments(fake_github, VERL, 307, RULES_MARKER)


async def test_an_edit_judges_the_labels_the_issue_was_opened_with_as_its_opening_did(
        app_ctx: Any, fake_github: Any) -> None:
    """A template that adds `bug` at opening is no sign anyone is on the issue, on an edit as
    on the opening; a label a maintainer put on since is."""
    from tests.test_actions_e2e import NOT_FAILURE

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 309, body=QUESTION, labels=["bug"])
    out = await act(app_ctx, VERL, 309, trigger="issues.opened", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "skipped:not_failure"
    out = await act(app_ctx, VERL, 309, trigger="issues.edited", payload=None, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert len(app_comments(fake_github, VERL, 309)) == 1

    payload = await open_issue(app_ctx, fake_github, 310, body=QUESTION, labels=["needs-info"])
    payload["issue"]["labels"] = []  # opened bare; a maintainer labelled it since
    out = await act(app_ctx, VERL, 310, trigger="issues.opened", payload=payload, analysis=NOT_FAILURE)
    out = await act(app_ctx, VERL, 310, trigger="issues.edited", payload=None, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:labelled"
    assert not app_comments(fake_github, VERL, 310)


@pytest.mark.parametrize("repo", ["huggingface/transformers", "someone/verl"])
async def test_no_rule_summary_outside_the_seven_frameworks(
        app_ctx: Any, fake_github: Any, repo: str) -> None:
    """Installed on every repository of an organisation (huggingface for trl: transformers too)
    or on a fork: a method proposal there gets no rule summary, as a failure report gets no
    failure comment (the reply is about contributing a method to a tracked framework, with
    the study of seven RL frameworks). On main it was posted, with that repository's own
    contribution files summarised under the seven frameworks' study."""
    await install(app_ctx, fake_github, repo, None)
    payload = await open_issue(app_ctx, fake_github, 311, repo=repo, title="Add GSPO",
                               body="Please add GSPO (arXiv 2507.18071).")
    out = await act(app_ctx, repo, 311, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:unknown_framework"
    assert not fake_github.comments_of(repo, 311)
    assert not fake_github.requests("POST", r"/issues/311/comments")


RECIPE = "verl-project/verl-recipe"  # a related project of the same organisation


def transfer_payloads(fake: Any, old: tuple[str, int], new: tuple[str, int]) -> tuple[
        dict[str, Any], dict[str, Any]]:
    """GitHub's `issues.transferred` (to the old repository) and `issues.opened` with
    `changes.old_issue` (to the new one) for moving fake issue `old` to `new`; the fake moves
    the issue and its comments as GitHub does."""
    issue = fake.issues.pop((old[0].lower(), old[1]))
    moved = fake.add_issue(new[0], new[1], issue["title"], issue["body"], issue["user"]["login"],
                           created_at=issue["created_at"])
    for c in fake.comments.values():
        if c["_repo"] == old[0].lower() and c["_number"] == old[1]:
            c["_repo"], c["_number"] = new[0].lower(), new[1]
            moved["comments"] += 1
    served_old = {**fake._served(issue), "author_association": "NONE", "labels": []}
    served_new = {**fake._served(moved), "author_association": "NONE", "labels": []}
    gone = fixture("issues", "transferred")
    gone.update(issue=served_old, repository=fake.repo_json(old[0]), installation={"id": INST},
                changes={"new_issue": served_new, "new_repository": fake.repo_json(new[0])})
    came = fixture("issues", "opened.with-transfer")
    came.update(issue=served_new, repository=fake.repo_json(new[0]), installation={"id": INST},
                changes={"old_issue": served_old, "old_repository": fake.repo_json(old[0])})
    return json.loads(json.dumps(gone)), json.loads(json.dumps(came))


async def test_a_report_transferred_away_and_back_keeps_one_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """Commented on in verl, moved to a related project of the organisation (no framework: no
    comment there), then back into verl under a new number: the app's comment came along, and
    it is still the only one (adopted, not posted again)."""
    await install(app_ctx, fake_github)
    async with app_ctx.sessionmaker() as s:
        from bot.store.models import Repository

        s.add(Repository(full_name=RECIPE, installation_id=INST))
        await s.commit()
    fake_github.add_installation(INST, "verl-project", repos=[VERL, RECIPE])
    now = datetime.now(UTC) - timedelta(minutes=20)
    opened = issue_payload(fake_github, "opened", 321, "Entropy collapse during GRPO training",
                           REPORT, updated=now)
    await deliver(app_ctx, opened, "issues", "t-321-opened")
    async with app_ctx.sessionmaker() as s:
        analysis = await s.scalar(select(Analysis))
    if not analysis.is_failure_report or (analysis.failure_confidence or 0) < 0.7:
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    assert len(app_comments(fake_github, VERL, 321)) == 1
    gone, came = transfer_payloads(fake_github, (VERL, 321), (RECIPE, 8))
    await deliver(app_ctx, gone, "issues", "t-321-gone")
    await deliver(app_ctx, came, "issues", "t-8-came")
    assert len(app_comments(fake_github, RECIPE, 8)) == 1  # the one that came along
    gone, came = transfer_payloads(fake_github, (RECIPE, 8), (VERL, 322))
    await deliver(app_ctx, gone, "issues", "t-8-gone")
    await deliver(app_ctx, came, "issues", "t-322-came")
    assert len(app_comments(fake_github, VERL, 322)) == 1
    assert len(fake_github.requests("POST", r"/issues/\d+/comments")) == 1


async def test_bots_pull_requests_discussions_and_reopenings_get_no_failure_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """An issue opened by a bot (or by the app itself), a pull request and a reopened issue
    that report a failure: no failure comment, and no rule summary on the bot's."""
    await install(app_ctx, fake_github)
    for number, user in ((330, "dependabot[bot]"), (331, "rltracker-test[bot]")):
        payload = await open_issue(app_ctx, fake_github, number, user=user, author_is_bot=True)
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis={**FAILURE, "proposal": PROPOSAL["proposal"]})
        assert out["failure_comment"] == "skipped:bot_author"
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=PROPOSAL)
        assert out["rule_summary"] == "skipped:bot_author"
    payload = await open_issue(app_ctx, fake_github, 332, kind="pull_request")
    out = await act(app_ctx, VERL, 332, trigger="pull_request.opened", payload=payload,
                    analysis=FAILURE)
    assert "failure_comment" not in out
    payload = await open_issue(app_ctx, fake_github, 333)
    out = await act(app_ctx, VERL, 333, trigger="issues.reopened", payload=payload, analysis=FAILURE)
    assert out == {}
    assert not fake_github.requests("POST", r"/issues/\d+/comments")


async def test_a_proposal_edited_into_a_report_keeps_its_one_reply(
        app_ctx: Any, fake_github: Any) -> None:
    """The app says one thing on a thread: a proposal that got the rule summary and is then
    edited into something the analyzer reads as a failure report gets no failure comment
    beside it (a recheck, someone asking, still may)."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 334, title="Add GSPO", body="Please add GSPO.")
    out = await act(app_ctx, VERL, 334, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    out = await act(app_ctx, VERL, 334, trigger="issues.edited", payload=None, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:rule_summary"
    assert len(fake_github.comments_of(VERL, 334)) == 1


async def test_no_rule_summary_to_a_maintainer_github_labels_a_contributor(
        app_ctx: Any, fake_github: Any) -> None:
    """A maintainer proposing a method in their own repository gets no rule summary, also when
    the payload's author_association does not say so (GitHub says CONTRIBUTOR or NONE for an
    organisation member whose membership is private): their role is asked of GitHub right
    before posting. On main only the association was read, and the maintainer was told their
    own contribution rules. Someone with read access still gets it."""
    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "carol", "maintain")
    fake_github.set_permission(VERL, "dave", "read")
    payload = await open_issue(app_ctx, fake_github, 340, title="Add GSPO", body="Please add GSPO.",
                               user="carol", association="CONTRIBUTOR")
    out = await act(app_ctx, VERL, 340, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:maintainer_author"
    assert not fake_github.comments_of(VERL, 340)
    payload = await open_issue(app_ctx, fake_github, 341, title="Add GSPO", body="Please add GSPO.",
                               user="dave", association="CONTRIBUTOR")
    out = await act(app_ctx, VERL, 341, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"


async def test_a_chinese_proposal_gets_the_chinese_reply(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(
        app_ctx, fake_github, 342, title="建议支持 GSPO 算法",
        body="希望 verl 能支持 GSPO（arXiv 2507.18071），它在长序列训练上比逐词的重要性采样更稳定。")
    out = await act(app_ctx, VERL, 342, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    [reply] = app_comments(fake_github, VERL, 342, RULES_MARKER)
    assert "贡献" in reply["body"] and "Contributing a method" not in reply["body"]
    [row] = [a for a in await actions_of(app_ctx, 342, "rule_summary") if a.status == "posted"]
    assert row.language == "zh"


async def test_empty_bodies_through_the_router(app_ctx: Any, fake_github: Any) -> None:
    """GitHub's examples of an issue opened with an empty body and a pull request opened with
    a null one: decided on (a skip recorded), nothing posted, no error."""
    await install(app_ctx, fake_github)
    payload = issue_payload(fake_github, "opened", 343, "Question", None,
                            updated=datetime.now(UTC), name="opened.with-empty-body")
    await deliver(app_ctx, payload, "issues", "e-343")
    pr = fixture("pull_request", "opened.with-null-body")
    fake_github.add_issue(VERL, 344, "Update README", None, "alice", pull_request=True)
    pr["pull_request"].update(number=344, body=None, author_association="NONE",
                              created_at=iso(datetime.now(UTC)), updated_at=iso(datetime.now(UTC)))
    pr.update(number=344, repository=fake_github.repo_json(VERL), installation={"id": INST})
    await deliver(app_ctx, json.loads(json.dumps(pr)), "pull_request", "e-344")
    assert not fake_github.requests("POST", r"/issues/\d+/comments")
    [skip] = await actions_of(app_ctx, 343)
    assert skip.status == "skipped" and skip.details["code"] == "not_failure"


@pytest.mark.parametrize("quiet", ["config_off", "paused"])
async def test_an_edit_leaves_the_comment_alone_once_comments_are_off(
        app_ctx: Any, fake_github: Any, quiet: str) -> None:
    """`failure_comments: false` pushed after the comment was posted, or the repository
    paused (its maintainers hid the app's comments): an edit of the issue no longer rewrites
    the comment (on main it was PATCHed on every edit that changed the finding). A person's
    `/rltracker kind` still does: someone asked (tests/test_verdicts.py)."""
    from bot.store.models import Repository

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 345)
    out = await act(app_ctx, VERL, 345, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    if quiet == "config_off":
        fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
        await get_repo_config(app_ctx, VERL, INST, refresh=True)
    else:
        async with app_ctx.sessionmaker() as s:
            row = await s.scalar(select(Repository).where(Repository.full_name == VERL))
            row.comments_paused, row.paused_reason = True, "2 of the app's last 10 comments were hidden"
            await s.commit()
    other = {**FAILURE, "failure": {**FAILURE["failure"], "category": "kl_growth",
                                    "categories": ["kl_growth"]}}
    out = await act(app_ctx, VERL, 345, trigger="issues.edited", payload=None, analysis=other)
    assert out["failure_comment"] == quiet
    assert not fake_github.requests("PATCH", r"/issues/comments/\d+")


async def test_the_pull_request_of_a_summarised_proposal_gets_no_second_summary(
        app_ctx: Any, fake_github: Any) -> None:
    """The proposal was an issue that got the rule summary; its proposer then opens the pull
    request that implements it ("Closes #346"): the rules are on the issue already, the pull
    request gets no second summary (on main it did). A pull request of its own still does."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 346, title="Add GSPO", body="Please add GSPO.")
    out = await act(app_ctx, VERL, 346, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"
    payload = await open_issue(app_ctx, fake_github, 347, title="[algo] feat: GSPO",
                               body="Implements GSPO.\n\nCloses #346", kind="pull_request")
    out = await act(app_ctx, VERL, 347, trigger="pull_request.opened", payload=payload,
                    analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:summarised_on_issue"
    assert not fake_github.comments_of(VERL, 347)
    payload = await open_issue(app_ctx, fake_github, 348, title="[algo] feat: GSPO",
                               body="Implements GSPO (see #2 for the old discussion).",
                               kind="pull_request")
    out = await act(app_ctx, VERL, 348, trigger="pull_request.opened", payload=payload,
                    analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"


async def test_a_maintainer_github_labels_a_contributor_has_replied(
        app_ctx: Any, fake_github: Any) -> None:
    """A maintainer answered the report before the worker ran, and GitHub calls them
    CONTRIBUTOR (private organisation membership): their role is asked of GitHub in the live
    check, and the app stays quiet (on main it posted after the maintainer's answer). A reply
    by someone with read access does not silence it."""
    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "erin", "write")
    fake_github.set_permission(VERL, "frank", "read")
    payload = await open_issue(app_ctx, fake_github, 349)
    fake_github.add_comment(VERL, 349, "Lower the learning rate and try again.", "erin",
                            author_association="CONTRIBUTOR")
    out = await act(app_ctx, VERL, 349, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:maintainer_replied"
    assert not app_comments(fake_github, VERL, 349)
    payload = await open_issue(app_ctx, fake_github, 350)
    fake_github.add_comment(VERL, 350, "Same here!", "frank", author_association="CONTRIBUTOR")
    out = await act(app_ctx, VERL, 350, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"


async def test_a_retry_adopts_the_reply_it_posted_before_the_proposal_was_closed(
        app_ctx: Any, fake_github: Any) -> None:
    """The first attempt posted the rule summary and lost GitHub's answer; the proposal was
    closed before the retry: the retry records the reply that is there (it does not drop the
    claim and leave a reply of the app's unrecorded)."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 351, title="Add GSPO", body="Please add GSPO.")

    @fake_github.route("POST", rf"/repos/{VERL}/issues/351/comments")
    async def created_unanswered(fake: Any, request: Any, match: Any, body: Any) -> Any:
        fake.add_comment(VERL, 351, body["body"], "rltracker[bot]", "Bot")
        request.transport.close()  # created; the answer never reaches the app
        return web.Response(status=499)

    with pytest.raises(Exception):  # noqa: B017 - whatever the lost connection raises
        await act(app_ctx, VERL, 351, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    posted = app_comments(fake_github, VERL, 351, RULES_MARKER)
    assert len(posted) == 1
    fake_github.issue(VERL, 351).update(state="closed")
    await act(app_ctx, VERL, 351, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert len(app_comments(fake_github, VERL, 351, RULES_MARKER)) == 1
    [row] = [a for a in await actions_of(app_ctx, 351, "rule_summary") if a.status == "posted"]
    assert row.comment_id == posted[0]["id"]


async def test_an_edit_after_a_maintainer_github_labels_a_contributor_replied_leaves_the_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """After the app's comment, a maintainer whom GitHub calls CONTRIBUTOR (private
    organisation membership) answered; then the reporter edits the issue: the comment is
    frozen as after any maintainer's reply, not rewritten under the maintainer's answer (on
    main it was PATCHed). Their role is asked of GitHub only when a rewrite is due. A reply by
    someone with read access does not freeze it."""
    from bot.store.models import Thread
    from bot.store.threads import upsert_comment
    from tests.test_actions_e2e import NOT_FAILURE

    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "erin", "write")
    fake_github.set_permission(VERL, "frank", "read")
    for number, login, frozen in ((352, "frank", False), (353, "erin", True)):
        payload = await open_issue(app_ctx, fake_github, number)
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=FAILURE)
        assert out["failure_comment"] == "posted"
        later = datetime.now(UTC) + timedelta(seconds=5)
        async with app_ctx.sessionmaker() as s:
            thread = await s.scalar(select(Thread).where(Thread.number == number))
            await upsert_comment(s, thread, {
                "github_id": 9000 + number, "author": login, "author_association": "CONTRIBUTOR",
                "body": "This is the known NCCL timeout; upgrade and retry.",
                "created_at": iso(later)})
            await s.commit()
        out = await act(app_ctx, VERL, number, trigger="issue_comment.created", payload=payload,
                        analysis=FAILURE)
        out = await act(app_ctx, VERL, number, trigger="issues.edited", payload=payload,
                        analysis=NOT_FAILURE)
        assert out["failure_comment"] == ("frozen" if frozen else "updated"), number
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 1  # frank's thread only


async def test_an_issue_a_maintainer_edits_into_a_report_gets_no_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """Only its author's edit makes an issue a report to comment on: a maintainer who edits
    someone's issue (retitles it while triaging) is on it, as a maintainer's reply or label
    says (GitHub's `sender` of the edit is not the issue's author)."""
    from tests.test_actions_e2e import NOT_FAILURE

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 354, body=QUESTION)
    await act(app_ctx, VERL, 354, trigger="issues.opened", payload=payload, analysis=NOT_FAILURE)
    edit = {**payload, "action": "edited", "sender": {"login": "bob", "type": "User"}}
    out = await act(app_ctx, VERL, 354, trigger="issues.edited", payload=edit, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:edited_by_other"
    edit = {**payload, "action": "edited", "sender": {"login": "alice", "type": "User"}}
    out = await act(app_ctx, VERL, 354, trigger="issues.edited", payload=edit, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
