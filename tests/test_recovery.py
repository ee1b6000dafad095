"""Missed-delivery recovery against the fake GitHub server's app hook deliveries."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.github.recovery import recover_deliveries
from bot.speaking.preview import wait_background
from bot.store.models import Delivery, Repository
from bot.store.types import format_datetime, utcnow
from bot.webhooks.routers import router


def _ago(**kwargs: float) -> str:
    return format_datetime(utcnow() - timedelta(**kwargs)) or ""


async def test_redelivers_failed_deliveries_missing_from_the_inbox(app_ctx: Any, fake_github: Any) -> None:
    fake = fake_github
    old = fake.add_delivery("issues", "opened", status_code=502, delivered_at=_ago(days=4), guid="old")
    lost = fake.add_delivery("issues", "opened", status_code=502, delivered_at=_ago(hours=5), guid="lost")
    fake.add_delivery("issue_comment", "created", status_code=500, delivered_at=_ago(hours=4), guid="stored")
    fake.add_delivery("issues", "closed", status_code=504, delivered_at=_ago(hours=3), guid="healed")
    fake.add_delivery("issues", "closed", status_code=202, delivered_at=_ago(hours=2), guid="healed", redelivery=True)
    fake.add_delivery("issues", "edited", status_code=500, delivered_at=_ago(hours=3), guid="hopeless")
    for i in range(3):
        fake.add_delivery("issues", "edited", status_code=500, delivered_at=_ago(hours=2, minutes=i), guid="hopeless", redelivery=True)
    # Enough successful ones that the listing spans several pages.
    for i in range(230):
        fake.add_delivery("issues", "labeled", status_code=202, delivered_at=_ago(minutes=100 - i * 0.1))
    async with app_ctx.sessionmaker() as session:
        session.add(Delivery(delivery_id="stored", event="issue_comment", payload="{}"))
        await session.commit()

    stats = await recover_deliveries(app_ctx)

    assert fake.redeliveries == [lost["id"]]
    assert old["id"] not in fake.redeliveries
    assert stats.in_inbox == 1 and stats.gave_up == 1 and stats.errors == 0
    listing = fake.requests("GET", r"^/app/hook/deliveries$")
    assert len(listing) >= 3 and all(c.auth == "jwt" for c in listing)
    assert all(c.auth == "jwt" for c in fake.requests("POST", r"/attempts$"))


async def test_survives_errors_and_needs_app_credentials(app_ctx: Any, ctx: Any, fake_github: Any) -> None:
    fake_github.add_delivery("issues", "opened", status_code=502, delivered_at=_ago(hours=1), guid="a")
    fake_github.fail_next("GET", r"^/app/hook/deliveries$", 502)
    fake_github.fail_next("POST", r"/attempts$", 422, times=10)
    stats = await recover_deliveries(app_ctx)
    assert stats.errors == 1 and not fake_github.redeliveries
    # Without app credentials (the plain ctx) there is nothing to list.
    assert (await recover_deliveries(ctx)).listed == 0


async def test_missed_deliveries_are_redelivered_oldest_first(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """While the app was down, a repository was removed from the installation and added back.
    Recovery asked GitHub for the redeliveries newest first (its listing's order), so they
    arrived, and were handled, in reverse: the repository ended removed and the app silent
    there. GitHub's removed payload; the added one is the same with the lists swapped."""
    removed = json.loads((shared_dir / "fixtures/webhooks/installation_repositories/removed.json")
                         .read_text())
    added = {**removed, "action": "added", "repositories_added": removed["repositories_removed"],
             "repositories_removed": []}
    payloads = {}
    for guid, payload, hours in (("removed", removed, 3), ("added", added, 2)):
        delivery = fake_github.add_delivery("installation_repositories", payload["action"],
                                            status_code=502, delivered_at=_ago(hours=hours), guid=guid)
        payloads[delivery["id"]] = payload
    app_ctx.settings = dataclasses.replace(app_ctx.settings, dry_run=True)  # no preview posts
    # what GitHub holds after the two: the repository installed again
    fake_github.add_installation(removed["installation"]["id"], "octocat", ["octocat/Hello-World"])

    await recover_deliveries(app_ctx)

    for delivery_id in fake_github.redeliveries:  # GitHub sends them as asked
        await router.dispatch(sansio.Event(payloads[delivery_id], event="installation_repositories",
                                           delivery_id=str(delivery_id)), app_ctx)
    await wait_background(app_ctx, grace=5)
    async with app_ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository))
    assert repo is not None and repo.full_name == "octocat/Hello-World"
    assert repo.installation_id == removed["installation"]["id"]
    assert repo.removed_installation_id is None


async def test_a_night_whose_redeliveries_failed_is_partial(app_ctx: Any, fake_github: Any) -> None:
    """GitHub refused the redelivery of a delivery the inbox never got (its POST answered
    422): the night recorded `ok`, its run's error said nothing, and nothing but the step's
    counts told that a delivery was still missing (GitHub keeps them 3 days). The night is
    `partial` and says how many."""
    from bot.scheduler import nightly_job, step_recovery

    fake_github.add_delivery("issues", "opened", status_code=502, delivered_at=_ago(hours=1), guid="a")
    fake_github.fail_next("POST", r"/attempts$", 422, times=10)
    result = await nightly_job(app_ctx, steps=[("recovery", step_recovery)])
    assert result["counts"]["recovery"]["errors"] == 1
    assert result["outcome"] == "partial"
    from bot.store.models import JobRun

    async with app_ctx.sessionmaker() as session:
        row = await session.get(JobRun, result["run_id"])
    assert row is not None and "redelivery" in (row.error or "")
