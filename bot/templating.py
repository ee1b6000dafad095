"""The two Jinja2 environments: HTML (autoescaped) for pages, Markdown for GitHub comments."""

from __future__ import annotations

from functools import cache

import jinja2

from bot.config import TEMPLATES_DIR


@cache
def html_env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


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
