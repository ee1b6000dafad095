"""review_transitions: the history of each proposal's review state (history75).

The store kept a proposal's latest review state only (`analyses.review_state`, and since 0022
when it last changed): when a proposal went from "open, replied" to "declined", how long
proposals wait for a first reply, or what changed since the last night could be learnt only
by diffing nightly reports. Each change of a proposal's stored state is now a row here,
written by the pipeline in the transaction that stores the new state
(bot.store.history.record_transitions): the thread, the state before (NULL: the first state
it was stored in as a proposal) and after, when, the analyzer version, and the source
(`webhook`, `sync`, `command`, `reanalysis`, `backfill`).

Backfill: one row per stored proposal, from NULL to its stored state, source `backfill`,
observed when that state was last seen to change (`review_state_changed_at`, 0022) or, when
the store never saw it change, at its stored analysis time (`analyzed_at`). What happened
before is not known and is not made up.

The downgrade drops the table with its rows (the history since the upgrade is lost; a new
upgrade backfills one row per proposal again).

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


FOREIGN_KEY = "fk_review_transitions_thread_id_threads"


def upgrade() -> None:
    # PostgreSQL: the foreign key to `threads` is made after the backfill (ops77). Making it
    # takes SHARE ROW EXCLUSIVE on `threads`, held to the upgrade's commit: made first, a live
    # app's every write of a thread waited for the whole backfill (0.75 s at 200 000 threads,
    # benchmarks/migration_0026.py). Made last, the lock is held for two scans of the new
    # table. SQLite has the key in the CREATE TABLE (adding it later copies the table; its
    # upgrade holds the database's write lock throughout in any case).
    postgresql = op.get_bind().dialect.name == "postgresql"
    thread_key = [] if postgresql else [sa.ForeignKeyConstraint(
        ["thread_id"], ["threads.id"], name=FOREIGN_KEY, ondelete="CASCADE")]
    op.create_table(
        "review_transitions",
        sa.Column("id", BigId, nullable=False),
        sa.Column("thread_id", BigId, nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=True),
        sa.Column("observed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("analyzer_version", sa.String(length=32), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        *thread_key,
        sa.PrimaryKeyConstraint("id", name="pk_review_transitions"),
    )
    op.execute(
        "INSERT INTO review_transitions (thread_id, from_state, to_state, observed_at, "
        "analyzer_version, source) "
        "SELECT thread_id, NULL, review_state, coalesce(review_state_changed_at, analyzed_at), "
        "analyzer_version, 'backfill' FROM analyses WHERE is_proposal ORDER BY thread_id")
    # built once over the backfilled rows (not row by row while they are copied)
    op.create_index("ix_review_transitions_thread_id_observed_at", "review_transitions",
                    ["thread_id", "observed_at"])
    op.create_index("ix_review_transitions_observed_at", "review_transitions", ["observed_at"])
    if postgresql:
        # A thread deleted (`forget`, a transfer's merge) while the rows were copied left rows
        # for no thread: with `threads` locked nothing more can go, they are dropped (their
        # thread's other rows went with it), then the key is made and checked.
        op.execute("LOCK TABLE threads IN SHARE ROW EXCLUSIVE MODE")
        op.execute("DELETE FROM review_transitions r WHERE NOT EXISTS "
                   "(SELECT 1 FROM threads t WHERE t.id = r.thread_id)")
        op.create_foreign_key(FOREIGN_KEY, "review_transitions", "threads", ["thread_id"], ["id"],
                              ondelete="CASCADE")


def downgrade() -> None:
    op.drop_index("ix_review_transitions_observed_at", table_name="review_transitions")
    op.drop_index("ix_review_transitions_thread_id_observed_at", table_name="review_transitions")
    op.drop_table("review_transitions")
