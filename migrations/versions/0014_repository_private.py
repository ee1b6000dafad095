"""repositories.private: a repository GitHub calls private (or internal) keeps nothing stored.

The tracker publishes the public record of open-source frameworks; before this revision a
private repository's threads (the app installed on all of an organisation's repositories)
were stored and shown like any other. The column marks such a repository: nothing of it is
stored from then on (bot/store/privacy.py). The data step forgets what was stored before of
the repositories the inbox's stored payloads last called private (`repository.private`,
`visibility`, the `private` of an installation event's repositories): their threads,
comments, analyses, verdicts, actions, sync cursors, contribution rules and their threads in
stored reports. What the inbox no longer holds a payload of is not known here; the sync
finds the tracked repositories' state (GraphQL `isPrivate`). The downgrade drops the column
(what was forgotten stays forgotten).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.add_column(sa.Column("private", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    from bot.store.privacy import forget_private_in_inbox

    forget_private_in_inbox(op.get_bind(), by_repository_id=False)  # (0017 adds the column)


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("private")
