"""Reading the reception of the app's comments and pausing repositories that do not want them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.context import AppContext
from bot.speaking.reception import refresh_reception
from bot.store.models import Action, Repository
from bot.store.types import utcnow
from tests.fake_graphql import FakeData, graphql_context


@pytest.fixture
async def rctx(settings: Any, fake_github: Any, shared_dir: Path) -> AsyncIterator[tuple[AppContext, FakeData]]:
    data = FakeData()
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        yield ctx, data


async def _post(ctx: AppContext, data: FakeData, repo: str, n: int, *, up: int = 0, down: int = 0,
                minimized: str | None = None, deleted: bool = False, kind: str = "failure_comment") -> str:
    node = data._comment("IssueComment", utcnow())
    node["reactions_up"], node["reactions_down"] = up, down
    if minimized:
        node["isMinimized"], node["minimizedReason"] = True, minimized
    if deleted:
        data.nodes.pop(node["id"])
    async with ctx.sessionmaker() as session:
        session.add(Action(repo=repo, number=n, kind=kind, status="posted", body="…",
                           comment_id=node["databaseId"], comment_node_id=node["id"],
                           created_at=utcnow() - timedelta(minutes=100 - n)))
        await session.commit()
    return node["id"]


async def _repos(ctx: AppContext, *names: str) -> None:
    async with ctx.sessionmaker() as session:
        session.add_all(Repository(full_name=n) for n in names)
        await session.commit()


async def test_reads_reactions_minimised_and_deleted(rctx: Any, fake_github: Any) -> None:
    ctx, data = rctx
    await _repos(ctx, "a/hidden", "b/fine", "c/disliked")
    for n in range(1, 11):
        await _post(ctx, data, "a/hidden", n, up=1, minimized="OFF_TOPIC" if n in (3, 9) else None)
    await _post(ctx, data, "b/fine", 1, up=2, down=1)
    await _post(ctx, data, "b/fine", 2, deleted=True)
    await _post(ctx, data, "c/disliked", 1, up=1, down=2)
    await _post(ctx, data, "c/disliked", 2, down=1)
    # The app's report comment on its own tracking issue is not judged.
    await _post(ctx, data, "b/fine", 3, down=5, kind="report")

    stats = await refresh_reception(ctx)

    assert stats.comments == 14 and stats.requests == 1 and stats.deleted == 1 and stats.minimized == 2
    assert sorted(stats.paused) == ["a/hidden", "c/disliked"]
    async with ctx.sessionmaker() as session:
        repos = {r.full_name: r for r in await session.scalars(select(Repository))}
        actions = list(await session.scalars(select(Action).where(Action.repo == "b/fine").order_by(Action.number)))
    assert repos["a/hidden"].comments_paused and "2 of the app's last 10" in (repos["a/hidden"].paused_reason or "")
    assert repos["c/disliked"].comments_paused and "👎" in (repos["c/disliked"].paused_reason or "")
    assert not repos["b/fine"].comments_paused
    assert (actions[0].reactions_up, actions[0].reactions_down, actions[0].comment_deleted) == (2, 1, False)
    assert actions[1].comment_deleted is True
    assert actions[2].reactions_down == 0  # not read
    # One GraphQL request for all of them, with the nodes(ids:) query.
    assert len(fake_github.requests("POST", r"^/graphql$")) == 1


async def test_only_the_last_ten_count(rctx: Any) -> None:
    ctx, data = rctx
    await _repos(ctx, "d/recovered")
    # Two old hidden comments, then ten well-received ones: no pause.
    await _post(ctx, data, "d/recovered", 1, minimized="SPAM")
    await _post(ctx, data, "d/recovered", 2, minimized="SPAM")
    for n in range(3, 13):
        await _post(ctx, data, "d/recovered", n, up=1)
    stats = await refresh_reception(ctx)
    assert stats.paused == []


async def test_a_group_github_will_not_read_does_not_stop_the_others(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """App credentials only; the app left one repository (its installation deleted: no token
    reads it now) and is still installed on another. The refused group failed the whole
    reception step every night: no counts read and no repository paused anywhere."""
    from tests.fake_graphql import FakeGraphQL
    from tests.fakegithub import install_app

    data = FakeData()
    fake_github.graphql_handler = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.allow_anonymous = False
    async with app_ctx.sessionmaker() as session:
        session.add(Repository(full_name="b/left"))
        await session.commit()
    await install_app(app_ctx, fake_github, 55, "a", ["a/hidden"])
    await _post(app_ctx, data, "b/left", 1, up=1)
    for n in range(2, 12):
        await _post(app_ctx, data, "a/hidden", n, minimized="OFF_TOPIC" if n in (3, 9) else None)
    stats = await refresh_reception(app_ctx)
    assert stats.unread == 1 and stats.minimized == 2 and stats.paused == ["a/hidden"]



async def test_a_suspended_installations_comments_are_read_with_the_token(
        app_settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The app's comments in a repository whose installation is suspended were read through
    the installation (its token refused): unread every night, so the repository could never
    be paused however its people received them. They are read with GITHUB_TOKEN."""
    import dataclasses

    from bot.github.client import GitHubClient
    from bot.store.models import Installation
    from tests.fake_graphql import FakeGraphQL
    from tests.fakegithub import install_app, no_sleep

    data = FakeData()
    fake_github.graphql_handler = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    s = dataclasses.replace(app_settings, token=fake_github.user_token)
    ctx = AppContext.create(s)
    ctx.github = GitHubClient(s, sleep=no_sleep)
    try:
        await install_app(ctx, fake_github, 55, "a", ["a/hidden"])
        async with ctx.sessionmaker() as session:
            (await session.get(Installation, 55)).suspended = True
            await session.commit()
        fake_github.suspend_installation(55)
        for n in range(2, 12):
            await _post(ctx, data, "a/hidden", n, minimized="OFF_TOPIC" if n in (3, 9) else None)
        stats = await refresh_reception(ctx)
    finally:
        await ctx.close()
    assert stats.unread == 0 and stats.minimized == 2 and stats.paused == ["a/hidden"]


async def test_comments_the_app_hid_on_request_do_not_pause_the_repository(rctx: Any) -> None:
    """A `/rltracker not-a-failure` (a correction the comment's footer invites) or `stop` on
    a thread, which its author may give, makes the app minimise its own comment: that is not
    the repository's maintainers hiding it (which takes write access, and is what the pause
    and its resume are about). On main two such requests by two issue authors paused the
    app's comments in the whole repository. Comments people hid on GitHub still count."""
    ctx, data = rctx
    await _repos(ctx, "e/corrected", "f/hidden")
    for n in range(1, 6):
        await _post(ctx, data, "e/corrected", n, up=1, minimized="OUTDATED" if n in (2, 4) else None)
        await _post(ctx, data, "f/hidden", n, up=1, minimized="OFF_TOPIC" if n in (2, 4) else None)
    async with ctx.sessionmaker() as session:
        for n, by in ((2, "not-a-failure"), (4, "stop")):
            row = await session.scalar(select(Action).where(Action.repo == "e/corrected",
                                                            Action.number == n))
            row.details = {"minimized_by": by, "frozen_before": False}
            row.is_minimized = True
        await session.commit()
    stats = await refresh_reception(ctx)
    assert stats.paused == ["f/hidden"]
    async with ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository).where(Repository.full_name == "e/corrected"))
    assert not repo.comments_paused


async def test_comments_hidden_as_resolved_outdated_or_duplicate_do_not_pause(rctx: Any) -> None:
    """A maintainer who tidies a thread once the problem is fixed hides the app's comment as
    resolved or outdated (GitHub's Hide menu): the suggestion was taken up, or the thread
    moved on, not refused. On main two such hides among the last ten paused the app's comments
    in the whole repository, as spam or off-topic ones do. Hidden as spam, abuse or off-topic
    (the analyzers' rule, bot.analysis.HIDDEN_FROM_ANALYSIS), or for no reason GitHub gives,
    a comment still counts; GraphQL's spelling (lower case, or the enum's) either way."""
    ctx, data = rctx
    await _repos(ctx, "g/tidied", "h/spam", "i/unsaid")
    tidy = {1: "resolved", 2: "OUTDATED", 3: "duplicate", 4: "RESOLVED"}
    for n in range(1, 6):
        await _post(ctx, data, "g/tidied", n, up=1, minimized=tidy.get(n))
        await _post(ctx, data, "h/spam", n, up=1, minimized={2: "spam", 4: "OFF_TOPIC"}.get(n))
    await _post(ctx, data, "i/unsaid", 1, up=1, minimized="abuse")
    for n in (2, 3):  # hidden, GitHub giving no reason
        await _post(ctx, data, "i/unsaid", n, up=1)
        node = data.nodes[(await _action(ctx, "i/unsaid", n)).comment_node_id]
        node["isMinimized"], node["minimizedReason"] = True, None
    stats = await refresh_reception(ctx)
    assert sorted(stats.paused) == ["h/spam", "i/unsaid"]
    async with ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository).where(Repository.full_name == "g/tidied"))
    assert not repo.comments_paused and stats.minimized == 4 + 2 + 3


async def _action(ctx: AppContext, repo: str, n: int) -> Action:
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Action).where(Action.repo == repo, Action.number == n))


async def test_the_repos_page_counts_the_hidden_comments_the_pause_rule_counts(rctx: Any) -> None:
    """/repos/ said how many of the app's comments were hidden or deleted, counting every
    minimised one: comments tidied away as resolved, outdated or duplicate, and the app's own
    minimising on a `/rltracker stop` or `not-a-failure`, all read there as signs against the
    app, while the pause rule (`hidden_by_people`) counts none of them. A maintainer saw
    "4 hidden" on a repository the rule had rightly left commenting. The page states the
    rule's figure."""
    from bot.site.data import reception

    ctx, data = rctx
    await _repos(ctx, "g/tidied", "h/spam", "e/corrected")
    tidy = {1: "resolved", 2: "OUTDATED", 3: "duplicate"}
    for n in range(1, 6):
        await _post(ctx, data, "g/tidied", n, up=1, minimized=tidy.get(n))
        await _post(ctx, data, "h/spam", n, up=1, minimized={2: "spam"}.get(n), deleted=n == 5)
        await _post(ctx, data, "e/corrected", n, up=1)
    await refresh_reception(ctx)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Action).where(Action.repo == "e/corrected", Action.number == 2))
        row.details, row.is_minimized, row.minimized_reason = {"minimized_by": "stop"}, True, "outdated"
        from bot.store.models import Installation

        session.add(Installation(id=4242, account="someone"))
        await session.flush()
        for repo in await session.scalars(select(Repository)):
            repo.installation_id = 4242
        await session.commit()
        shown = {r["repo"]: r["hidden_or_deleted"] for r in await reception(session)}
    assert shown == {"e/corrected": 0, "g/tidied": 0, "h/spam": 2}, shown


async def test_comments_gone_with_their_deleted_issues_do_not_pause(rctx: Any) -> None:
    """A repository's admin deleted two issues the app had commented on (test issues,
    duplicates, spam: the `issues.deleted` deliveries buried them). Their comments went with
    them, and the nightly check counted each as a comment the maintainers deleted: the
    repository was paused for "2 of the app's last 10 comments were hidden or deleted". A
    comment deleted on its own still counts."""
    from bot.store.threads import bury, thread_grave

    ctx, data = rctx
    await _repos(ctx, "e/tidy", "f/refused")
    for n in range(1, 11):
        await _post(ctx, data, "e/tidy", n, up=1, deleted=n in (4, 7))
        await _post(ctx, data, "f/refused", n, up=1, deleted=n in (4, 7))
    async with ctx.sessionmaker() as session:
        for n in (4, 7):
            await bury(session, thread_grave("e/tidy", n, "issue"))
        await session.commit()
    stats = await refresh_reception(ctx)
    assert stats.paused == ["f/refused"]
    async with ctx.sessionmaker() as session:
        gone = list(await session.scalars(select(Action).where(
            Action.repo == "e/tidy", Action.number.in_((4, 7)))))
    assert all(a.comment_deleted for a in gone)  # (gone all the same: never read again)


@pytest.mark.parametrize("error", [
    {"type": "FORBIDDEN", "message": "Resource not accessible by integration"},
    {"message": "Something went wrong while executing your query. This may be the result of a timeout."},
], ids=["forbidden", "untyped"])
async def test_a_comment_github_would_not_read_is_not_taken_for_deleted(
        rctx: Any, fake_github: Any, error: dict[str, Any]) -> None:
    """GitHub's partial answer (status 200): two of a repository's comments null, each with an
    error other than NOT_FOUND (the app may not read them now; GitHub's own failure on that
    node). Only NOT_FOUND says a comment was deleted: these were marked deleted for good
    (never read again), counted as hidden by the repository's people, and the repository was
    paused ("2 of the app's last 10 comments were hidden or deleted"). Left unread, they are
    read the next night."""
    ctx, data = rctx
    await _repos(ctx, "e/guarded")
    ids = [await _post(ctx, data, "e/guarded", n, up=1) for n in range(1, 11)]
    refused = set(ids[3:5])
    answer = fake_github.graphql_handler

    def partly_refused(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        out = answer(query, variables)
        for k, node_id in enumerate(variables.get("ids") or []):
            if node_id in refused:
                out["data"]["nodes"][k] = None
                out.setdefault("errors", []).append({**error, "path": ["nodes", k]})
        return out

    fake_github.graphql_handler = partly_refused
    stats = await refresh_reception(ctx)
    assert stats.paused == [] and stats.deleted == 0 and stats.unread == 2
    async with ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository).where(Repository.full_name == "e/guarded"))
        actions = list(await session.scalars(select(Action).order_by(Action.number)))
    assert not repo.comments_paused
    assert [a.comment_deleted for a in actions] == [False] * 10
    assert [a.reactions_up for a in actions] == [1, 1, 1, 0, 0, 1, 1, 1, 1, 1]
    refused.clear()  # the next night GitHub reads them
    stats = await refresh_reception(ctx)
    assert stats.comments == 10 and stats.unread == 0 and stats.paused == []
    async with ctx.sessionmaker() as session:
        assert [a.reactions_up for a in await session.scalars(select(Action))] == [1] * 10


async def test_comments_of_issues_deleted_before_their_deliveries_are_handled_do_not_pause(
        rctx: Any, fake_github: Any) -> None:
    """As above, but the nightly check reads the comments gone before the issues' `deleted`
    deliveries are handled (no grave yet). On main each counted as a comment the maintainers
    deleted, and the repository was paused. GitHub answers the issue itself 410 Gone (its
    answer for a deleted issue; the message is written for the test): gone with it, not
    counted. Issues GitHub still serves (their comment deleted on its own) count."""
    ctx, data = rctx
    await _repos(ctx, "e/tidy", "f/refused")
    for n in range(1, 11):
        await _post(ctx, data, "e/tidy", n, up=1, deleted=n in (4, 7))
        await _post(ctx, data, "f/refused", n, up=1, deleted=n in (4, 7))
        fake_github.add_issue("f/refused", n)

    @fake_github.route("GET", r"/repos/e/tidy/issues/(4|7)$")
    def deleted_issue(fake: Any, request: Any, match: Any, body: Any) -> Any:
        return 410, {"message": "This issue was deleted (test)"}

    stats = await refresh_reception(ctx)
    assert stats.paused == ["f/refused"]


async def test_a_comment_counted_before_its_issues_deletion_was_handled_stops_counting(
        rctx: Any, fake_github: Any) -> None:
    """The nightly check marked a comment deleted and GitHub would not say whether its issue
    was (403): counted, one of two. The issue's `deleted` delivery is handled the next day
    (its grave); the next night another comment is deleted on its own. On main the first
    still counted (its thread was looked up only the night it was marked) and the repository
    was paused for two; whichever comes first, a comment whose thread is gone is not counted."""
    from bot.store.threads import bury, thread_grave

    ctx, data = rctx
    await _repos(ctx, "g/late")
    nodes = {}
    for n in range(1, 11):
        nodes[n] = await _post(ctx, data, "g/late", n, up=1, deleted=n == 4)
        fake_github.add_issue("g/late", n)

    @fake_github.route("GET", r"/repos/g/late/issues/4$")
    def not_told(fake: Any, request: Any, match: Any, body: Any) -> Any:
        return 403, {"message": "Resource not accessible by integration"}

    stats = await refresh_reception(ctx)
    assert stats.deleted == 1 and stats.paused == []
    async with ctx.sessionmaker() as session:  # the issue's `deleted` delivery, handled
        await bury(session, thread_grave("g/late", 4, "issue"))
        await session.commit()
    data.nodes.pop(nodes[7])  # a comment deleted on its own (its issue still there)
    stats = await refresh_reception(ctx)
    assert stats.deleted == 1 and stats.paused == [], stats


async def test_github_is_asked_about_deleted_issues_without_holding_the_actions_rows(
        rctx: Any, fake_github: Any) -> None:
    """The nightly check asks GitHub about the issue of each comment read deleted (left63),
    in the transaction that has written the comments' reception (locks63 commits it before
    the pause check). On main the rows were written (flushed) before those requests: a
    webhook batch writing one of those actions waited on PostgreSQL for the length of the
    GitHub calls. Here, while GitHub answers, another connection updates the deleted
    comment's action (PostgreSQL: watched in pg_stat_activity, no timing); it must not wait."""
    from tests.test_ingest_locks import until

    ctx, data = rctx
    await _repos(ctx, "h/busy")
    for n in range(1, 11):
        await _post(ctx, data, "h/busy", n, up=1, deleted=n == 4)
    async with ctx.sessionmaker() as session:
        held = await session.scalar(select(Action.id).where(Action.number == 4))
    seen: dict[str, Any] = {}
    postgres = ctx.engine.dialect.name == "postgresql"

    @fake_github.route("GET", r"/repos/h/busy/issues/4$")
    async def deleted_issue(fake: Any, request: Any, match: Any, body: Any) -> Any:
        from sqlalchemy import update

        if postgres:
            writer, watcher = seen["connections"]

            async def write() -> None:
                await writer.execute(update(Action).where(Action.id == held)
                                     .values(reactions_up=Action.reactions_up))
                await writer.commit()
            seen["writing"] = writing = asyncio.create_task(write())
            await until(watcher, 1, writing)
            seen["waited"] = not writing.done()
        return 410, {"message": "This issue was deleted (test)"}

    if postgres:
        async with ctx.engine.connect() as writer, ctx.engine.connect() as watcher:
            seen["connections"] = (writer, watcher)
            stats = await refresh_reception(ctx)
            await seen["writing"]  # on main: once the check committed
        assert seen["waited"] is False, "a write waited on the reception's row locks"
    else:
        stats = await refresh_reception(ctx)
    assert stats.deleted == 1 and stats.paused == []
    async with ctx.sessionmaker() as session:
        action = await session.get(Action, held)
        assert action is not None and action.comment_deleted
        assert (action.details or {}).get("thread_deleted")


async def test_comments_unserved_while_issues_are_turned_off_are_read_again_after(
        rctx: Any, fake_github: Any) -> None:
    """The repository's issues are turned off: GitHub serves none of the app's comments there
    and answers their issues 410 "Issues are disabled for this repo". That 410 was read as
    the issues deleted: the comments were marked deleted for good (never read again once the
    issues were turned back on, their reactions no longer followed). Now they are unread
    that night and read again the next (limits65); nothing paused either way."""
    ctx, data = rctx
    await _repos(ctx, "j/off")
    nodes = [await _post(ctx, data, "j/off", n, up=1) for n in range(1, 11)]
    for n in range(1, 11):
        fake_github.add_issue("j/off", n)
    unserved = {node: data.nodes.pop(node) for node in nodes[3:5]}
    fake_github.issues_disabled.add("j/off")
    stats = await refresh_reception(ctx)
    assert stats.paused == [] and stats.deleted == 0 and stats.unread == 2, stats
    fake_github.issues_disabled.clear()  # turned back on: GitHub serves them again
    data.nodes.update(unserved)
    stats = await refresh_reception(ctx)
    assert stats.comments == 10 and stats.deleted == 0 and stats.unread == 0, stats
    async with ctx.sessionmaker() as session:
        assert not any(a.comment_deleted for a in await session.scalars(select(Action)))
