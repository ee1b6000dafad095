"""Pull-request reviews as the webhook handlers store them (bot.webhooks.events), on SQLite and
PostgreSQL, with GitHub played by the suite's fake server.

A review carries no `updated_at`: the order of two deliveries about one review cannot be told
from their payloads. When a delivery does not follow from what is stored (an `edited` whose
`changes.body.from` is not the stored body, a `submitted` or `dismissed` whose body is not the
stored one), the handler asks GitHub for the review as it is now and stores that."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.store.models import Analysis, Comment, Deletion
from bot.store.threads import get_thread, load_thread_record
from bot.webhooks import events
from bot.webhooks.worker import transient
from tests.fakegithub import clocked_github

HELLO = "Codertocat/Hello-World"
REVIEW_ID = 237895671
REVIEW_PATH = rf"/repos/Codertocat/Hello-World/pulls/2/reviews/{REVIEW_ID}"
PLAIN = "Looks good to me, thanks!"
CONCERN = "Please add a unit test for the new clip ratio, there are no tests covering it."


def _shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


def submitted(shared_dir: Path, body: str | None = None) -> dict[str, Any]:
    payload = _shared(shared_dir, "pull_request_review/submitted.json")
    # A reviewer other than the pull request's author: their concerns are the analysis's.
    payload["review"]["user"] = {"login": "reviewer1", "id": 5501, "type": "User"}
    payload["review"]["author_association"] = "MEMBER"
    if body is not None:
        payload["review"]["body"] = body
    return payload


def edited(shared_dir: Path, body: str, was: str) -> dict[str, Any]:
    """`pull_request_review.edited` as GitHub sends it: the new body and `changes.body.from`."""
    payload = submitted(shared_dir, body)
    payload["action"] = "edited"
    payload["changes"] = {"body": {"from": was}}
    return payload


class Reviews:
    """The fake's answer to GET .../pulls/{n}/reviews/{id}: the review as GitHub has it now
    (REST shape: upper-case state), or 404 once `gone`. `others`: more reviews by id;
    `on_get`: an async callable run before answering (what happens meanwhile elsewhere)."""

    def __init__(self, fake: Any, shared_dir: Path) -> None:
        self.review = copy.deepcopy(submitted(shared_dir)["review"])
        self.review["state"] = "COMMENTED"
        self.gone = False
        self.others: dict[int, dict[str, Any]] = {}
        self.on_get: Any = None
        self.pull_served = True
        fake.add_installation(1, "Codertocat", repos=[HELLO])

        @fake.route("GET", r"/repos/[^/]+/[^/]+/pulls/\d+/reviews/(?P<id>\d+)")
        async def _get(fake: Any, request: Any, match: Any, body: Any) -> Any:
            if self.on_get is not None:
                await self.on_get()
            review_id = int(match["id"])
            if review_id in self.others:
                return self.others[review_id]
            if self.gone or review_id != self.review["id"]:
                return 404, {"message": "Not Found"}
            return self.review

        @fake.route("GET", r"/repos/[^/]+/[^/]+/pulls/(?P<n>\d+)")
        def _pull(fake: Any, request: Any, match: Any, body: Any) -> Any:
            if not self.pull_served:
                return 404, {"message": "Not Found"}
            return {"number": int(match["n"]), "state": "open"}

    def now(self, body: str) -> None:
        self.review["body"] = body


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await events.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def batch(ctx: Any, *deliveries: tuple[str, dict[str, Any]]) -> list[BaseException | None]:
    return await events.handle_batch(
        [sansio.Event(p, event=e, delivery_id=str(uuid.uuid4())) for e, p in deliveries], ctx)


async def reviews(ctx: Any) -> list[str]:
    async with ctx.sessionmaker() as session:
        record = await load_thread_record(session, HELLO, 2)
    assert record is not None
    return [c["body"] for c in record["comments"] if c["kind"] == "review"]


async def concerns(ctx: Any) -> list[str]:
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, HELLO, 2)
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    return list(row.result["review"]["concerns"])


def review_gets(fake: Any) -> int:
    return len(fake.requests("GET", r"/pulls/\d+/reviews/\d+$"))


# ---- 1. two edits applied out of order ---------------------------------------------------
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_review_edits_out_of_order_store_what_github_has_now(
        app_ctx: Any, fake_github: Any, shared_dir: Path, batched: bool):
    """The reviewer edited the review twice ("" -> PLAIN -> CONCERN); the second edit's
    delivery was handled first. Before: the first edit, handled last, put PLAIN back and the
    thread's analysis lost the concern. Now the edit whose `changes.body.from` is not the
    stored body makes the handler read the review from GitHub."""
    gh = Reviews(fake_github, shared_dir)
    gh.now(CONCERN)
    first, second = edited(shared_dir, PLAIN, ""), edited(shared_dir, CONCERN, PLAIN)
    if batched:
        assert await batch(app_ctx, ("pull_request_review", submitted(shared_dir)),
                           ("pull_request_review", second),
                           ("pull_request_review", first)) == [None] * 3
    else:
        await dispatch(app_ctx, "pull_request_review", submitted(shared_dir))
        await dispatch(app_ctx, "pull_request_review", second)
        await dispatch(app_ctx, "pull_request_review", first)
    assert await reviews(app_ctx) == [CONCERN]
    assert await concerns(app_ctx) == ["tests_or_docs"]  # the re-analysis read the current body
    assert review_gets(fake_github) >= 1


async def test_review_deliveries_in_order_do_not_ask_github(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """Deliveries that follow from the stored review (the usual case) cost no request."""
    Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir))
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, PLAIN, ""))
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, CONCERN, PLAIN))
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, CONCERN))  # same body
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, CONCERN, PLAIN))  # again
    assert await reviews(app_ctx) == [CONCERN]
    assert review_gets(fake_github) == 0


async def test_a_late_submitted_after_a_lost_edit_stores_the_current_body(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """A `submitted` redelivered after an `edited`: before, the stored (edited) body was kept
    even when GitHub's is newer still (the last edit's delivery lost); now the review is
    read from GitHub."""
    gh = Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir))
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, PLAIN, ""))
    gh.now(CONCERN)  # edited again on GitHub; that delivery never came
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir))
    assert await reviews(app_ctx) == [CONCERN]
    assert await concerns(app_ctx) == ["tests_or_docs"]


# ---- 1b. the review is gone; GitHub fails ----------------------------------------------------
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_review_github_no_longer_has_is_recorded_as_deleted(
        app_ctx: Any, fake_github: Any, shared_dir: Path, batched: bool):
    gh = Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    gh.gone = True
    late = edited(shared_dir, CONCERN, "something else")
    if batched:
        assert await batch(app_ctx, ("pull_request_review", late),
                           ("pull_request", _shared(shared_dir, "pull_request/labeled.json"))
                           ) == [None, None]
    else:
        await dispatch(app_ctx, "pull_request_review", late)
    assert await reviews(app_ctx) == []
    async with app_ctx.sessionmaker() as session:
        keys = set(await session.scalars(select(Deletion.key)))
    assert f"comment:review:{REVIEW_ID}" in keys
    # A redelivery of its first version stores nothing of it any more.
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    assert await reviews(app_ctx) == []


@pytest.mark.parametrize("failure", ["5xx", "rate_limit"])
async def test_github_failing_leaves_the_delivery_to_be_retried(
        app_ctx: Any, fake_github: Any, shared_dir: Path, failure: str):
    """GitHub answering 5xx or a rate limit: the handler raises an error the worker retries
    (worker.transient), and stores nothing of the delivery; alone in a batch, the other
    deliveries of the batch are applied."""
    gh = Reviews(fake_github, shared_dir)
    gh.now(CONCERN)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))

    def fail() -> None:
        if failure == "5xx":
            fake_github.fail_next("GET", REVIEW_PATH, 502, times=20)
        else:
            fake_github.rate_limited("GET", REVIEW_PATH, reset_in=600, times=20)

    fail()
    with pytest.raises(Exception) as raised:
        await dispatch(app_ctx, "pull_request_review", edited(shared_dir, "stale", "other"))
    assert transient(raised.value), raised.value
    assert await reviews(app_ctx) == [PLAIN]
    fail()
    rc = _shared(shared_dir, "pull_request_review_comment/created.json")
    outcomes = await batch(app_ctx, ("pull_request_review", edited(shared_dir, "stale", "other")),
                           ("pull_request_review_comment", rc))
    assert outcomes[1] is None and outcomes[0] is not None and transient(outcomes[0])
    async with app_ctx.sessionmaker() as session:
        kinds = sorted(c.kind for c in await session.scalars(select(Comment)))
    assert kinds == ["review", "review_comment"] and await reviews(app_ctx) == [PLAIN]
    # The retry, once GitHub answers (a rate limit: once its reset has come; until then the
    # client holds the installation's requests without asking GitHub, limits65), stores the
    # current body.
    fake_github._failures.clear()
    async with clocked_github(app_ctx) as clock:
        if failure == "rate_limit":
            fail()
            with pytest.raises(Exception) as held:
                await dispatch(app_ctx, "pull_request_review", edited(shared_dir, "stale", "other"))
            assert transient(held.value), held.value
            fake_github._failures.clear()
            asked = len(fake_github.requests("GET", REVIEW_PATH))
            with pytest.raises(Exception) as held:  # GitHub's reset has not come: not asked
                await dispatch(app_ctx, "pull_request_review", edited(shared_dir, "stale", "other"))
            assert transient(held.value), held.value
            assert len(fake_github.requests("GET", REVIEW_PATH)) == asked
            clock.advance(602)
        await dispatch(app_ctx, "pull_request_review", edited(shared_dir, "stale", "other"))
    assert await reviews(app_ctx) == [CONCERN]


async def test_a_404_that_may_mean_no_access_deletes_nothing(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """GitHub answers 404 for the pull request too (the repository removed from the
    installation, made private to it): nothing says the review is gone; the payload rule."""
    gh = Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    gh.gone, gh.pull_served = True, False
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, CONCERN, "other"))
    assert await reviews(app_ctx) == [CONCERN]
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Deletion.key))) == []


# ---- 1c. nothing to ask GitHub with ----------------------------------------------------------
async def test_without_github_the_payload_rule_stands(ctx: Any, shared_dir: Path):
    """No client (dry runs from examples/, tests): an `edited` is applied, a late `submitted`
    keeps the stored body, as before."""
    await dispatch(ctx, "pull_request_review", submitted(shared_dir))
    await dispatch(ctx, "pull_request_review", edited(shared_dir, CONCERN, PLAIN))
    assert await reviews(ctx) == [CONCERN]
    await dispatch(ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    assert await reviews(ctx) == [CONCERN]


async def test_a_delivery_without_installation_or_token_falls_back(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """No installation in the payload, or an installation GitHub no longer knows (its token
    refused): the payload rule, not a deletion, and no failed delivery."""
    Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    late = edited(shared_dir, CONCERN, "other")
    late.pop("installation")
    await dispatch(app_ctx, "pull_request_review", late)
    assert await reviews(app_ctx) == [CONCERN]
    assert review_gets(fake_github) == 0
    fake_github.installations.clear()  # uninstalled meanwhile: the token request is refused
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    assert await reviews(app_ctx) == [CONCERN]


# ---- 2. the nightly sync and a review edited while it held the pull request ----------------
async def test_a_review_edited_during_the_sync_is_not_undone(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """A review edited on GitHub (its delivery handled) while the sync still held the pull
    request it had fetched earlier (its other reviews came in a later request): the sync's
    older snapshot of the review overwrote the edit, as reviews carry no `updated_at` to
    compare. The sync keeps a stored review when the stored thread is newer than its
    snapshot, as it keeps the newer thread (and comments with `updated_at`)."""
    from bot.github.sync import sync
    from tests.fake_graphql import ActingOnCall, FakeData, FakeGraphQL
    from tests.fakegithub import no_sleep, token_context

    repo = "huggingface/trl"
    data = FakeData()
    pr = data.add_thread(repo, "pull_request", n_reviews=25, closed=False)  # more than nested
    responder = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    review = pr["_reviews"][0]
    alice = {"login": "alice", "type": "User"}

    async with token_context(settings, fake_github) as ctx:
        async def edit_the_first_review() -> None:
            was = review["body"] or ""
            review["body"] = CONCERN
            data.touch(repo, "pull_request", pr["number"], new_comments=0)
            await dispatch(ctx, "pull_request_review", {
                "action": "edited", "changes": {"body": {"from": was}},
                "repository": {"id": 9, "full_name": repo}, "sender": alice,
                "pull_request": {"id": pr["databaseId"], "number": pr["number"],
                                 "title": pr["title"], "body": pr["body"], "state": "open",
                                 "user": alice, "created_at": pr["createdAt"],
                                 "updated_at": pr["updatedAt"]},
                "review": {"id": review["databaseId"], "node_id": review["id"],
                           "body": CONCERN, "user": alice, "state": "commented",
                           "author_association": "MEMBER",
                           "submitted_at": review["submittedAt"]}})

        # the 2nd request: the rest of the reviews; meanwhile the first one is edited
        handler = ActingOnCall(responder, 2, edit_the_first_review)
        fake_github.graphql_handler = handler
        await sync(ctx, [repo], sleep=no_sleep)
        assert handler.calls >= 2
        async with ctx.sessionmaker() as session:
            body = await session.scalar(select(Comment.body).where(
                Comment.kind == "review", Comment.github_id == review["databaseId"]))
        assert body == CONCERN


async def test_a_review_read_from_github_is_stored_whatever_its_characters(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """The review GitHub answers with is stored as the worker stores payloads: characters no
    database stores (NUL, lone surrogates) as U+FFFD, a 65,536-character body whole."""
    gh = Reviews(fake_github, shared_dir)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir, PLAIN))
    gh.now("a\u0000b " + "x" * 65_530)
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, "stale", "other"))
    assert await reviews(app_ctx) == ["a\ufffdb " + "x" * 65_530]


async def test_a_review_written_by_another_worker_meanwhile_is_not_overwritten(
        app_ctx: Any, fake_github: Any, shared_dir: Path):
    """Two workers: one decides that an `edited` follows from the stored review ("" -> PLAIN)
    while another stores what GitHub has now (CONCERN, after a later edit) and commits before
    the first one writes. Before: the first one's transaction wrote PLAIN over CONCERN. Now
    the transaction checks that the stored review is still the one the decision was made on
    (on PostgreSQL under a row lock); when not, the delivery is tried again, decides anew
    and reads GitHub. Played in one batch: the GET of another review of the batch is where
    the other worker commits."""
    gh = Reviews(fake_github, shared_dir)
    gh.now(CONCERN)
    await dispatch(app_ctx, "pull_request_review", submitted(shared_dir))
    other = submitted(shared_dir, "first words")
    other["review"]["id"] = 4242
    await dispatch(app_ctx, "pull_request_review", other)
    gh.others[4242] = {**other["review"], "body": "last words", "state": "COMMENTED"}
    late = copy.deepcopy(other)
    late["action"], late["review"]["body"] = "edited", "middle words"
    late["changes"] = {"body": {"from": "words before"}}  # out of order: GitHub is read

    async def another_worker_commits() -> None:
        gh.on_get = None
        async with app_ctx.sessionmaker() as session:
            row = await session.scalar(select(Comment).where(
                Comment.kind == "review", Comment.github_id == REVIEW_ID))
            row.body = CONCERN
            await session.commit()

    gh.on_get = another_worker_commits
    try:
        await batch(app_ctx, ("pull_request_review", late),
                    ("pull_request_review", edited(shared_dir, PLAIN, "")))
    except Exception:  # noqa: BLE001 - the batch's shared part failed: the worker, each alone
        await dispatch(app_ctx, "pull_request_review", late)
        await dispatch(app_ctx, "pull_request_review", edited(shared_dir, PLAIN, ""))
    assert sorted(await reviews(app_ctx)) == sorted([CONCERN, "last words"])


# ---- 3. review comments: two edits in one second ----------------------------------------------
def review_comment_edited(shared_dir: Path, body: str, was: str, at: str) -> dict[str, Any]:
    payload = _shared(shared_dir, "pull_request_review_comment/edited.json")
    payload["comment"].update(body=body, updated_at=at)
    payload["changes"] = {"body": {"from": was}}
    return payload


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_review_comment_edits_in_one_second_out_of_order_keep_the_last(
        ctx: Any, shared_dir: Path, batched: bool):
    """GitHub's `updated_at` counts seconds: two edits of a review comment within one second
    carry the same time, and the first, handled last, was not "older" and put its text back.
    With equal times an edit applies only when its `changes.body.from` is the stored body; a
    late `created` of the same second changes nothing."""
    created = _shared(shared_dir, "pull_request_review_comment/created.json")
    first = review_comment_edited(shared_dir, PLAIN, created["comment"]["body"],
                                  "2019-05-15T15:30:00Z")
    second = review_comment_edited(shared_dir, CONCERN, PLAIN, "2019-05-15T15:30:00Z")
    deliveries = [("pull_request_review_comment", p) for p in (created, second, first)]
    if batched:
        assert await batch(ctx, *deliveries) == [None] * 3
    else:
        for event, payload in deliveries:
            await dispatch(ctx, event, payload)

    async def bodies() -> list[str]:
        async with ctx.sessionmaker() as session:
            record = await load_thread_record(session, HELLO, 2)
        return [c["body"] for c in record["comments"] if c["kind"] == "review_comment"]

    assert await bodies() == [CONCERN]
    # In order, both apply; a `created` of the same second as an edit changes nothing.
    third = review_comment_edited(shared_dir, PLAIN, CONCERN, "2019-05-15T15:30:00Z")
    await dispatch(ctx, "pull_request_review_comment", third)
    assert await bodies() == [PLAIN]
    same = copy.deepcopy(created)
    same["comment"]["updated_at"] = "2019-05-15T15:30:00Z"
    await dispatch(ctx, "pull_request_review_comment", same)
    assert await bodies() == [PLAIN]


# ---- 4. a maintainer's review is a reply ---------------------------------------------------
async def test_a_maintainers_review_marks_the_pull_request_replied(ctx: Any, shared_dir: Path):
    """Reviews exist only on pull requests, where the app posts no failure comment (quiet
    rule `not_issue`), so none has to be frozen by them; what they change is the thread's
    reply state, which each review delivery's re-analysis gives: a bare approval by a
    maintainer turns `open_no_reply` into `open_replied` (docs/comments.md)."""
    opened = _shared(shared_dir, "pull_request/opened.json")
    await dispatch(ctx, "pull_request", opened)

    async def state() -> str | None:
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, HELLO, 2)
            row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        return row.review_state

    assert await state() == "open_no_reply"
    approval = submitted(shared_dir, "")
    approval["review"]["state"] = "approved"
    await dispatch(ctx, "pull_request_review", approval)
    assert await state() == "open_replied"
