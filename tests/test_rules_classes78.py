"""rules78: wrong lines the scorer does not count and two left classes, read in general form.
Every text here is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from analyzers.rules import summarize_rules
from tests.test_rules_answers import _facts


def _lint_tools_line(files: dict[str, str]) -> str:
    lines = [f["statement"] for f in _facts(files) if f["statement"].startswith("Lint and format tools")]
    assert len(lines) == 1, lines
    return lines[0]


# --- a tool the files say was replaced or dropped is not named as today's ------------------------


def test_tools_said_to_be_replaced_are_not_named() -> None:
    text = ("# Contributing to stoat\n\n## Formatting\n\nWe used pylint and yapf for years; "
            "pylint and yapf have been replaced by `ruff check` and `ruff format`. "
            "Run both before you push.\n")
    line = _lint_tools_line({"CONTRIBUTING.md": text})
    assert "ruff" in line
    assert "pylint" not in line and "yapf" not in line, line


def test_tools_swapped_out_or_used_instead_of_are_not_named() -> None:
    text = ("# Contributing\n\n## Style\n\nWe replaced isort with ruff's import sorting, and "
            "mypy is no longer used. Type-check with pyright instead of mypy.\n")
    line = _lint_tools_line({"CONTRIBUTING.md": text})
    assert "pyright" in line and "ruff" in line
    assert "isort" not in line and "mypy" not in line, line


def test_tools_in_use_are_still_named() -> None:
    text = ("# Contributing\n\n## Style\n\nFormat with black and lint with ruff; mypy checks "
            "the types. The old CI job was removed.\n")
    line = _lint_tools_line({"CONTRIBUTING.md": text})
    assert all(tool in line for tool in ("black", "ruff", "mypy")), line
