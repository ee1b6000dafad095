"""rules78: wrong lines the scorer does not count and two left classes, read in general form.
Every text here is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from tests.test_rules_answers import _facts, _rules


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


# --- a paragraph led by a retired bold label states nothing ---------------------------------------


def test_a_paragraph_under_a_retired_bold_label_states_nothing() -> None:
    text = ("# Contributing to vole\n\n## Pull requests\n\nEvery change needs a test; run "
            "`pytest` before you push.\n\n**Legacy:** Until version 3 we asked contributors to "
            "sign a Contributor License Agreement and to add a line to the changelog for "
            "every change.\n\n- **Deprecated (kept for reference):** sign off each commit "
            "with `git commit -s`.\n- Link the issue your PR fixes.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    topics = {f["topic"] for f in _facts({"CONTRIBUTING.md": text})}
    assert "cla_required" not in rules, rules
    assert not [r for r in rules if r.startswith("changelog")], rules
    assert "sign-off" not in topics, rules
    assert "tests" in topics  # the paragraph before the label is today's rule


def test_a_bold_label_that_retires_nothing_keeps_its_paragraph() -> None:
    text = ("# Contributing\n\n**Important:** sign our Contributor License Agreement before "
            "your first pull request.\n\n**Deprecation policy:** a public function is "
            "deprecated for one minor release before it is removed; add a changelog entry "
            "when you deprecate one.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "cla_required" in rules, rules
    assert [r for r in rules if r.startswith("changelog")], rules


# --- a yes/no question that opens a terse rule is its condition ----------------------------------


def test_a_question_opening_a_terse_rule_is_its_condition() -> None:
    text = ("# Contributing\n\n- Changed `marten/sampler/` or `marten/buffer/`? Before/after "
            "timings from `scripts/perf.py` in the PR.\n- `pytest` green.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "results_conditional" in rules, rules
    statement = rules["results_conditional"]["statement"]
    assert "marten/sampler/" in statement and "scripts/perf.py" in statement, statement


def test_a_question_asked_is_no_condition() -> None:
    text = ("# Contributing\n\n## FAQ\n\n- Do I need before/after timings from `marten-perf` "
            "when I change the sampler? No.\n")
    assert "results_conditional" not in _rules({"CONTRIBUTING.md": text})


# --- a command the prose calls optional is no request from a code block listing it ------------


def test_a_listed_command_the_guide_calls_optional_asks_nothing() -> None:
    text = ("# Contributing to newt\n\n## Commands\n\n```\nmake test        # unit tests\n"
            "make docs        # build the docs as HTML\n```\n\n## Pull requests\n\n"
            "Run `make test` before you push. Building the pages with `make docs` is not "
            "required; it helps when you edit them.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "docs_build" not in rules, rules


def test_a_listed_command_no_one_calls_optional_keeps_its_rule() -> None:
    text = ("# Contributing to newt\n\n## Commands\n\n```\nmake test        # unit tests\n"
            "make docs        # build the docs as HTML\n```\n\nThe `--strict` flag is optional.\n")
    assert "docs_build" in _rules({"CONTRIBUTING.md": text})
