"""A command from someone who may not give it is answered, once a person a thread (user77).

Only a thread's author or a maintainer (write access) may use the commands, and `resume` is a
maintainer's. Anyone else got nothing on GitHub: a skipped action only the operator sees, so
a reporter's colleague writing `/rltracker stop`, or an author writing `/rltracker resume`,
could not tell a refusal from an app that is down. Now one short note says who may, in the
thread's language; their further commands on the thread (and redeliveries) get no second
note. GitHub's own `issue_comment.created` payload, posted to the app's /webhook over HTTP as
GitHub signs it and handled by the worker, GitHub played by tests/fakegithub.py; on SQLite
and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.store.models import Action, Thread
from tests.test_actions_e2e import VERL, install, open_issue
from tests.test_app_comment_author import comment_payload
from tests.test_commands import note_replies
from tests.test_github_refusals import deliver

ZH_TITLE = "GRPO 训练中熵迅速下降"
ZH_BODY = "训练到第 200 步后熵坍塌，奖励不再上升，请问应该调整哪些参数？"


def _by(shared_dir: Path, number: int, comment_id: int, body: str, login: str,
        association: str = "NONE") -> dict[str, Any]:
    return comment_payload(shared_dir, number, comment_id, body,
                           user={"login": login, "id": comment_id, "type": "User"},
                           association=association)


async def _skips(ctx: Any, number: int) -> list[str]:
    async with ctx.sessionmaker() as s:
        return [a.details.get("code") for a in await s.scalars(
            select(Action).where(Action.number == number, Action.status == "skipped")
            .order_by(Action.id))]


async def test_a_strangers_command_is_answered_once_and_not_done(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Failed on main: no note at all (the skip `not_allowed` only)."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 61, 1, "")["issue"]["user"]["login"]
    await open_issue(app_ctx, fake_github, 61, user=author)
    row = await deliver(app_ctx, "issue_comment", _by(shared_dir, 61, 930001, "/rltracker stop", "mallory"))
    assert row.status == "done", row.last_error
    [note] = note_replies(fake_github, 61)
    assert "Only the author of this thread or a maintainer" in note["body"], note["body"]
    assert "nothing was done" in note["body"]
    assert "mallory" not in note["body"]  # (no mention: nobody is pinged)
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 61))).muted
    # The same person again, another command: recorded, not answered a second time.
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 61, 930002, "/rltracker kind kl_growth", "mallory"))
    assert len(note_replies(fake_github, 61)) == 1
    # Someone else is told too, once.
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 61, 930003, "/rltracker recheck", "eve"))
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 61, 930004, "/rltracker recheck", "eve"))
    assert len(note_replies(fake_github, 61)) == 2
    assert await _skips(app_ctx, 61) == [f"not_allowed:{n}" for n in range(930001, 930005)]
    # A member with read access only, on a thread not theirs: the same note.
    fake_github.set_permission(VERL, "rita", "read")
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 61, 930005, "/rltracker stop", "rita", "MEMBER"))
    assert len(note_replies(fake_github, 61)) == 3


async def test_the_note_is_in_the_threads_language(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Failed on main: no note."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 62, 1, "")["issue"]["user"]["login"]
    await open_issue(app_ctx, fake_github, 62, user=author, title=ZH_TITLE, body=ZH_BODY)
    data = _by(shared_dir, 62, 930011, "/rltracker ignore", "mallory")
    data["issue"].update(title=ZH_TITLE, body=ZH_BODY)  # (the issue as the payload carries it)
    await deliver(app_ctx, "issue_comment", data)
    [note] = note_replies(fake_github, 62)
    assert "只有本帖作者或本仓库的维护者" in note["body"], note["body"]


async def test_resume_from_the_threads_author_says_it_is_a_maintainers(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """The author may give the thread's commands, not `resume` (the pause is the
    repository's). Failed on main: no note."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 63, 1, "")["issue"]["user"]["login"]
    await open_issue(app_ctx, fake_github, 63, user=author)
    await deliver(app_ctx, "issue_comment", comment_payload(shared_dir, 63, 930021, "/rltracker resume"))
    [note] = note_replies(fake_github, 63)
    assert "Only a maintainer of this repository" in note["body"], note["body"]
    assert await _skips(app_ctx, 63) == ["not_maintainer:930021"]
    # the author's own commands still work (no note for them)
    await deliver(app_ctx, "issue_comment", comment_payload(shared_dir, 63, 930022, "/rltracker ignore"))
    assert len(note_replies(fake_github, 63)) == 1
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 63))).muted


async def test_a_strangers_help_gets_the_help_once_saying_what_they_may_use(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """left78: `/rltracker help` (or a bare `/rltracker`) from someone who may not give
    commands on the thread got user77's refusal ("nothing was done"): help is harmless and is
    how a stranger learns what they may do. Now the commands, with a line saying none is
    theirs on this thread and which they may use on a thread they open; once per person a
    thread (its own slot: a refusal before it does not take its place), within the thread's
    reply cap. Failed on main (the refusal note)."""
    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 65, 1, "")["issue"]["user"]["login"]
    await open_issue(app_ctx, fake_github, 65, user=author)
    row = await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930101, "/rltracker help", "mallory"))
    assert row.status == "done", row.last_error
    [note] = note_replies(fake_github, 65)
    assert "- `recheck`: " in note["body"], note["body"]
    assert "nothing was done" not in note["body"]
    assert "none of these commands are yours to use on this thread" in note["body"], note["body"]
    assert "On a thread you open you can use all of them but `resume`" in note["body"]
    assert "mallory" not in note["body"]
    # Asked again (a bare /rltracker, another comment): once per person a thread.
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930102, "/rltracker", "mallory"))
    assert len(note_replies(fake_github, 65)) == 1
    # Their command after it: the refusal is its own note, once.
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930103, "/rltracker stop", "mallory"))
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930104, "/rltracker help", "mallory"))
    notes = note_replies(fake_github, 65)
    assert len(notes) == 2 and "nothing was done" in notes[1]["body"]
    # A member with read access only gets the help too; the thread's author the plain help.
    fake_github.set_permission(VERL, "rita", "read")
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930105, "/rltracker help", "rita", "MEMBER"))
    notes = note_replies(fake_github, 65)
    assert len(notes) == 3 and "none of these commands are yours" in notes[2]["body"]
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 65, 930106, "/rltracker help", author))
    notes = note_replies(fake_github, 65)
    assert len(notes) == 4 and "yours to use" not in notes[3]["body"]
    # No skip: the help was answered (the refused stop is the one skip).
    assert await _skips(app_ctx, 65) == ["not_allowed:930103"]


async def test_an_opening_post_command_edited_in_by_someone_not_allowed_is_answered_once(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """`/rltracker ignore` edited into the opening post by someone GitHub says has no write
    access (its delivery handled after that person's write access was taken away, or an
    account GitHub lets edit that lacks it) was recorded as a skip `not_maintainer` and nobody was
    told, while the same command in a comment gets the one refusal note a person a thread.
    Now the same: skip `not_allowed`, one note in the same slot as a comment's refusal, so a
    comment command by the same person after it gets no second note (left80). Failed on main:
    no note."""
    from tests.test_opening_commands import edited

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 63)
    fake_github.set_permission(VERL, "tria", "triage")
    for word in ("ignore", "stop"):
        data = edited(payload, body=f"{payload['issue']['body']}\n/rltracker {word}",
                      sender="tria").data
        row = await deliver(app_ctx, "issues", data)
        assert row.status == "done", row.last_error
    [note] = note_replies(fake_github, 63)
    assert "Only the author of this thread or a maintainer" in note["body"], note["body"]
    assert "tria" not in note["body"]
    await deliver(app_ctx, "issue_comment", _by(shared_dir, 63, 930031, "/rltracker stop", "tria"))
    assert len(note_replies(fake_github, 63)) == 1
    async with app_ctx.sessionmaker() as s:
        commands = list(await s.scalars(select(Action).where(
            Action.number == 63, Action.kind == "command").order_by(Action.id)))
    assert [a.details.get("code") for a in commands if a.status == "skipped"] == [
        "not_allowed:opening:ignore", "not_allowed:opening:stop", "not_allowed:930031"]
    assert [a.status for a in commands if a.status != "skipped"] == ["posted"]  # the note
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 63))).muted
