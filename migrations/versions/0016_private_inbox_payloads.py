"""The inbox keeps no payload of a private repository's finished deliveries (review59).

Before this revision the webhook inbox (`deliveries`) kept every delivery's raw payload for
good, a private repository's too (its issues' titles and bodies, its comments). Since then the
worker empties a private repository's delivery as it finishes it, and forgetting a repository
(`repository.privatized`, the sync, an installation listing it private) empties its finished
deliveries (bot/store/privacy.py). The data step does the same for what was stored before:
every finished (done or failed) delivery whose payload says its repository is private, or
whose repository's row is marked private, keeps only its id, event, action, repository, times,
attempts and outcome (a failed one's error its first line). Pending ones are emptied by the
worker when it finishes them. No schema change; the downgrade changes nothing (what was
emptied stays emptied).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from bot.store.privacy import empty_private_inbox

    empty_private_inbox(op.get_bind())


def downgrade() -> None:
    pass
