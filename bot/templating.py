"""The two Jinja2 environments: HTML (autoescaped) for pages, Markdown for GitHub comments."""

from __future__ import annotations

import unicodedata
from functools import cache

import jinja2

from bot.config import TEMPLATES_DIR

# Characters that draw nothing although Unicode calls them letters or symbols (Hangul fillers,
# the blank Braille pattern); format and control characters and blanks draw nothing either.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def shown_title(text: object, empty: str = "(no title)") -> str:
    """A title from GitHub as a page shows it: `empty` when nothing of it would be seen (no
    text, or only blanks, zero-width and other format characters), else the title as it is.
    A link whose whole text was such a title could be neither seen nor clicked."""
    title = "" if text is None else str(text)
    visible = any(not ch.isspace() and ch not in _BLANK_LETTERS
                  and unicodedata.category(ch) not in ("Cf", "Cc", "Zs", "Zl", "Zp")
                  for ch in title)
    return title if visible else empty


@cache
def html_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown_title"] = shown_title
    return env


@cache
def markdown_env() -> jinja2.Environment:
    # Comments never carry text from GitHub (only catalog data and numbers), so no escaping
    # is needed; StrictUndefined makes a missing value an error instead of an empty string.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
