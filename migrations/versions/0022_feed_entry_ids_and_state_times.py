"""Rename-stable feed entry ids and the time a review state changed (feedids65).

`threads.first_repo`: the repository name a thread was first stored under. A feed entry's id
is `/threads/{first_repo}/{number}` (bot/site/feeds.py): a rename or a move of the
repository to another owner (bot.store.repositories.follow_rename moves `repo`, not this)
keeps it, and the thread page answers under it (bot.site.data.find_thread). Filled with
`threads.repo` here, so no stored thread's id changes. The store kept no earlier name of a
repository (follow_rename rewrites every row, `deletions` included), and the catalog's
current name is not stable either: recording a rename there would have moved every id of
the framework. Indexed with the number, for that lookup.

`analyses.review_state_changed_at`: when the stored review state last became what it is
(None: as first stored, or before this revision). Set by the pipeline only when a new
analysis reads another state than the stored one (a nightly re-analysis under a new
analyzer version, with no activity on GitHub); a proposal's entry is `updated` at the later
of it and the thread's activity.

The downgrade drops both (and the index).

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a NOT NULL on SQLite is a table copy, which drops threads' expression indexes
    # (0002, 0018, 0020); the model's insert default fills it, and readers coalesce with repo.
    op.add_column("threads", sa.Column("first_repo", sa.String(255), nullable=True))
    op.execute("UPDATE threads SET first_repo = repo")
    op.create_index("ix_threads_first_repo_number", "threads", ["first_repo", "number"])
    op.add_column("analyses", sa.Column("review_state_changed_at", sa.DateTime(timezone=True),
                                           nullable=True))


def downgrade() -> None:
    op.drop_index("ix_threads_first_repo_number", table_name="threads")
    with op.batch_alter_table("analyses") as batch:
        batch.drop_column("review_state_changed_at")
    # Not a batch: SQLite drops the column in place (3.35), a table copy would drop threads'
    # expression indexes (as 0013's downgrade).
    op.drop_column("threads", "first_repo")
