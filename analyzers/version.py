"""The analyzers' version, stored beside every finding.

Findings computed by older rules can then be found and recomputed (the nightly re-analysis,
the paper index's tag). Bump it whenever a rule, a pattern file, a fitted model or the catalog
changes what comes out. A module of its own so that every analyzer can name it without
importing the whole analysis (`analyzers.papers` tags its saved index with it).
"""

from __future__ import annotations

import re

ANALYZER_VERSION = "2026.12.05-54"


def version_key(version: str) -> list[tuple[int, int | str]]:
    """An analyzer version in the order versions are made (`2026.12.03-10` after
    `2026.12.03-9`): its digit runs compared as numbers."""
    return [(0, int(part)) if part.isdigit() else (1, part)
            for part in re.findall(r"\d+|\D+", version)]
