"""The whole analysis of one thread record (contract `analysis` shape).

Pure and total: any dict goes in (missing optional keys, None bodies, wrong types, 64 KiB
hostile text), one analysis comes out, tagged with `analyzers.version.ANALYZER_VERSION`.
"""

from __future__ import annotations

from typing import Any

from analyzers.failures import classify_failure
from analyzers.papers import PaperIndex, link_papers
from analyzers.proposals import classify_proposal
from analyzers.review import review_thread
from analyzers.version import ANALYZER_VERSION

_KINDS = frozenset({"issue", "pull_request", "discussion"})


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def normalise_thread(thread: dict[str, Any]) -> dict[str, Any]:
    """A copy with the shapes the analyzers rely on: strings or None for texts, a list of
    comment dicts. Unknown keys are kept; nothing is invented beyond empty defaults."""
    t = dict(thread)
    t["title"] = _text(t.get("title")) or ""
    t["body"] = _text(t.get("body"))
    kind = t.get("kind")
    t["kind"] = kind if kind in _KINDS else None
    comments = t.get("comments")
    clean = []
    if isinstance(comments, list):
        for c in comments:
            if isinstance(c, dict):
                c = dict(c)
                c["body"] = _text(c.get("body")) or ""
                clean.append(c)
    t["comments"] = clean
    if not isinstance(t.get("labels"), list):
        t["labels"] = []
    return t


def analyze_thread(thread: dict[str, Any], pool: PaperIndex | None = None) -> dict[str, Any]:
    """Contract analysis of `thread`; `pool` is a PaperIndex built once (None: catalog only)."""
    t = normalise_thread(thread)
    # Kept whole: "evidence" (matched spans) lets the comment name the cue terms it saw.
    failure = classify_failure(t["title"], t["body"], kind=t["kind"], author=t.get("author"), comments=t["comments"])
    papers = link_papers(t, pool)
    proposal = classify_proposal(t, papers)
    review = review_thread(t)
    return {
        "id": t.get("id"),
        "failure": failure,
        "papers": papers,
        "proposal": proposal,
        "review": review,
        "analyzer_version": ANALYZER_VERSION,
    }
