"""Names at the longest GitHub allows fit the store's bounded columns (keys82).

PostgreSQL enforces VARCHAR lengths (SQLite ignores them): a value longer than its column
makes the INSERT fail (StringDataRightTruncation), and the action, skip or thread it carried
is lost, or the delivery fails, on PostgreSQL only. GitHub's limits: a login 39 characters,
a repository name 100 (owner/name 140), an issue number a 32-bit integer, comment ids 64-bit.
GitHub's own payloads (/work/shared/fixtures/webhooks/) with those names, posted to the
app's /webhook and handled by the worker, GitHub played by tests/fakegithub.py over HTTP; on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.speaking.posting import COMMAND_REPLY_MARK, deletion_of
from bot.speaking.records import skip_key
from bot.store.models import Action, Delivery, Thread
from tests.test_actions_e2e import INST, install, open_issue
from tests.test_github_refusals import deliver

OWNER = "o" * 39
LONG_REPO = f"{OWNER}/{'r-._' * 25}"  # 39 + 1 + 100: GitHub's longest owner/name
LOGIN = "m" * 39
NUMBER = 2_147_483_647
COMMENT_ID = 9_007_199_254_740_991


def _command(shared_dir: Path, event: str, number: int, body: str) -> dict[str, Any]:
    """GitHub's `{event}.created` payload: a stranger's (LOGIN) command on LONG_REPO#number."""
    data = json.loads((shared_dir / "fixtures" / "webhooks" / event / "created.json").read_text())
    data["comment"].update(id=COMMENT_ID, body=body, author_association="NONE",
                           user={"login": LOGIN, "id": 1, "type": "User"})
    data["issue" if event == "issue_comment" else "pull_request"].update(number=number,
                                                                        state="open")
    data["repository"].update(full_name=LONG_REPO, name=LONG_REPO.split("/")[1])
    data["installation"] = {"id": INST}
    return data


async def _deliveries_and_actions(ctx: Any) -> tuple[list[Delivery], list[Action]]:
    async with ctx.sessionmaker() as s:
        return (list(await s.scalars(select(Delivery).order_by(Delivery.id))),
                list(await s.scalars(select(Action).order_by(Action.id))))


async def test_the_longest_names_github_allows_are_stored(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    assert len(LONG_REPO) == 140
    await install(app_ctx, fake_github, repo=LONG_REPO)
    payload = await open_issue(app_ctx, fake_github, NUMBER, repo=LONG_REPO, user="a" * 39)
    row = await deliver(app_ctx, "issues", payload)
    assert row.status == "done", row.last_error
    # A stranger's commands, in an issue comment and on a line of a pull request's diff (the
    # longest ref, `review_comment:{id}`): skips `not_allowed:{ref}`, and one note in the slot
    # naming them (`{repo}#{n}:command:refused:{login}:note`).
    row = await deliver(app_ctx, "issue_comment",
                        _command(shared_dir, "issue_comment", NUMBER, "/rltracker stop"))
    assert row.status == "done", row.last_error
    await open_issue(app_ctx, fake_github, NUMBER - 1, repo=LONG_REPO, user="a" * 39,
                     kind="pull_request", title="Add GSPO")
    row = await deliver(app_ctx, "pull_request_review_comment", _command(
        shared_dir, "pull_request_review_comment", NUMBER - 1, "/rltracker recheck"))
    assert row.status == "done", row.last_error
    # A discussion opened by a 39-character login in a category of a long Unicode name.
    discussion = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion" / "created.json")
                            .read_text())
    discussion["discussion"]["user"].update(login=LOGIN)
    discussion["discussion"].update(number=NUMBER - 2)
    discussion["discussion"]["category"].update(name="🧪 Q&A, 训练失败 " * 8)
    discussion["repository"].update(full_name=LONG_REPO, name=LONG_REPO.split("/")[1])
    discussion["installation"] = {"id": INST}
    row = await deliver(app_ctx, "discussion", discussion)
    assert row.status == "done", row.last_error
    deliveries, actions = await _deliveries_and_actions(app_ctx)
    assert {d.status for d in deliveries} == {"done"}, [d.last_error for d in deliveries]
    keys = {a.dedupe_key: a.status for a in actions}
    assert keys[f"{LONG_REPO}#{NUMBER}:failure_comment"] == "posted", keys
    assert keys[f"{LONG_REPO}#{NUMBER}:command:skip:not_allowed:{COMMENT_ID}"] == "skipped", keys
    assert keys[f"{LONG_REPO}#{NUMBER - 1}:command:skip:not_allowed:review_comment:"
                f"{COMMENT_ID}"] == "skipped", keys
    assert keys[f"{LONG_REPO}#{NUMBER}:command:refused:{LOGIN}:note"] in ("posted", "dry_run")
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == NUMBER))).repo == LONG_REPO
        stored = await s.scalar(select(Thread).where(Thread.number == NUMBER - 2))
        assert (stored.author, stored.category) == (LOGIN, "🧪 Q&A, 训练失败 " * 8)


def test_the_longest_skip_key_fits() -> None:
    """The longest code a skip carries: the deletion of a reply whose marker names the
    longest comment kind and id COMMAND_REPLY_MARK accepts (20 and 20 characters)."""
    marker = f"<!-- rltracker:reply-to:{'k' * 20}:{'9' * 20} -->"
    assert COMMAND_REPLY_MARK.fullmatch(marker)
    _, code, _ = deletion_of(marker) or ("", "", "")
    key = skip_key(LONG_REPO, NUMBER, "command", code)
    assert code.endswith("9" * 20) and len(key) == 223 <= Action.dedupe_key.type.length
