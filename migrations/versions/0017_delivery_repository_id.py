"""deliveries.repo_id: the repository a delivery is about, by GitHub's id (privacy61).

`forget` (a repository made private) empties the finished deliveries of the repository, those
stored under a name it had before a rename too. Those were found by a LIKE scan of every
finished delivery's payload for the id's digits, each candidate parsed to confirm it: the
whole inbox read at each `privatized`. The inbox now stores the payload's `repository.id` in
a column of its own, indexed, and `forget` and the worker match it exactly.

The data steps: each stored row gets the id its payload names (rows whose payload is gone,
emptied as a private repository's, or names no repository keep none; they are matched by
name as before), a few hundred rows at a time. Then the finished deliveries of repositories
marked private that kept their payload are emptied, as 0016 did: a delivery the worker set
aside as abandoned (failed at claim time, never finished) kept its payload until now, and
those under a former name are found by the new column. The downgrade drops the column and
its index (what was emptied stays emptied).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

BATCH = 200  # rows read at a time (payloads up to 25 MiB each, most a few KiB)


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("repo_id", sa.BigInteger(), nullable=True))
        batch.create_index("ix_deliveries_repo_id", ["repo_id"])
    from bot.store.models import repository_id_of
    from bot.store.privacy import EMPTIED_PAYLOAD, empty_private_inbox

    conn = op.get_bind()
    t = sa.table("deliveries", sa.column("id", sa.BigInteger()), sa.column("payload", sa.Text()),
                 sa.column("repo_id", sa.BigInteger()))
    set_id = sa.update(t).where(t.c.id == sa.bindparam("row_id")).values(
        repo_id=sa.bindparam("rid"))
    after = 0
    while True:
        rows = conn.execute(sa.select(t.c.id, t.c.payload).where(
            t.c.id > after, t.c.payload != EMPTIED_PAYLOAD).order_by(t.c.id).limit(BATCH)).all()
        if not rows:
            break
        after = rows[-1][0]
        found = [{"row_id": rid, "rid": i} for rid, raw in rows
                 if (i := repository_id_of(raw)) is not None]
        if found:
            conn.execute(set_id, found)
    empty_private_inbox(conn, by_repository_id=True)


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_index("ix_deliveries_repo_id")
        batch.drop_column("repo_id")
