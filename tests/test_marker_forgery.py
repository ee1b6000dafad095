"""The app finds its own comments on GitHub by the hidden markers they carry (the failure
comment, the rule summary, a command's reply `<!-- rltracker:reply-to:REF -->`): which comment
to edit, whether it spoke already, which slot a person's deletion closes (`deletion_of`).
Text from a repository that the app quotes in a comment (a template's file name in the
contribution rules) must not spell one of those markers there: it made the app's reply read as
its failure comment or as the reply to another command. Real webhook payloads from
../shared/fixtures/webhooks/, GitHub is tests/fakegithub.py."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from bot.site.threads import comment_html
from bot.speaking.posting import COMMAND_REPLY_MARK, deletion_of
from bot.speaking.render import FAILURE_MARKER, MARKERS, REPLY_MARKER, RULES_MARKER
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import INST, VERL, install, open_issue

TEMPLATE = "---\nname: Bug\nabout: A bug\n---\nPlease add tests for the fix.\n"
# File names a repository may hold (git allows `<`, `!`, `:` and spaces in a name)
FORGED = (f"{FAILURE_MARKER}.md", f"{RULES_MARKER}.md", "<!-- rltracker:reply-to:424242 -->.md",
          "<!-- a.md")


def rules_command(shared_dir: Path, number: int, comment_id: int) -> Any:
    """GitHub's issue_comment.created payload: the issue's author asks `/rltracker rules`."""
    from gidgethub import sansio

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json")
                      .read_text())
    author = data["issue"]["user"]["login"]
    data["comment"].update(id=comment_id, body="/rltracker rules", author_association="NONE",
                           user={**data["comment"]["user"], "login": author, "type": "User"})
    data["issue"].update(number=number, state="open")
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    return sansio.Event(data, event="issue_comment", delivery_id=f"forged-{comment_id}")


@pytest.mark.parametrize("name", FORGED)
async def test_a_file_name_spelling_a_marker_does_not_forge_one_in_the_rules_reply(
        app_ctx: Any, fake_github: Any, shared_dir: Path, name: str) -> None:
    """Templates named after the app's markers: the `/rltracker rules` reply cited them
    verbatim (in code spans, which GitHub shows as text, but the body holds the characters),
    so it carried the failure comment's and the rule summary's markers and a reply-to marker
    of a command never made. A person deleting that reply was recorded as deleting the failure
    comment (`deletion_of` reads the failure marker first), which is then never posted on the
    thread, and the reply's own slot was left open. The tracker's thread page, which drops
    the hidden markers of the replies it shows, dropped the name from its `<!--` on (to the
    end of the reply, its footer too, for a name that closes no comment)."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, "CONTRIBUTING.md", "# Contributing\n\nPlease add tests.\n")
    fake_github.set_file(VERL, f".github/ISSUE_TEMPLATE/{name}", TEMPLATE)
    event = rules_command(shared_dir, 6, 770001)
    await open_issue(app_ctx, fake_github, 6, user=event.data["issue"]["user"]["login"])
    await commands_router.dispatch(event, app_ctx)
    [reply] = [c["body"] for c in fake_github.comments_of(VERL, 6) if REPLY_MARKER in c["body"]]
    assert "ISSUE_TEMPLATE/<!" in reply and name[2:] in reply  # cited
    assert [m for m in MARKERS if m in reply] == [REPLY_MARKER], reply
    page = html.unescape(str(comment_html(reply))).replace("\u200b", "")
    assert f"ISSUE_TEMPLATE/{name}" in page and "To hide it" in page, page
    assert [m.group(0) for m in COMMAND_REPLY_MARK.finditer(reply)] == [
        "<!-- rltracker:reply-to:770001 -->"], reply
    assert deletion_of(reply) == ("command", "deleted:reply-to:770001",
                                  "<!-- rltracker:reply-to:770001 -->")
