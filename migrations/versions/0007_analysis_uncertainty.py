"""analyses.failure_confidence and analyses.failure_runner_up: the failure finding's
uncertainty as columns, for the list of threads where a verdict is wanted.

That list (`bot.site.verdicts.wanted_verdicts`) ranked threads by the report confidence and a
split kind read out of the stored analysis JSON (`result -> failure`): every candidate's JSON
was read on every page view. The report confidence (`failure.confidence`) and the kind the
analysis lists second (`failure.categories[1]`, present when the kind model's runner-up has at
least half the top kind's probability: a split kind) are now stored beside the other findings
(bot/pipeline.py writes them with the analysis) and the ranking runs on them; the
confidence is indexed. The upgrade fills them from the stored JSON of every analysis; the
downgrade drops them (the JSON keeps them).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("analyses") as batch:
        batch.add_column(sa.Column("failure_confidence", sa.Float(), nullable=True))
        batch.add_column(sa.Column("failure_runner_up", sa.String(length=64), nullable=True))
        batch.create_index(batch.f("ix_analyses_failure_confidence"), ["failure_confidence"])
    analyses = sa.table(
        "analyses", sa.column("result", sa.JSON()), sa.column("failure_confidence", sa.Float()),
        sa.column("failure_runner_up", sa.String(64)))
    # One statement on either database (SQLite json_extract, PostgreSQL ->/->>), as the
    # ranking read it before.
    op.execute(analyses.update().values(
        failure_confidence=analyses.c.result[("failure", "confidence")].as_float(),
        failure_runner_up=sa.func.substr(
            analyses.c.result[("failure", "categories", 1)].as_string(), 1, 64)))


def downgrade() -> None:
    with op.batch_alter_table("analyses") as batch:
        batch.drop_index(batch.f("ix_analyses_failure_confidence"))
        batch.drop_column("failure_runner_up")
        batch.drop_column("failure_confidence")
