"""What the project tells its users, checked against the code so the two cannot drift apart:
every environment variable the app reads is in README's Environment table (and every one
there is read, with the default it states); every event the webhook router handles is one
GitHub sends (subscribed in app.yaml, or sent to every app) and README names it; every HTTP
route is documented and every route README's HTTP table lists exists; every `rltracker`
command and option README and docs/ show exists; the `.github/rltracker.yml` settings
docs/comments.md shows are the ones the app reads. docs/analyzers.md (the analyzers'
measurement record) is not a user document and is left out."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = [ROOT / "README.md", ROOT / "examples" / "README.md"] + [
    p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "analyzers.md"]
# Sent to every GitHub App whatever it subscribes to (GitHub's docs, "Webhook events and
# payloads"); everything else arrives only when app.yaml's default_events names it.
ALWAYS_SENT = {"installation", "installation_repositories", "installation_target"}


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def _env_table() -> dict[str, str]:
    """README's Environment table: each variable named in the first column -> its row."""
    rows = {}
    for line in _section((ROOT / "README.md").read_text(), "## Environment").splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", first):
            rows[name] = line
    return rows


def _env_read_by_code() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"\benv(?:iron)?(?:\.get)?[\[(]\s*\"([A-Z][A-Z0-9_]+)\"", text))
        names |= set(re.findall(r"getenv\(\s*\"([A-Z][A-Z0-9_]+)\"", text))
    return names


def test_every_environment_variable_read_is_documented_and_every_documented_one_read() -> None:
    table = _env_table()
    read = _env_read_by_code()
    assert "DATABASE_URL" in read and "RLTRACKER_CACHE_DIR" in read  # the scan finds them
    everything_in_table = "\n".join(table.values())
    undocumented = sorted(n for n in read if n not in table and f"`{n}" not in everything_in_table
                          and f"${n}" not in everything_in_table)
    assert not undocumented, f"read by bot/ but not in README's Environment table: {undocumented}"
    unread = sorted(set(table) - read)
    assert not unread, f"in README's Environment table but read nowhere in bot/: {unread}"


def test_documented_defaults_are_the_code_defaults() -> None:
    from bot.config import Settings

    table = _env_table()
    settings = Settings.from_env({})
    defaults = {
        "DATABASE_URL": settings.database_url,
        "GITHUB_API_URL": settings.api_url,
        "PORT": str(settings.port),
        "RLTRACKER_WORKER_LEASE": f"{settings.worker_lease:g}",
        "RLTRACKER_NIGHTLY_CRON": settings.nightly_cron,
    }
    for name, value in defaults.items():
        default_cell = table[name].split("|")[2]
        assert f"`{value}`" in default_cell, (name, value, default_cell)
    assert settings.public_url == "http://localhost:8000"  # "http://localhost:PORT"
    assert settings.dry_run and not settings.fetch_papers  # "off" (dry run forced: no credentials)


def test_dockerfile_sets_only_variables_the_app_reads() -> None:
    text = (ROOT / "Dockerfile").read_text()
    env_block = re.search(r"^ENV (.*?)(?:\n\n|\n[A-Z])", text, re.M | re.S)
    assert env_block
    names = set(re.findall(r"\b([A-Z][A-Z0-9_]+)=", env_block.group(1)))
    ours = {n for n in names if not n.startswith(("PYTHON", "PIP_"))}
    assert ours and ours <= _env_read_by_code(), ours
    assert ours <= set(_env_table())


def _routed_events() -> set[str]:
    from bot.webhooks.routers import router

    return set(router._shallow_routes) | set(router._deep_routes)


def test_every_routed_event_is_delivered_and_every_subscribed_one_handled() -> None:
    manifest = yaml.safe_load((ROOT / "app.yaml").read_text())
    subscribed = set(manifest["default_events"])
    routed = _routed_events()
    never_sent = sorted(routed - subscribed - ALWAYS_SENT)
    assert not never_sent, f"handled but not subscribed in app.yaml (never delivered): {never_sent}"
    unhandled = sorted(subscribed - routed)
    assert not unhandled, f"subscribed in app.yaml but no handler: {unhandled}"
    events = _section((ROOT / "README.md").read_text(), "### Events")
    assert not [e for e in routed if f"`{e}`" not in events], "README's Events section"


def test_readme_permissions_are_app_yaml_permissions() -> None:
    manifest = yaml.safe_load((ROOT / "app.yaml").read_text())
    text = _section((ROOT / "README.md").read_text(), "### Permissions")
    rows = dict(re.findall(r"^\| (\w+) \| (read|write) \|", text, re.M))
    assert rows == manifest["default_permissions"]


def _app_routes() -> set[tuple[str, str]]:
    from sqlalchemy.ext.asyncio import create_async_engine

    from bot.app import create_app

    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    app = create_app(SimpleNamespace(engine=engine, extras={}), worker=False)
    return {(route.method, resource.canonical) for resource in app.router.resources()
            for route in resource if route.method != "HEAD"}


def _shape(path: str) -> str:
    """/api/threads/{owner}/{repo}/{number}/ -> /api/threads/{}/{}/{} (names and a trailing
    slash aside)."""
    path = re.sub(r"\{[^}]*\}", "{}", path)
    return path.rstrip("/") or "/"


def _documented_paths(text: str) -> set[str]:
    return {_shape(p.rstrip(".,;:")) for p in re.findall(r"(?<![\w.:/])(/[A-Za-z0-9_{}./-]*)", text)}


def test_every_route_is_documented() -> None:
    documented: set[str] = set()
    for doc in USER_DOCS:
        documented |= _documented_paths(doc.read_text(encoding="utf-8"))
    missing = sorted(path for _, path in _app_routes() if _shape(path) not in documented)
    assert not missing, f"routes the server answers that no user document names: {missing}"


def test_every_route_in_readme_http_table_exists() -> None:
    served = {(method, _shape(path)) for method, path in _app_routes()}
    section = _section((ROOT / "README.md").read_text(), "## Running it")
    rows = [line for line in section.splitlines() if re.match(r"\| `(GET|POST) ", line)]
    assert rows
    for row in rows:
        cell = row.split("|")[1]
        method = cell.split()[0].strip("`")
        for path in re.findall(r"(?<![\w.:/])(/[A-Za-z0-9_{}./-]*)", cell):
            assert (method, _shape(path)) in served, (method, path)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _command_mentions() -> list[tuple[str, str]]:
    """(document, text) for each `rltracker ...` command shown: the README's code lines and
    every inline code span starting with `rltracker `."""
    found = []
    for doc in USER_DOCS:
        text = doc.read_text(encoding="utf-8")
        for line in text.splitlines():
            code = re.match(r"^ {4}(?:\.venv/bin/)?(rltracker [^#]*)", line)
            if code:
                found.append((doc.name, code.group(1)))
        found += [(doc.name, span) for span in re.findall(r"`(rltracker [^`]*)`", text)]
    return found


def test_every_command_and_option_shown_exists() -> None:
    from bot.cli import build_parser

    top = build_parser()
    commands = _subparsers(top)
    checked = 0
    for doc, text in _command_mentions():
        words = text.split()[1:]
        if not words or words[0].startswith("-") and words[0] != "--debug":
            continue
        if words[0] == "--debug":
            words = words[1:]
        if words and words[0] not in commands:
            # /rltracker kind ... (comment commands) and prose ("rltracker speaks in ...")
            continue
        parser = commands[words[0]]
        for word in words[1:]:
            sub = _subparsers(parser)
            if word in sub:
                parser = sub[word]
            elif not sub or word.startswith(("-", "[", "<")) or word.isupper() or "/" in word:
                break
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", text):
            assert option in _options(parser) | _options(top), (doc, text, option)
        checked += 1
    assert checked > 20


def test_every_command_is_documented() -> None:
    from bot.cli import build_parser

    shown = " ".join(text for _, text in _command_mentions())
    for name, parser in _subparsers(build_parser()).items():
        assert f"rltracker {name}" in shown, name
        for sub in _subparsers(parser):
            assert f"rltracker {name} {sub}" in shown, (name, sub)


def test_repository_settings_documented_are_those_read() -> None:
    from bot.speaking.repo_config import RepoConfig, parse_config_text

    text = (ROOT / "docs" / "comments.md").read_text(encoding="utf-8")
    block = re.search(r"## `\.github/rltracker\.yml`\s*```yaml\n(.*?)```", text, re.S)
    assert block
    example = yaml.safe_load(block.group(1))
    read = set(RepoConfig.__dataclass_fields__) - {"source", "error"}
    assert set(example) == read
    parsed = parse_config_text(block.group(1))  # the example itself is a valid file
    assert parsed.source == "file" and parsed.error is None, parsed.error


@pytest.mark.parametrize("path", sorted((ROOT / "examples").rglob("*.json")), ids=lambda p: p.name)
def test_examples_listed_in_their_readme(path: Path) -> None:
    listing = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert f"`{path.relative_to(ROOT / 'examples')}`" in listing


def test_code_and_tests_named_in_the_docs_exist() -> None:
    """`bot.x.y` / `analyzers.x.y` names, `tests/test_x.py::test_name` and project file paths
    the documents point readers to."""
    import importlib

    missing = []
    for doc in USER_DOCS:
        text = doc.read_text(encoding="utf-8")
        for dotted in set(re.findall(r"`((?:bot|analyzers)(?:\.[A-Za-z_]\w*)+)", text)):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                break
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                missing.append((doc.name, dotted))
        for path, name in re.findall(r"(tests/test_\w+\.py)::(\w+)", text):
            source = ROOT / path
            if not source.is_file() or not re.search(rf"def {name}\b", source.read_text()):
                missing.append((doc.name, f"{path}::{name}"))
        for path in re.findall(r"\b((?:bot|analyzers|training|benchmarks|tests|templates|migrations|"
                               r"examples)/[\w./-]+\.(?:py|yaml|json|html|md|sh))\b", text):
            if not (ROOT / path).exists():
                missing.append((doc.name, path))
    assert not missing, missing


def test_every_comment_command_is_documented() -> None:
    from bot.webhooks.commands import COMMANDS

    commands = _section((ROOT / "docs" / "comments.md").read_text(encoding="utf-8"), "## Commands")
    permissions = _section((ROOT / "README.md").read_text(), "### Permissions")
    for word in COMMANDS:
        assert f"`/rltracker {word}" in commands, word
        assert word in permissions, word


@pytest.mark.parametrize(("api_url", "graphql"), [
    ("https://api.github.com", "https://api.github.com/graphql"),
    ("https://github.example.com/api/v3", "https://github.example.com/api/graphql"),
    ("https://github.example.com/api/v3/", "https://github.example.com/api/graphql"),
    ("https://api.octo.ghe.com", "https://api.octo.ghe.com/graphql"),
    ("http://127.0.0.1:8123", "http://127.0.0.1:8123/graphql"),
])
def test_graphql_endpoint_of_github_enterprise_server(api_url: str, graphql: str) -> None:
    """README: GITHUB_API_URL is `https://host/api/v3` for GitHub Enterprise Server, whose
    GraphQL endpoint is `https://host/api/graphql` (not `/api/v3/graphql`, a 404: sync,
    discussions, reactions on reviews and minimising comments all go through GraphQL)."""
    from bot.config import Settings

    assert Settings.from_env({"GITHUB_API_URL": api_url}).graphql_url == graphql


def test_nightly_steps_documented_in_order() -> None:
    from bot.scheduler import STEPS

    text = _section((ROOT / "docs" / "sync.md").read_text(encoding="utf-8"), "## The nightly job")
    shown = [m for m in re.findall(r"`(\w+)`", text.split("Every run is")[0])]
    names = [name for name, _ in STEPS]
    assert [n for n in shown if n in names] == names


def test_every_query_parameter_read_is_documented() -> None:
    read: set[str] = set()
    for path in [*(ROOT / "bot" / "site").rglob("*.py"), ROOT / "bot" / "app.py"]:
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"\b(?:query|q)(?:\.get\(|\[)\"([a-z_]+)\"", text))
    assert {"limit", "offset", "page", "days"} <= read  # the scan finds them
    docs = "\n".join(doc.read_text(encoding="utf-8") for doc in USER_DOCS)
    missing = sorted(key for key in read if not re.search(rf"[?&]{key}=|`{key}`", docs))
    assert not missing, f"query parameters the server reads that no user document names: {missing}"
