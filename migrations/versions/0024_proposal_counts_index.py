"""Index the proposals' counts by framework and state (site66).

The front page, /api/frameworks and each framework page count the proposals by repository
and review state (`bot.site.data.proposal_counts`): the database read every analysis row,
wide with its stored result, to take two narrow columns. An index on (is_proposal,
thread_id, review_state) holds all the statement reads of the table: SQLite reads it as a
covering index, PostgreSQL as an index-only scan (the filter's `is_proposal IS true` is its
index condition `is_proposal = true`). At 20,000 threads: the analyses' part 16 -> 0.9 ms on
PostgreSQL; the whole statement 34 -> 19 ms on SQLite (docs/site.md, "Review site66"). The
model declares it; the downgrade drops it.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_analyses_proposal_counts", "analyses",
                    ["is_proposal", "thread_id", "review_state"])


def downgrade() -> None:
    op.drop_index("ix_analyses_proposal_counts", table_name="analyses")
