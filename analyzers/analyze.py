"""The whole analysis of one thread record (contract `analysis` shape)."""

from __future__ import annotations

from typing import Any

ANALYZER_VERSION = "0"


def analyze_thread(thread: dict[str, Any], pool: Any = None) -> dict[str, Any]:
    return {
        "id": thread.get("id"),
        "failure": {"is_failure_report": False, "category": None, "categories": [], "confidence": 0.0},
        "papers": [],
        "proposal": {"is_proposal": False, "confidence": 0.0},
        "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
    }
