"""Every GraphQL document the project sends validates against GitHub's public schema."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

graphql = pytest.importorskip("graphql")

from bot.github import queries as graphql_queries  # noqa: E402


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


def _module_documents() -> list[tuple[str, str]]:
    """Every module-level string in bot/ that is a GraphQL operation (other helpers' modules
    too, e.g. the /rltracker stop mutation), found by importing the modules."""
    import importlib
    import pkgutil

    import bot

    found: list[tuple[str, str]] = []
    for info in pkgutil.walk_packages(bot.__path__, "bot."):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that cannot import here sends nothing
            continue
        for name, value in vars(module).items():
            if isinstance(value, str) and value.lstrip().startswith(("query", "mutation")) \
                    and "{" in value and not name.startswith("__"):
                found.append((f"{info.name}.{name}", value))
    return found


@pytest.mark.parametrize("name,document", _module_documents(), ids=[n for n, _ in _module_documents()])
def test_module_document_validates(shared_dir: Path, name: str, document: str) -> None:
    schema = _schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    errors = graphql.validate(schema, graphql.parse(document))
    assert not errors, f"{name}: " + "; ".join(e.message for e in errors)


def test_known_senders_are_collected() -> None:
    names = {n for n, _ in _module_documents()}
    assert "bot.github.queries.RECEPTION_QUERY" in names


def test_builder_declares_only_used_variables(shared_dir: Path) -> None:
    doc, variables = graphql_queries.build_sync_query(
        [graphql_queries.StreamSlot("o", "n", "issue", 5, None)], []
    )
    assert "nestedReplies" not in variables and "nestedComments" in variables
    assert "DiscussionFields" not in doc
