"""Index the actions in /api/actions' order (scale65).

/api/actions lists what the app did oldest first (`ORDER BY created_at, id`), `limit` after
`offset` or after the `after` cursor of its Link header: with no index on the date the
database read and sorted every action to return a page, and a page after a cursor could not
be sought (an action is stored for every decision, quiet ones included: the table grows with
every new issue of every installed repository). A plain index on (created_at, id), which
the model declares; the downgrade drops it.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_actions_created_at_id", "actions", ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_actions_created_at_id", table_name="actions")
