"""repositories.removed_installation_id: the installation a repository was removed from
(`installation_repositories.removed`) while that installation stays active.

Without it a removed repository looked like one installed before this database existed (no
installation on its row): the next delivery naming the installation (a queued one, a
redelivery) put the installation back on the row, and the app asked GitHub for the
installation's token to comment there (refused, the delivery failed) and synced through it.
Only an installation event (`installation_repositories.added`, `installation.created`...)
clears it.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("removed_installation_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("removed_installation_id")
