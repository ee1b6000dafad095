"""A summary column on the stored reports (scale64).

The list of nightly reports (/reports/) showed each night's baseline flag, totals and new
landings, read as `data -> 'baseline'` and the like: the database parsed each night's whole
data (the snapshot of every tracked thread, megabytes on a large tracker) three times a row,
on every visit (525 ms for two nights of a 20,000-thread store on PostgreSQL: a year of
nights, minutes). `summary` holds those three (bot.store.models.report_summary), written with
the data; the upgrade fills it from each stored report, one at a time. The downgrade drops it.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def _summary(data: Any) -> dict[str, Any]:
    """bot.store.models.report_summary as of this migration."""
    data = data if isinstance(data, dict) else {}
    return {"baseline": bool(data.get("baseline")), "totals": dict(data.get("totals") or {}),
            "new_landings": int(data.get("new_landings") or 0)}


def upgrade() -> None:
    op.add_column("reports", sa.Column("summary", sa.JSON(), nullable=True))
    reports = sa.table("reports", sa.column("id", sa.BigInteger), sa.column("data", sa.JSON),
                       sa.column("summary", sa.JSON))
    conn = op.get_bind()
    for (rid,) in conn.execute(sa.select(reports.c.id).order_by(reports.c.id)).all():
        data = conn.execute(sa.select(reports.c.data).where(reports.c.id == rid)).scalar()
        conn.execute(sa.update(reports).where(reports.c.id == rid)
                     .values(summary=_summary(data)))


def downgrade() -> None:
    with op.batch_alter_table("reports") as batch:
        batch.drop_column("summary")
