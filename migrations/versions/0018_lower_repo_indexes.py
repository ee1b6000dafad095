"""Index actions on lower(repo), number and deliveries on lower(repo) (edges62).

Repository names are case-insensitive on GitHub and the app compares them lowered: the thread
page's lookup of the app's comments and skips on the thread, a verdict's reply, `forget` (a
repository made private: its actions deleted, its finished deliveries emptied) and the
worker's emptying of a private repository's deliveries matched `lower(repo)`, which no index
served (ix_actions_repo_number is on the name as stored): each read the whole table. Two
expression indexes, as 0002 made for threads; the models do not declare them (nor 0002's).
The downgrade drops them.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_actions_lower_repo_number", "actions", [sa.text("lower(repo)"), "number"])
    op.create_index("ix_deliveries_lower_repo", "deliveries", [sa.text("lower(repo)")])


def downgrade() -> None:
    op.drop_index("ix_deliveries_lower_repo", table_name="deliveries")
    op.drop_index("ix_actions_lower_repo_number", table_name="actions")
