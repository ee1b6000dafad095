"""The app's own comments are told by who wrote them (a bot: GitHub's type "Bot", a `[bot]`
login) AND the hidden marker they carry, never by the marker alone: a person may type or
paste `<!-- rltracker:failure-comment -->` (copying the app's comment's source, quoting it in
an edit), and their comment stays theirs. Before (security71) such a comment's command was
ignored as the app's, the quiet rules did not count it as a reply (a maintainer on the thread
went unseen), and `verdicts export` left it out of the labelled thread. Real webhook payloads
from ../shared/fixtures/webhooks/ with the comment's body and user changed; GitHub is
tests/fakegithub.py over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from analyzers.papers import thread_texts
from bot.speaking.decide import act
from bot.speaking.render import FAILURE_MARKER, REPLY_MARKER, RULES_MARKER, is_app_comment
from bot.store.models import Thread, Verdict
from bot.store.threads import upsert_comment
from bot.webhooks.commands import handle_command
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import FAILURE, INST, VERL, install, open_issue
from tests.test_commands import comment_event

# What a person may write: the app's markers, pasted from its comment's source.
PASTED = (FAILURE_MARKER, RULES_MARKER, REPLY_MARKER, "<!-- rltracker:reply-to:424242 -->")


def comment_payload(shared_dir: Path, number: int, comment_id: int, body: str,
                    user: dict[str, Any] | None = None, association: str = "NONE") -> dict[str, Any]:
    """GitHub's issue_comment.created payload with this comment on VERL#`number` (by the
    issue's author unless `user` says who)."""
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json")
                      .read_text())
    data["comment"].update(id=comment_id, body=body, author_association=association,
                           user=user or {**data["comment"]["user"],
                                         "login": data["issue"]["user"]["login"], "type": "User"})
    data["issue"].update(number=number, state="open")
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    return data


@pytest.mark.parametrize("marker", PASTED)
async def test_a_persons_command_beside_a_pasted_marker_is_done(
        app_ctx: Any, fake_github: Any, shared_dir: Path, marker: str) -> None:
    """Failed on main: "ignored_bot", no verdict."""
    from gidgethub import sansio

    await install(app_ctx, fake_github)
    data = comment_payload(shared_dir, 5, 910001, (
        f"The bot's note read as a failure report (its source: {marker}); it is not.\n"
        "/rltracker not-a-failure"))
    await open_issue(app_ctx, fake_github, 5, user=data["issue"]["user"]["login"])
    event = sansio.Event(data, event="issue_comment", delivery_id="pasted-910001")
    assert await handle_command(event, app_ctx) != "ignored_bot"
    async with app_ctx.sessionmaker() as session:
        [verdict] = list(await session.scalars(select(Verdict)))
    assert (verdict.is_failure_report, verdict.login) == (False, data["issue"]["user"]["login"])


async def test_the_apps_own_comment_edited_by_a_maintainer_is_still_the_apps(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Guard (passes before and after): the app's comment (its bot login, its marker) that a
    maintainer edited is no command of the maintainer's, whatever lines it holds."""
    from gidgethub import sansio

    await install(app_ctx, fake_github)
    data = comment_payload(shared_dir, 6, 910002, f"{FAILURE_MARKER}\n/rltracker stop\n",
                           user={"login": "rltracker[bot]", "type": "Bot"})
    data["action"] = "edited"
    data["changes"] = {"body": {"from": f"{FAILURE_MARKER}\nThe app's text.\n"}}
    data["sender"] = {"login": "maint", "type": "User"}
    await open_issue(app_ctx, fake_github, 6)
    event = sansio.Event(data, event="issue_comment", delivery_id="edited-910002")
    assert await handle_command(event, app_ctx) == "ignored_bot"
    assert not fake_github.requests("POST")


@pytest.mark.parametrize("marker", PASTED)
async def test_a_maintainers_reply_holding_a_marker_is_a_reply(
        app_ctx: Any, fake_github: Any, marker: str) -> None:
    """Failed on main: the failure comment was posted under a maintainer's answer."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 12)
    fake_github.add_comment(VERL, 12, f"Looking into it. (The bot's comment, {marker}, is off.)",
                            user="maint", author_association="MEMBER")
    out = await act(app_ctx, VERL, 12, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:maintainer_replied"
    assert [c["user"]["login"] for c in fake_github.comments_of(VERL, 12)] == ["maint"]


async def test_the_export_keeps_a_persons_comment_holding_a_marker(ctx: Any, fake_github: Any) -> None:
    """Failed on main: the person's comment was left out of the labelled thread as the app's."""
    from bot.cli.verdicts import export_verdicts

    await install(ctx, fake_github)
    await open_issue(ctx, fake_github, 9)
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 9))
        for gid, who, bot, body in (
                (1, "bob", False, f"The bot said {FAILURE_MARKER} it is a collapse; KL is at 40."),
                (2, "rltracker[bot]", True, f"{FAILURE_MARKER}\nmethods")):
            await upsert_comment(s, thread, {"github_id": gid, "author": who, "author_is_bot": bot,
                                             "body": body, "created_at": f"2026-01-0{gid}T00:00:00Z"})
        await s.commit()
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=9), ctx)
    [row] = await export_verdicts(ctx)
    assert [c["author"] for c in row["comments"]] == ["bob"]


@pytest.mark.parametrize(("body", "author", "is_bot", "mine"), [
    (f"{FAILURE_MARKER}\ntext", "rltracker[bot]", True, True),
    (f"{FAILURE_MARKER}\ntext", "rltracker", True, True),  # GraphQL's login, its __typename Bot
    (f"{FAILURE_MARKER}\ntext", "alice", False, False),
    (f"{FAILURE_MARKER}\ntext", None, None, False),  # a deleted account's: no sign of the app
    ("text", "rltracker[bot]", True, False),
])
def test_is_app_comment_needs_a_bot_and_a_marker(body: str, author: str | None,
                                                 is_bot: bool | None, mine: bool) -> None:
    assert is_app_comment(body, author, is_bot) is mine


def test_the_papers_analyzer_reads_a_persons_comment_holding_a_marker() -> None:
    """`analyzers.papers` skipped the citations of a person's comment holding
    `<!-- rltracker:` as the app's (analyzer output changes for such comments only)."""
    thread = {"title": "t", "body": "b", "comments": [
        {"author": "bob", "body": f"{FAILURE_MARKER} aside, see arXiv:2402.03300"},
        {"author": "rltracker[bot]", "author_is_bot": True, "body": f"{FAILURE_MARKER}\nGSPO"}]}
    assert thread_texts(thread) == ["t", "b", f"{FAILURE_MARKER} aside, see arXiv:2402.03300"]
