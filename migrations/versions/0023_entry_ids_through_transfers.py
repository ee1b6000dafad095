"""Feed entry ids kept through an issue's transfer and apart from a reused name (left66).

`threads.first_number`: the number the thread was first stored under, beside `first_repo`
(0022). A transfer gives the thread a new repository and number (bot.store.threads.
move_thread); both are kept, so its feed entry's id, `/threads/{first_repo}/{first_number}`
(bot/site/feeds.py), stays and the old address finds it (bot.site.data.find_thread). The
pair is unique: GitHub never gives a number of a repository to another thread, and the old
place is noted as empty for good. Filled with `number` here, so no stored id changes.

`threads.first_repo_id`: set only for a thread first stored under a repository name another
thread had been stored under with the same number before (a repository renamed or moved
away, its name taken by another repository since): the GitHub id of the repository it was
stored in. Its entry's id then carries `?repository={id}`; the older thread's stays as it was.
Empty here: no stored pair of ids can be told apart after the fact.

The index on `first_repo, number` (0022) becomes one on `first_repo, first_number`. The
downgrade puts 0022's back and drops both columns; a thread transferred to another number
gets 0022's entry id back first, its new place (as 0022's transfer set it): else its former
repository beside its new number was another thread's id (review66). A reused name's
`first_repo_id` has no place in 0022's ids: its entry shares the older thread's again.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable, as 0022's first_repo (a NOT NULL on SQLite is a table copy, which drops the
    # threads' expression indexes); the model's insert default fills them, readers coalesce.
    op.add_column("threads", sa.Column("first_number", sa.Integer(), nullable=True))
    op.add_column("threads", sa.Column("first_repo_id", sa.BigInteger(), nullable=True))
    op.execute("UPDATE threads SET first_number = number")
    op.drop_index("ix_threads_first_repo_number", table_name="threads")
    op.create_index("ix_threads_first_repo_first_number", "threads", ["first_repo", "first_number"])


def downgrade() -> None:
    op.execute("UPDATE threads SET first_repo = repo WHERE first_number <> number")
    op.drop_index("ix_threads_first_repo_first_number", table_name="threads")
    op.create_index("ix_threads_first_repo_number", "threads", ["first_repo", "number"])
    # Not a batch: SQLite drops the columns in place (3.35), as 0022's downgrade.
    op.drop_column("threads", "first_repo_id")
    op.drop_column("threads", "first_number")
