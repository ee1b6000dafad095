"""Discussion comments get their own kind; review comments keep their file; discussions
keep their answer and category.

- comments.kind `discussion_comment` for the comments (and replies) of discussions. They were
  stored as `comment`, the kind of issue comments, keyed (kind, github_id); GitHub numbers
  discussion comments apart from issue comments, so one of each with the same id shared a row
  (the second delivery took the row and moved it to its own thread; a nightly sync holding
  both failed on the unique key). The kind column grows to 32 characters for the name. The
  contract record still calls them `comment` (bot.store.threads.comment_record).
- A comment's deletion noted before (deletions key `comment:comment:N`) could have been of
  either kind: it is noted for both (`comment:discussion_comment:N` too), so what GitHub
  deleted stays deleted.
- comments.path: the file a review comment is on (webhooks and GraphQL both carry it).
- threads.answered, answer_chosen_by, category: a discussion's chosen answer (whether, and by
  whom) and its category's name. Rows stored before have none until their next delivery or
  sync (`rltracker sync --full` reads every thread again).

Downgrade: the kind goes back to `comment`; of an issue comment and a discussion comment with
the same id (which the old key cannot hold both) the issue comment stays and the discussion's
is dropped (a sync reads it back as `comment`). The noted deletions of discussion comments
become `comment:comment:N` again. path, answered, answer_chosen_by and category are dropped.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_DISCUSSION_IDS = "SELECT id FROM threads WHERE kind = 'discussion'"


def upgrade() -> None:
    # SQLite copies the table for the wider kind (a batch); PostgreSQL alters it in place.
    with op.batch_alter_table("comments") as batch:
        batch.alter_column("kind", existing_type=sa.String(length=16), type_=sa.String(length=32),
                           existing_nullable=False)
        batch.add_column(sa.Column("path", sa.Text(), nullable=True))
    op.add_column("threads", sa.Column("answered", sa.Boolean(), nullable=True))
    op.add_column("threads", sa.Column("answer_chosen_by", sa.String(length=255), nullable=True))
    op.add_column("threads", sa.Column("category", sa.String(length=255), nullable=True))
    op.execute(f"UPDATE comments SET kind = 'discussion_comment' "
               f"WHERE kind = 'comment' AND thread_id IN ({_DISCUSSION_IDS})")
    op.execute("INSERT INTO deletions (key, created_at, deleted_at) "
               "SELECT 'comment:discussion_comment:' || substr(key, 17), created_at, deleted_at "
               "FROM deletions d WHERE key LIKE 'comment:comment:%' AND NOT EXISTS ("
               "SELECT 1 FROM deletions e WHERE e.key = "
               "'comment:discussion_comment:' || substr(d.key, 17))")


def downgrade() -> None:
    op.execute("DELETE FROM comments WHERE kind = 'discussion_comment' AND github_id IN ("
               "SELECT github_id FROM comments WHERE kind = 'comment')")
    op.execute("UPDATE comments SET kind = 'comment' WHERE kind = 'discussion_comment'")
    op.execute("DELETE FROM deletions WHERE key LIKE 'comment:discussion_comment:%' AND "
               "'comment:comment:' || substr(key, 28) IN (SELECT key FROM deletions)")
    op.execute("UPDATE deletions SET key = 'comment:comment:' || substr(key, 28) "
               "WHERE key LIKE 'comment:discussion_comment:%'")
    op.drop_column("threads", "category")
    op.drop_column("threads", "answer_chosen_by")
    op.drop_column("threads", "answered")
    with op.batch_alter_table("comments") as batch:
        batch.drop_column("path")
        batch.alter_column("kind", existing_type=sa.String(length=32), type_=sa.String(length=16),
                           existing_nullable=False)
