"""64 KiB hostile bodies go through the whole analysis without blowing up.

Each case is a thread whose opening post (and one comment) is 65,536 characters of one
repeated pattern: digits, dots, brackets, CJK text, thousands of arXiv ids in every written
form, one endless word, a method name or a catalog title over and over. The work (Python
calls, counted) of a 64 KiB body is compared with that of a 16 KiB one: it catches a quadratic
scan without timing anything (the times are printed by `benchmarks/hostile_inputs.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from analyzers.analyze import analyze_thread
from tests.work import assert_linear_work

SIZE = 65536  # characters: CJK makes it 192 KiB of UTF-8, which is harsher, not milder


def _fill(unit: str, size: int = SIZE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _seq(fmt: Callable[[int], str], size: int = SIZE) -> str:
    """Distinct items (ids, links) joined by spaces up to `size` characters."""
    parts: list[str] = []
    n = 0
    i = 0
    while n < size:
        s = fmt(i) + " "
        parts.append(s)
        n += len(s)
        i += 1
    return "".join(parts)[:size]


def _catalog_title() -> str:
    """The longest catalog paper title (the title matcher's worst case)."""
    from analyzers.catalog import load_catalog

    titles = [r.title for m in load_catalog().methods.values() for r in m.papers if r.title]
    return max(titles, key=len)


def hostile_cases() -> dict[str, str]:
    """Case name -> 64 KiB body."""
    title = _catalog_title()
    return {
        "digits": _fill("7"),
        "digit-run-mixed": _fill("1234567890"),
        "dots": _fill("."),
        "digits-dots": _fill("2503.1447."),
        "dotted-numbers": _fill("1.2.3.4 "),
        "decimals-line": _fill("0.12345 "),
        "brackets-square": _fill("["),
        "brackets-round": _fill("("),
        "brackets-nested": _fill("[[(( ))]]"),
        "md-links": _fill("[x]("),
        "backticks": _fill("`"),
        "fences": _fill("```\n"),
        "html-comments": _fill("<!--"),
        "angle": _fill("<"),
        "newlines": _fill("\n"),
        "spaces": _fill(" "),
        "indented-code": _fill("    x\n"),
        "cjk": _fill("熵"),
        "cjk-text": _fill("训练过程中熵坍塌，训推不一致，奖励崩溃。"),
        "cjk-mixed-ids": _fill("熵2503.14476坍塌"),
        "long-word": _fill("a"),
        "long-word-caps": _fill("GRPO"),
        "long-url": "https://example.com/" + _fill("a/", SIZE - 20),
        "repeated-id": _fill("2503.14476 "),
        "distinct-ids": _seq(lambda i: f"2503.{10000 + i:05d}"),
        "distinct-ids-4digit": _seq(lambda i: f"{1001 + i // 9000 % 12:04d}.{1000 + i % 9000:04d}"),
        "versioned-ids": _seq(lambda i: f"2503.{10000 + i % 5000:05d}v{1 + i % 9}"),
        "prefixed-ids": _seq(lambda i: f"arXiv:2503.{10000 + i:05d}"),
        "repeated-prefixed": _fill("arXiv:2503.14476 "),
        "abs-links": _seq(lambda i: f"https://arxiv.org/abs/2503.{10000 + i:05d}"),
        "alphaxiv-links": _fill("https://www.alphaxiv.org/abs/2503.14476 "),
        "hf-links": _fill("https://huggingface.co/papers/2503.14476 "),
        "doi-links": _seq(lambda i: f"10.48550/arXiv.2503.{10000 + i:05d}"),
        "old-style-ids": _seq(lambda i: f"cs/{9901000 + i:07d}"),
        "ids-in-code": "```\n" + _seq(lambda i: f"arXiv:2503.{10000 + i:05d}", SIZE - 8) + "\n```",
        "method-names": _fill("GRPO "),
        "method-mix": _fill("GRPO DAPO PPO TIS GSPO Dr. GRPO REINFORCE++ "),
        "method-hyphens": _fill("Dr.-GRPO-"),
        "inline-code-values": _fill("`dr_grpo` "),
        "repeated-title": _fill(title + " "),
        "repeated-title-words": _fill(" ".join(title.split()[:3]) + " "),
        "failure-words": _fill("entropy collapse reward drops KL grows "),
        "review-words": _fill("closing due to inactivity, please use the recipe folder. "),
    }


def hostile_thread(body: str) -> dict[str, Any]:
    return {
        "id": "hostile",
        "kind": "issue",
        "title": body[:256],
        "body": body,
        "state": "open",
        "author": "someone",
        "comments": [{"author": "other", "body": body}],
    }


@pytest.fixture(scope="module")
def warm() -> None:
    analyze_thread(hostile_thread("warm up GRPO 2503.14476"))  # loads catalog, spaCy once



@pytest.mark.parametrize("name", sorted(hostile_cases()))
def test_hostile_body_work_grows_linearly(name: str, warm: None) -> None:
    """Four times the text costs at most about four times the work (quadratic scans would cost
    sixteen): the analysis of a quarter of the body is the yardstick."""
    body = hostile_cases()[name]
    assert len(body) >= SIZE - 16
    assert_linear_work(lambda text: analyze_thread(hostile_thread(text))["analyzer_version"], body)


def test_many_distinct_ids_are_all_linked() -> None:
    """Speed must not come from dropping ids: every distinct id in a long list is linked."""
    body = _seq(lambda i: f"arXiv:2503.{10000 + i:05d}")
    expected = {f"2503.{10000 + i:05d}" for i in range(body.count("arXiv:"))}
    # The last id may have been cut by the size limit.
    papers = analyze_thread(hostile_thread(body))["papers"]
    got = {p["arxiv_id"] for p in papers}
    assert len(expected - got) <= 1
    assert got <= expected | {None}
