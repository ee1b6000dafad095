"""Column types shared by the models: timezone-aware UTC datetimes on both databases."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Text, literal, tuple_
from sqlalchemy.types import TypeDecorator

from bot.templating import without_controls

# Thread numbers are INTEGER columns: 32 bits on PostgreSQL (GitHub's numbers stay far below).
MAX_THREAD_NUMBER = 2**31 - 1


# What no database column can store: U+0000 (PostgreSQL text refuses it) and lone surrogates
# (valid JSON as "\ud800", not encodable as UTF-8: SQLite and asyncpg both fail on them).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with every character no database can store replaced by U+FFFD."""
    return UNSTORABLE.sub("\ufffd", text)


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_thread_number(text: str) -> int | None:
    """A thread number typed into a URL: a whole number from 1 to MAX_THREAD_NUMBER, else None
    (no thread has it, and a database would refuse to compare a column with it)."""
    text = text.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 10:
        return None
    number = int(text)
    return number if 1 <= number <= MAX_THREAD_NUMBER else None


# A row's place in a list's order, (its date or None, its id): what a keyset cursor holds.
Position = tuple[datetime | None, int]


def beyond(date: Any, row_id: Any, position: Position, *, descending: bool) -> Any:
    """The rows after `position` in the order (`date`, `row_id`), both ascending or both
    descending, compared as one row value so the database seeks to it in an index of
    that order (keyset paging) instead of counting the rows before it (OFFSET). The
    values are bound with the columns' types (SQLite stores dates as text of one form).
    `position`'s date is not None: the rows of no known date are the caller's to add."""
    keys = tuple_(date, row_id)
    bound = tuple_(literal(position[0], date.type), literal(position[1], row_id.type))
    return keys < bound if descending else keys > bound


def parse_count(text: str | None, default: int) -> int | None:
    """A count typed into a URL (an offset, a limit, a page): a whole number from 0, `default`
    when absent, else None. Nine digits at most: past them every offset is past every row."""
    text = (text or "").strip()
    if not text:
        return default
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else None


class TitleText(TypeDecorator[str]):
    """A thread's title: written and read without control characters (`without_controls`:
    GitHub strips them), so a title stored before, with them, reaches no page, export or
    report as it was; nothing to migrate."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: object) -> str | None:
        return None if value is None else without_controls(value)

    def process_result_value(self, value: str | None, dialect: object) -> str | None:
        return None if value is None else without_controls(value)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes; SQLite drops the zone, so it is put back on the way out."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _folded(text: str) -> str:
    return "-".join(text.strip().lower().replace("_", " ").replace("-", " ").split())


def canonical_id(text: str, ids: Iterable[str], names: Mapping[str, str] | None = None
                 ) -> str | None:
    """The id `text` means, as typed into a URL: any case, `-`, `_` or a space between words
    (`VERL`, `NeMo_RL`, `Entropy-Collapse`), or a display name in `names` (id -> name)."""
    wanted = _folded(text)
    for key in ids:
        if _folded(key) == wanted or (names and _folded(names.get(key, "")) == wanted):
            return key
    return None


def parse_datetime(value: str | datetime | None) -> datetime | None:
    """GitHub's ISO 8601 strings (or a bare date) to an aware datetime; '' and None to None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_datetime(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
