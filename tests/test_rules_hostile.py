"""The contribution-rule extractor and its rendering on 64 KiB hostile contribution files: the
work (Python calls, counted; tests/work.py) of a whole file is compared with that of its first
quarter, so a quadratic scan fails without timing anything."""

from __future__ import annotations

import pytest

from analyzers.rules import format_rules_markdown, summarize_rules
from bot.speaking.render import rules_reply
from bot.speaking.rule_summary import _no_references, within_budget
from tests.work import assert_linear_work

SIZE = 65536


def _fill(unit: str, size: int = SIZE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


CASES = {
    "backticks": _fill("`"),
    "fences": _fill("```\n"),
    "myst-fences": _fill("```{note}\n"),
    "html-comments": _fill("<!--"),
    "details": _fill("<details>"),
    "brackets": _fill("[("),
    "md-links": _fill("[x](javascript:a) "),
    "list-items": _fill("- "),
    "nested-items": _fill("  - a\n"),
    "table-rows": _fill("| a | b |\n"),
    "checkboxes": _fill("- [ ] Did you add tests?\n"),
    "headings": _fill("## Tests\n"),
    "mentions": _fill("@a "),
    "references": _fill("o/r#1 #2 "),
    "newlines": _fill("\n"),
    "long-word": _fill("a"),
    "modal-words": _fill("you must please make sure "),
    "rule-words": _fill("Please add tests and sign off (`git commit -s`). "),
    "lead-items": _fill("You must include:\n- `a`\n- b\n"),
    "cjk": _fill("请在提交前运行测试并签署 DCO。"),
    "front-matter": "---\n" + _fill("name: a\n", SIZE - 8) + "\n---\n",
}


@pytest.fixture(scope="module")
def warm() -> None:
    summarize_rules({"CONTRIBUTING.md": "Please add tests."})


def _summary_and_rendering(text: str) -> str:
    summary = summarize_rules({"CONTRIBUTING.md": text,
                               ".github/PULL_REQUEST_TEMPLATE.md": text})
    md = within_budget(_no_references(format_rules_markdown(summary, heading=False)), "en")
    return rules_reply(md, None, "en", "https://tracker.example")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_extraction_work_grows_linearly(name: str, warm: None) -> None:
    assert_linear_work(_summary_and_rendering, CASES[name])


def test_the_reference_guard_is_linear_on_a_long_summary() -> None:
    text = _fill("- o/r#1 `x` @a #2 [y](z) ") + "\n"
    assert_linear_work(lambda t: within_budget(_no_references(t), "zh"), text * 4, text)
