"""The installations the app must not act through: suspended (GitHub refuses their tokens)
or uninstalled. Deliveries queued before the event still arrive: their threads are tracked,
not answered, and their repositories are read as any other (with GITHUB_TOKEN)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select

from bot.store.models import Delivery, Installation

_SILENCED = select(Installation.id).where(Installation.suspended.is_(True) | Installation.deleted.is_(True))


async def silenced_installations(session: Any) -> set[int]:
    return set(await session.scalars(_SILENCED))


# The deliveries whose handling hands back what GitHub refused for a permission the app lacked
# (bot.webhooks.installations.answer_when_permitted): new permissions accepted, repositories
# added to the installation again.
HANDING_BACK = (("installation", "new_permissions_accepted"), ("installation_repositories", "added"))


async def handed_back_meanwhile(session: Any, installation_id: int | None,
                                delivery_id: str | None) -> bool:
    """Whether a delivery handing back refused deliveries of `installation_id` is being handled
    now, or was handled since the current attempt of `delivery_id` started (ops71): its
    hand-back may have run while that delivery was in flight (its refusal not recorded yet,
    or the delivery not finished), and then passed it by. False without a delivery (nothing
    could hand it back) or an installation."""
    if installation_id is None or not delivery_id:
        return False
    started = (select(Delivery.started_at).where(Delivery.delivery_id == delivery_id)
               .scalar_subquery())
    handing_back = or_(*(and_(Delivery.event == event, Delivery.action == action)
                         for event, action in HANDING_BACK))
    found = await session.scalar(
        select(Delivery.id).where(
            Delivery.installation_id == int(installation_id), handing_back,
            Delivery.delivery_id != delivery_id,
            or_(Delivery.status == "processing",
                and_(Delivery.status == "done", Delivery.finished_at >= started)))
        .limit(1))
    return found is not None


async def last_handed_back(session: Any, installation_id: int | None) -> datetime | None:
    """When the latest delivery handing back refused deliveries of `installation_id` finished
    (None: none did)."""
    if installation_id is None:
        return None
    handing_back = or_(*(and_(Delivery.event == event, Delivery.action == action)
                         for event, action in HANDING_BACK))
    return await session.scalar(select(func.max(Delivery.finished_at)).where(
        Delivery.installation_id == int(installation_id), handing_back,
        Delivery.status == "done"))
