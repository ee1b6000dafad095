"""Every GraphQL document the project sends validates against GitHub's public schema."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

graphql = pytest.importorskip("graphql")

from bot import graphql_queries  # noqa: E402


@cache
def _schema(path: Path) -> object:
    from tests.fake_graphql import load_github_schema

    return load_github_schema(path)


def _documents() -> list[tuple[str, str]]:
    return graphql_queries.example_documents()


@pytest.mark.parametrize("name,document", _documents(), ids=[n for n, _ in _documents()])
def test_document_validates_against_github_schema(shared_dir: Path, name: str, document: str) -> None:
    schema = _schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    errors = graphql.validate(schema, graphql.parse(document))
    assert not errors, f"{name}: " + "; ".join(e.message for e in errors)


def test_every_module_query_is_covered() -> None:
    """Queries written as module constants elsewhere must be listed in example_documents()."""
    import bot

    listed = {doc for _, doc in _documents()}
    root = Path(bot.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "query " not in text or path.name == "graphql_queries.py":
            continue
        for line in text.splitlines():
            stripped = line.strip().strip('"').strip("'")
            if stripped.startswith(("query ", "mutation ")) and "{" in stripped:
                assert any(stripped in doc for doc in listed), f"{path.name}: {stripped[:60]}"


def test_builder_declares_only_used_variables(shared_dir: Path) -> None:
    doc, variables = graphql_queries.build_sync_query(
        [graphql_queries.StreamSlot("o", "n", "issue", 5, None)], []
    )
    assert "nestedReplies" not in variables and "nestedComments" in variables
    assert "DiscussionFields" not in doc
