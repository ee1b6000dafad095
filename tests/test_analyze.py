"""analyzers.analyze: the whole contract analysis of one thread record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzers.analyze import analyze_thread
from analyzers.failures import CATEGORIES
from analyzers.version import ANALYZER_VERSION
from tests.work import assert_linear_work

STATES = {"merged", "open_no_reply", "open_replied", "declined", "redirected", "lapsed",
          "closed_by_author", "closed_other"}  # fmt: skip
CONCERNS = {"design_or_interface", "tests_or_docs", "maintenance_burden", "evidence",
            "placement", "demand", "already_covered", "other"}  # fmt: skip


def check_shape(a: dict) -> None:
    assert set(a) >= {"id", "failure", "papers", "proposal", "review"}
    f = a["failure"]
    assert set(f) == {"is_failure_report", "category", "categories", "confidence", "evidence",
                      "counter_evidence"}
    assert f["category"] is None or f["category"] in CATEGORIES
    assert all(c in CATEGORIES for c in f["categories"])
    assert 0.0 <= f["confidence"] <= 1.0
    assert (f["category"] is not None) == f["is_failure_report"]
    for p in a["papers"]:
        assert p["how"] in ("arxiv_id", "title", "method_name")
        assert set(p) >= {"arxiv_id", "title", "method", "how", "score"}
    assert set(a["proposal"]) == {"is_proposal", "confidence"}
    r = a["review"]
    assert r["state"] in STATES and isinstance(r["replied_from_other"], bool)
    assert set(r["concerns"]) <= CONCERNS
    json.dumps(a)  # serialisable
    assert a["analyzer_version"] == ANALYZER_VERSION


def test_failure_report_issue() -> None:
    t = {"id": "o/r#5", "repo": "o/r", "number": 5, "kind": "issue", "state": "open",
         "title": "KL keeps growing and reward collapses",
         "body": "During training the KL divergence increases every step.", "comments": []}
    a = analyze_thread(t)
    check_shape(a)
    assert a["id"] == "o/r#5"
    assert a["failure"]["is_failure_report"] and a["failure"]["category"] == "kl_growth"
    assert not a["proposal"]["is_proposal"]
    assert a["review"]["state"] == "open_no_reply"


def test_proposal_pull_request_links_paper() -> None:
    t = {"id": "o/r#6", "repo": "o/r", "number": 6, "kind": "pull_request", "state": "merged",
         "title": "feat: add DAPO clip-higher",
         "body": "Implements the decoupled clip from https://arxiv.org/abs/2503.14476v2",
         "author": "alice",
         "comments": [{"author": "maint", "body": "Looks good, thanks!", "created_at": "2025-01-02"}]}
    a = analyze_thread(t)
    check_shape(a)
    assert a["proposal"]["is_proposal"]
    assert any(p["arxiv_id"] == "2503.14476" and p["how"] == "arxiv_id" for p in a["papers"])
    assert a["review"]["state"] == "merged"
    assert not a["failure"]["is_failure_report"]


@pytest.mark.parametrize(
    "thread",
    [
        {},
        {"id": "o/r#1"},
        {"id": "o/r#1", "title": None, "body": None, "comments": None},
        {"id": "o/r#1", "title": 42, "body": ["x"], "kind": "weird", "comments": [None, 3, {"body": None}]},
        {"id": "o/r#1", "title": "t", "body": "b", "comments": [{"author": None, "created_at": None, "body": "hi"}],
         "labels": "bug", "state": "closed", "state_reason": None, "created_at": "2025-03-01"},
    ],
    ids=["empty", "id-only", "nones", "wrong-types", "partial"],
)  # fmt: skip
def test_robust_to_missing_and_odd_keys(thread: dict) -> None:
    check_shape(analyze_thread(thread))


def test_input_is_not_mutated() -> None:
    t = {"id": "o/r#1", "title": "x", "body": None, "comments": [{"body": None}]}
    before = json.dumps(t, sort_keys=True)
    analyze_thread(t)
    assert json.dumps(t, sort_keys=True) == before


@pytest.mark.parametrize(
    "body",
    ["1" * 65536, "." * 65536, "[" * 65536, "]" * 65536, "熵" * 65536, "2503.14476 " * 5957,
     "arXiv:" * 10922, "a" * 65536, "GRPO " * 13107],
    ids=["digits", "dots", "open-brackets", "close-brackets", "cjk", "ids", "arxiv", "letters", "names"],
)  # fmt: skip
def test_hostile_64k_bodies(body: str) -> None:
    t = {"id": "o/r#1", "kind": "issue", "title": "x", "body": body, "state": "open",
         "comments": [{"author": "u", "body": body}]}
    check_shape(analyze_thread(t))
    quarter = {**t, "body": body[: len(body) // 4], "comments": [{"author": "u", "body": body[: len(body) // 4]}]}
    assert_linear_work(lambda thread: check_shape(analyze_thread(thread)), t, quarter)


def test_dev_threads_analyse_to_contract_shape(shared_dir: Path) -> None:
    from analyzers.papers import PaperIndex

    path = shared_dir / "eval" / "dev" / "threads.jsonl"
    if not path.exists():
        pytest.skip("no dev threads")
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    pool_path = shared_dir / "eval" / "papers.jsonl"
    pool = PaperIndex.build(json.loads(x) for x in pool_path.read_text().splitlines() if x.strip())
    correct = total = 0
    for row in rows:
        a = analyze_thread(row, pool)
        check_shape(a)
        assert a["id"] == row["id"]
        labels = row.get("labels") or {}
        if "is_failure_report" in labels:
            total += 1
            correct += a["failure"]["is_failure_report"] == labels["is_failure_report"]
    # A loose floor against regressions; the real figures come from `make eval`.
    assert correct / total >= 0.75


# --- property: any text, any shape of optional keys -> a contract analysis, no exception ----
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = list("ab .,:-_/[](){}<>`#*=\n熵坍塌训推kl0123456789") + [
    "entropy ", "GRPO ", "```\n", "<!--", "-->", "arXiv:2503.14476 ", "drops to 0 ", "nan ",
]  # fmt: skip
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=120).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    title=st.one_of(st.none(), _TEXT),
    body=st.one_of(st.none(), _TEXT),
    kind=st.sampled_from(["issue", "pull_request", "discussion", None, "other"]),
    comments=st.lists(st.fixed_dictionaries({"author": st.one_of(st.none(), st.sampled_from(["a", "b", "x[bot]"])),
                                             "body": st.one_of(st.none(), _TEXT)}), max_size=3),
)  # fmt: skip
def test_any_thread_gives_a_contract_analysis(title, body, kind, comments) -> None:
    thread = {"id": "o/r#1", "repo": "o/r", "number": 1, "kind": kind, "title": title,
              "body": body, "state": "open", "author": "a", "comments": comments}  # fmt: skip
    check_shape(analyze_thread(thread))
