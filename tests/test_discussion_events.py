"""Discussion webhooks (GitHub's recorded payloads, ../shared/fixtures/webhooks) stored on
SQLite and PostgreSQL: what each action changes, alone and in a worker's batch."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from gidgethub import sansio

from bot.webhooks import events
from tests.test_events import dispatch, record

HELLO = "Codertocat/Hello-World"


def shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


async def test_a_label_put_on_a_discussion_is_stored(ctx: Any, shared_dir: Path) -> None:
    """`discussion.labeled` / `unlabeled` name the label in `label`; their `discussion` carries
    no `labels` list (GitHub's payloads). The label was never stored: the thread page, the
    API and the review state (a "stale" label reads "lapsed") saw none until a nightly sync."""
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/created.json"))
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/labeled.json"))
    assert (await record(ctx, HELLO, 4))["labels"] == ["bug"]
    again = shared(shared_dir, "discussion/labeled.json")  # a redelivery adds nothing
    await dispatch(ctx, "discussion", again)
    other = shared(shared_dir, "discussion/labeled.json")
    other["label"] = {**other["label"], "name": "stale", "id": 1}
    await dispatch(ctx, "discussion", other)
    assert (await record(ctx, HELLO, 4))["labels"] == ["bug", "stale"]
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/unlabeled.json"))
    assert (await record(ctx, HELLO, 4))["labels"] == ["stale"]
    # A later event without a label list leaves the labels alone.
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/pinned.json"))
    assert (await record(ctx, HELLO, 4))["labels"] == ["stale"]


async def test_a_label_in_a_batch_and_on_a_discussion_not_stored_yet(
        ctx: Any, shared_dir: Path) -> None:
    second = shared(shared_dir, "discussion/labeled.json")
    second["label"] = {**second["label"], "name": "help wanted", "id": 2}
    outcomes = await events.handle_batch([
        sansio.Event(payload, event="discussion", delivery_id=str(uuid.uuid4()))
        for payload in (shared(shared_dir, "discussion/labeled.json"), second,
                        shared(shared_dir, "discussion/created.json"))], ctx)
    assert outcomes == [None, None, None]
    assert (await record(ctx, HELLO, 4))["labels"] == ["bug", "help wanted"]
    # A later payload that does carry the list is taken as it is.
    labeled = shared(shared_dir, "discussion/labeled.json")
    labeled["discussion"]["labels"] = [{"name": "question"}]
    labeled["discussion"]["updated_at"] = "2021-03-30T20:30:00Z"
    await dispatch(ctx, "discussion", labeled)
    assert (await record(ctx, HELLO, 4))["labels"] == ["question"]


def _closed_or_reopened(shared_dir: Path, action: str, at: str) -> dict[str, Any]:
    """GitHub's discussion payload (it carries no `closed_at`) closed or reopened at `at`."""
    payload = shared(shared_dir, "discussion/unlocked.json")
    payload["action"] = action
    payload["discussion"].update(state="closed" if action == "closed" else "open",
                                 state_reason="resolved" if action == "closed" else "reopened",
                                 updated_at=at)
    assert "closed_at" not in payload["discussion"]
    return payload


async def test_a_discussion_closed_then_reopened_has_its_closing_time_right(
        ctx: Any, shared_dir: Path) -> None:
    """A discussion payload has no `closed_at`: closed by webhook, the discussion had no
    closing time (the thread page, exports and the study's time-to-close left it out);
    reopened, it kept the closing time a sync had stored ("open ... closed 2021-03-31")."""
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/created.json"))
    await dispatch(ctx, "discussion", _closed_or_reopened(shared_dir, "closed", "2021-03-31T08:00:00Z"))
    rec = await record(ctx, HELLO, 4)
    assert (rec["state"], rec["state_reason"], rec["closed_by"]) == ("closed", "resolved", "Codertocat")
    assert rec["closed_at"] == "2021-03-31T08:00:00Z"
    # A late delivery of the same second, or an older one, does not move it.
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/pinned.json"))
    assert (await record(ctx, HELLO, 4))["closed_at"] == "2021-03-31T08:00:00Z"
    await dispatch(ctx, "discussion", _closed_or_reopened(shared_dir, "reopened", "2021-03-31T09:00:00Z"))
    rec = await record(ctx, HELLO, 4)
    assert (rec["state"], rec["state_reason"], rec["closed_by"], rec["closed_at"]) == (
        "open", "reopened", None, None)
