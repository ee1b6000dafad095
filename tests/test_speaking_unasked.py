"""Where the app must stay quiet although the thread is a confident report or proposal, as a
maintainer of a tracked framework sees it (review speak61): the decision (`act`) given an
analysis as the pipeline gives it, GitHub the fake server of tests/fakegithub.py, on SQLite and
PostgreSQL (`app_ctx`)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.speaking.decide import act
from bot.speaking.repo_config import get_repo_config
from tests.test_actions_e2e import (
    FAILURE,
    INST,
    PROPOSAL,
    VERL,
    actions_of,
    app_comments,
    install,
    open_issue,
)


@pytest.mark.parametrize("stated", ['"false"', "'no'", '"off"', "0", '"False"'])
async def test_an_opt_out_written_as_a_string_or_number_holds(
        app_ctx: Any, fake_github: Any, stated: str) -> None:
    """`failure_comments: "false"` (quoted, as GitHub Actions' `with:` values are written) is
    not YAML's false: the file was refused as invalid and the defaults applied, so the app
    commented in a repository that had written that it wants no comments. A stated opt-out
    the app cannot read as true or false now holds as the quiet value (the file is still
    reported invalid); likewise `rule_summaries` and `dry_run`."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         f"failure_comments: {stated}\nrule_summaries: {stated}\n")
    payload = await open_issue(app_ctx, fake_github, 20)
    out = await act(app_ctx, VERL, 20, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:config_off"
    payload = await open_issue(app_ctx, fake_github, 21, title="Add GSPO", body="Please add GSPO.")
    out = await act(app_ctx, VERL, 21, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:config_off"
    assert not fake_github.comments_of(VERL, 20) and not fake_github.comments_of(VERL, 21)
    config = await get_repo_config(app_ctx, VERL, INST)
    assert config.source == "invalid" and "failure_comments must be true or false" in (config.error or "")
    assert (config.failure_comments, config.rule_summaries) == (False, False)


async def test_a_dry_run_written_as_a_string_holds(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", 'dry_run: "true"\n')
    payload = await open_issue(app_ctx, fake_github, 22)
    out = await act(app_ctx, VERL, 22, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "dry_run"
    assert not fake_github.comments_of(VERL, 22)


@pytest.mark.parametrize(("stated", "posted"), [('"maybe"', False), ("[]", False),
                                                 ('"true"', True), ("'yes'", True)])
async def test_an_unreadable_value_is_not_taken_for_on_and_a_quoted_true_is(
        app_ctx: Any, fake_github: Any, stated: str, posted: bool) -> None:
    """`failure_comments: "maybe"`: unreadable, it is not guessed on, and the app stays quiet;
    `"true"` quoted spells the default, which holds. Either way the problem is recorded."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", f"failure_comments: {stated}\n")
    payload = await open_issue(app_ctx, fake_github, 23)
    out = await act(app_ctx, VERL, 23, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == ("posted" if posted else "skipped:config_off")
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "failure_comments must be true or false" in config_row.reason


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
async def test_no_failure_comment_on_a_report_a_maintainer_opened(
        app_ctx: Any, fake_github: Any, association: str) -> None:
    """A maintainer who opens an issue about a failing run in their own framework (tracking a
    regression, a CI run gone wrong) knows its options: the app told them how to turn on
    clip-higher in verl. As the rule summary (`maintainer_author`), the failure comment is
    not posted on an issue its repository's maintainer opened; a recheck they ask for still
    answers."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 30, user="maint", association=association)
    out = await act(app_ctx, VERL, 30, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:maintainer_author"
    assert not fake_github.comments_of(VERL, 30)
    [row] = await actions_of(app_ctx, 30, "failure_comment")
    assert row.status == "skipped" and row.details["code"] == "maintainer_author"
    out = await act(app_ctx, VERL, 30, trigger="command", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert len(app_comments(fake_github, VERL, 30)) == 1


async def test_no_failure_comment_on_a_report_a_maintainer_github_labels_a_contributor_opened(
        app_ctx: Any, fake_github: Any) -> None:
    """The payload says CONTRIBUTOR or NONE for an organisation member whose membership is
    private: their role is asked of GitHub right before posting, as for the rule summary.
    Someone with read or triage access, or none, still gets the comment."""
    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "carol", "maintain")
    fake_github.set_permission(VERL, "dave", "triage")
    payload = await open_issue(app_ctx, fake_github, 31, user="carol", association="CONTRIBUTOR")
    out = await act(app_ctx, VERL, 31, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:maintainer_author"
    assert not fake_github.comments_of(VERL, 31)
    [row] = await actions_of(app_ctx, 31, "failure_comment")
    assert row.details.get("checked") == "live"
    for number, user in ((32, "dave"), (33, "erin")):
        payload = await open_issue(app_ctx, fake_github, number, user=user, association="NONE")
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=FAILURE)
        assert out["failure_comment"] == "posted"


def test_a_quoted_opt_out_in_a_file_that_does_not_parse_holds() -> None:
    from bot.speaking.repo_config import ConfigError, parse_config_text

    with pytest.raises(ConfigError) as raised:
        parse_config_text('failure_comments: "false"  # off, please\nrule_summaries: 0\n'
                          'dry_run: true\nlabels: [oops\n')
    assert raised.value.opt_outs == {"failure_comments": False, "rule_summaries": False,
                                     "dry_run": True}
    with pytest.raises(ConfigError) as raised:
        parse_config_text('failure_comments: true\ndry_run: "false"\nrule_summaries: "yes"\n'
                          "labels: [oops\n")
    assert raised.value.opt_outs == {}


async def test_a_report_labelled_by_a_maintainer_then_transferred_in_gets_no_comment(
        app_ctx: Any, fake_github: Any) -> None:
    """Opened in a related project of the organisation (no framework: nothing said), labelled
    there by a maintainer who then moved it into verl: its `opened` delivery at the new place
    carries the maintainer's label, which the app took for a label the issue was opened with
    (an issue template's) and ignored, so it commented on an issue a maintainer had triaged.
    The labels of a transferred issue's opening are those its first opening recorded."""
    import copy
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import select

    from bot.store.models import Analysis, Repository
    from tests.test_actions_e2e import iso
    from tests.test_speaking_when import RECIPE, REPORT, deliver, fixture, transfer_payloads

    await install(app_ctx, fake_github)
    async with app_ctx.sessionmaker() as s:
        s.add(Repository(full_name=RECIPE, installation_id=INST))
        await s.commit()
    fake_github.add_installation(INST, "verl-project", repos=[VERL, RECIPE])
    opened_at = datetime.now(UTC) - timedelta(minutes=30)
    issue = fake_github.add_issue(RECIPE, 8, "Entropy collapse during GRPO training", REPORT,
                                  "alice", created_at=iso(opened_at))
    opened = fixture("issues", "opened")
    opened["issue"].update(copy.deepcopy(fake_github._served(issue)))
    opened["issue"].update(author_association="NONE", labels=[], assignees=[], assignee=None,
                           milestone=None)
    opened.update(repository=fake_github.repo_json(RECIPE), installation={"id": INST},
                  sender={"login": "alice", "type": "User", "id": 1})
    await deliver(app_ctx, opened, "issues", "r-8-opened")
    async with app_ctx.sessionmaker() as s:
        analysis = await s.scalar(select(Analysis))
    if not analysis.is_failure_report or (analysis.failure_confidence or 0) < 0.7:
        pytest.skip("the failure analyzer does not (yet) recognise this report")
    # A maintainer labels it in the related project, then moves it into verl.
    issue["labels"] = [{"name": "bug"}]
    gone, came = transfer_payloads(fake_github, (RECIPE, 8), (VERL, 340))
    fake_github.issue(VERL, 340)["labels"] = [{"name": "bug"}]
    came["issue"]["labels"] = gone["issue"]["labels"] = [{"name": "bug", "id": 1}]
    came["sender"] = gone["sender"] = {"login": "maint", "type": "User", "id": 2}
    await deliver(app_ctx, gone, "issues", "r-8-gone")
    await deliver(app_ctx, came, "issues", "v-340-came")
    assert not fake_github.comments_of(VERL, 340)
    codes = [a.details.get("code") for a in await actions_of(app_ctx, 340, "failure_comment")]
    assert "labelled" in codes


ARCHIVED = {"message": "Repository was archived so is read-only.",
            "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
            "status": "403"}


async def test_an_archived_repository_is_a_reason_to_stay_quiet_not_a_failure(
        app_ctx: Any, fake_github: Any) -> None:
    """A delivery that waited while its repository was archived: GitHub refuses the comment
    (403, read-only). On main the attempt was recorded failed with the text it meant to post
    and the delivery failed for good, an operator's alarm for nothing, and every later
    decision on the thread took the failed attempt for one that may have posted. Now the
    claim is given up and the skip `archived` recorded, for the failure comment and the rule
    summary alike; the delivery succeeds."""
    await install(app_ctx, fake_github)
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 403, times=2, body=ARCHIVED)
    payload = await open_issue(app_ctx, fake_github, 50)
    out = await act(app_ctx, VERL, 50, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:archived"
    payload = await open_issue(app_ctx, fake_github, 51, title="Add GSPO", body="Please add GSPO.")
    out = await act(app_ctx, VERL, 51, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:archived"
    for number, kind in ((50, "failure_comment"), (51, "rule_summary")):
        rows = await actions_of(app_ctx, number, kind)
        assert [(a.status, a.details.get("code")) for a in rows] == [("skipped", "archived")]


async def test_no_rule_summary_on_a_proposal_opened_days_ago(app_ctx: Any, fake_github: Any) -> None:
    """The rule summary is for a new proposal, but only the failure comment had an age rule:
    an `opened` delivery handled days late (a worker outage, an operator replaying a failed
    delivery) or the `opened` at the new place of a year-old proposal a maintainer moved in
    from a related project got the contribution rules on a thread long past. As the failure
    comment: nothing after 48 hours (`too_old`), on the stored thread and the live one."""
    from datetime import UTC, datetime, timedelta

    await install(app_ctx, fake_github)
    old = datetime.now(UTC) - timedelta(days=5)
    payload = await open_issue(app_ctx, fake_github, 60, title="Add GSPO", body="Please add GSPO.",
                               created_at=old)
    out = await act(app_ctx, VERL, 60, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:too_old"
    payload = await open_issue(app_ctx, fake_github, 61, title="Add GSPO", body="Please add GSPO.",
                               kind="pull_request", created_at=old)
    out = await act(app_ctx, VERL, 61, trigger="pull_request.opened", payload=payload,
                    analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:too_old"
    assert not fake_github.comments_of(VERL, 60) and not fake_github.comments_of(VERL, 61)
    fresh = datetime.now(UTC) - timedelta(hours=47)
    payload = await open_issue(app_ctx, fake_github, 62, title="Add GSPO", body="Please add GSPO.",
                               created_at=fresh)
    out = await act(app_ctx, VERL, 62, trigger="issues.opened", payload=payload, analysis=PROPOSAL)
    assert out["rule_summary"] == "posted"


@pytest.mark.parametrize("reason", ["OFF_TOPIC", "spam"])
async def test_an_edit_leaves_the_comment_a_maintainer_hid_and_its_label(
        app_ctx: Any, fake_github: Any, reason: str) -> None:
    """A maintainer hid the app's comment as off-topic or spam (the nightly reception read it
    minimised), saying nothing in the thread. The author's next edit, now reading as another
    kind, rewrote the hidden comment and moved the app's label to the new kind: the app went on
    acting on a thread where it had been told off. A comment a person minimised is left as it
    is on an edit (as a kind verdict already left it), frozen, and its label stays."""
    from sqlalchemy import update

    from bot.store.models import Action

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "labels:\n  entropy_collapse: 'rl: entropy'\n  kl_growth: 'rl: kl'\n")
    payload = await open_issue(app_ctx, fake_github, 70)
    out = await act(app_ctx, VERL, 70, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    async with app_ctx.sessionmaker() as s:  # as refresh_reception records it
        await s.execute(update(Action).where(Action.number == 70, Action.kind == "failure_comment")
                        .values(is_minimized=True, minimized_reason=reason))
        await s.commit()
    kl = {**FAILURE, "failure": {**FAILURE["failure"], "category": "kl_growth",
                                 "categories": ["kl_growth"]}}
    out = await act(app_ctx, VERL, 70, trigger="issues.edited", payload=payload, analysis=kl)
    assert out["failure_comment"] == "frozen"
    assert not fake_github.requests("PATCH")
    assert {lab["name"] for lab in fake_github.issue(VERL, 70)["labels"]} == {"rl: entropy"}
    [row] = await actions_of(app_ctx, 70, "failure_comment")
    assert row.frozen and row.details["category"] == "entropy_collapse"


@pytest.mark.parametrize("reference", [
    "Fixes verl-project/verl#{n}",
    "Fixes https://github.com/verl-project/verl/issues/{n} by raising clip_ratio_high",
    "Closes volcengine/verl#{n} (the repository's former name)",
    "Resolves https://github.com/Verl-Project/VERL/issues/{n}.",
])
async def test_a_pull_request_naming_the_issue_in_full_is_a_linked_one(
        app_ctx: Any, fake_github: Any, reference: str) -> None:
    """GitHub links a pull request to the issue (and closes it on merge) whether it writes
    `#12`, `verl-project/verl#12` or the issue's URL; only the short form was read, so an
    issue a pull request already addresses in the other forms got the comment."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 80)
    await open_issue(app_ctx, fake_github, 81, kind="pull_request", title="Fix entropy",
                     body=reference.format(n=80))
    out = await act(app_ctx, VERL, 80, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:linked_pr"
    assert not fake_github.comments_of(VERL, 80)


@pytest.mark.parametrize("reference", [
    "See huggingface/trl#{n}", "https://github.com/verl-project/verl/issues/{n}0",
    "https://github.com/verl-project/verl/pull/{n}", "verl-project/verl-recipe#{n}",
    "myfork/verl-project/verl#{n}0",
])
async def test_a_pull_request_naming_another_issue_is_not_a_linked_one(
        app_ctx: Any, fake_github: Any, reference: str) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 82)
    await open_issue(app_ctx, fake_github, 83, kind="pull_request", title="Fix entropy",
                     body=reference.format(n=82))
    out = await act(app_ctx, VERL, 82, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
