"""repositories.name_seen_at: how recent the repository's stored name is, so that a delivery
sent before a rename and handled after it does not rename the repository back.

GitHub keeps a repository's id through a rename and moves its `updated_at`; a payload still
naming the old name carries the older `updated_at`. The repository row now records the
`updated_at` of the payload that gave it its name (bot.webhooks.installations.upsert_repository),
and only a payload with a newer one renames it. Rows stored before have none: the next
payload's name is taken, as before. The downgrade drops the column.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("name_seen_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("name_seen_at")
