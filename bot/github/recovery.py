"""Missed-delivery recovery: GitHub does not redeliver a failed webhook by itself.

The job lists the app's recent deliveries (GET /app/hook/deliveries, newest first, paged) and
asks for a redelivery (POST /app/hook/deliveries/{id}/attempts) of every delivery that
- failed on every attempt GitHub made (no attempt with a 2xx status for that guid),
- is not in the inbox (Delivery.delivery_id is GitHub's guid), and
- has not been redelivered MAX_REDELIVERIES times already (a payload that keeps failing
  should not be resent every night forever).
Only deliveries of the last WINDOW are considered: GitHub redelivers only recent ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.store.models import Delivery
from bot.store.types import parse_datetime, utcnow

log = logging.getLogger(__name__)

WINDOW = timedelta(days=3)
MAX_REDELIVERIES = 3
MAX_LISTED = 5000  # a bound on paging, whatever the server answers


@dataclass
class RecoveryStats:
    listed: int = 0
    failed_guids: int = 0
    in_inbox: int = 0
    gave_up: int = 0
    redelivered: list[int] = field(default_factory=list)
    errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"listed": self.listed, "failed_guids": self.failed_guids,
                "in_inbox": self.in_inbox, "gave_up": self.gave_up,
                "redelivered": len(self.redelivered), "errors": self.errors}


def _ok(delivery: dict[str, Any]) -> bool:
    code = delivery.get("status_code") or 0
    return 200 <= int(code) < 300


async def recover_deliveries(ctx: Any, *, window: timedelta = WINDOW) -> RecoveryStats:
    """Requests redelivery of recent failed deliveries the inbox does not hold."""
    stats = RecoveryStats()
    if ctx.github is None or not ctx.settings.has_app_credentials:
        log.info("recovery: no app credentials, nothing to do")
        return stats
    import gidgethub

    app = await ctx.github.app_api()
    since = utcnow() - window
    attempts: dict[str, list[dict[str, Any]]] = {}
    async for delivery in app.getiter("/app/hook/deliveries?per_page=100"):
        stats.listed += 1
        delivered = parse_datetime(delivery.get("delivered_at"))
        if delivered is not None and delivered < since:
            break  # newest first: everything after this is older
        attempts.setdefault(str(delivery.get("guid")), []).append(delivery)
        if stats.listed >= MAX_LISTED:
            break
    failed = {guid: tries for guid, tries in attempts.items() if not any(_ok(d) for d in tries)}
    stats.failed_guids = len(failed)
    if not failed:
        return stats
    async with ctx.sessionmaker() as session:
        stored: set[str] = set()
        guids = sorted(failed)
        for i in range(0, len(guids), 500):
            stored.update(await session.scalars(
                select(Delivery.delivery_id).where(Delivery.delivery_id.in_(guids[i:i + 500]))))
    # Oldest first: GitHub lists newest first, and deliveries asked for in that order arrived
    # and were handled in reverse (a repository removed then added again while the app was
    # down ended removed). Installation events carry no time to order them by afterwards.
    def first_sent(guid: str) -> str:
        return min(str(d.get("delivered_at") or "") for d in failed[guid])

    for guid in sorted(failed, key=first_sent):
        tries = failed[guid]
        if guid in stored:
            stats.in_inbox += 1
            continue
        if sum(1 for d in tries if d.get("redelivery")) >= MAX_REDELIVERIES:
            stats.gave_up += 1
            continue
        latest = max(tries, key=lambda d: str(d.get("delivered_at") or ""))
        try:
            await app.post(f"/app/hook/deliveries/{int(latest['id'])}/attempts", data={})
            stats.redelivered.append(int(latest["id"]))
        except gidgethub.GitHubException as exc:
            stats.errors += 1
            log.warning("recovery: redelivery of %s failed: %s", latest.get("id"), exc)
    log.info("recovery: %s", stats.as_dict())
    return stats
