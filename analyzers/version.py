"""The analyzers' version, stored beside every finding.

Findings computed by older rules can then be found and recomputed (the nightly re-analysis,
the paper index's tag). Bump it whenever a rule, a pattern file, a fitted model or the catalog
changes what comes out. A module of its own so that every analyzer can name it without
importing the whole analysis (`analyzers.papers` tags its saved index with it).
"""

ANALYZER_VERSION = "2026.12.03-44"
