"""`/rltracker recheck` tells whoever asked that the settings file could not be used (user77).

A maintainer pushes `.github/rltracker.yml`, then writes `/rltracker recheck` to have it read
(docs/comments.md: recheck refetches it). A file the app cannot use got a 👍 and nothing
else: the problem was a skipped action on the tracker's /api/actions, which the maintainer
never sees, and the 👍 read as "fine". Now the recheck's note says the file could not be
used and why, in a fenced block with nothing of the file that could ping or render. GitHub's
`issue_comment.created` payload through the app's /webhook over HTTP, the worker, GitHub played
by tests/fakegithub.py; SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_actions_e2e import VERL, install, open_issue
from tests.test_app_comment_author import comment_payload
from tests.test_commands import note_replies
from tests.test_github_refusals import deliver

BROKEN = "failure-comments: false\nmin_confidence: 7\n\"`@octocat` <b>x</b>\": 1\n"


async def test_a_recheck_says_the_settings_file_could_not_be_used(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Failed on main: the 👍 only."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", BROKEN)
    author = comment_payload(shared_dir, 81, 1, "")["issue"]["user"]["login"]
    await open_issue(app_ctx, fake_github, 81, user=author)
    maintainer = {"login": "olga", "id": 5, "type": "User"}
    row = await deliver(app_ctx, "issue_comment", comment_payload(
        shared_dir, 81, 940001, "/rltracker recheck", user=maintainer, association="OWNER"))
    assert row.status == "done", row.last_error
    assert len(fake_github.requests("POST", r"/issues/comments/940001/reactions")) == 1
    [note] = note_replies(fake_github, 81)
    body = note["body"]
    assert "`.github/rltracker.yml` could not be used" in body, body
    assert "failure-comments (did you mean failure_comments?)" in body
    assert "min_confidence must be a number from 0 to 1" in body
    shown = body.split("```text", 1)[1].split("```", 1)[0]
    assert not any(c in shown for c in "`@<>"), shown  # nothing to ping, render or end the fence
    # Fixed and rechecked again: the 👍 alone.
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    await deliver(app_ctx, "issue_comment", comment_payload(
        shared_dir, 81, 940002, "/rltracker recheck", user=maintainer, association="OWNER"))
    assert len(fake_github.requests("POST", r"/issues/comments/940002/reactions")) == 1
    assert len(note_replies(fake_github, 81)) == 1
