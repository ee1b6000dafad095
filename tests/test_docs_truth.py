"""What the project tells its users, checked against the code so the two cannot drift apart:
every environment variable the app reads is in README's Environment table (and every one
there is read, with the default it states); every event the webhook router handles is one
GitHub sends (subscribed in app.yaml, or sent to every app) and README names it; every HTTP
route is documented and every route README's HTTP table lists exists; every `rltracker`
command and option README and docs/ show exists; the `.github/rltracker.yml` settings
docs/comments.md shows are the ones the app reads; each command's `--help` says its exit
statuses as README's table does; the query parameters, page sizes, lock waits, test names
and modules the documents quote are the code's. docs/analyzers.md, the analyzers' reference,
is checked like the others; docs/history/ (the measurement journal: what each session measured,
naming branches, scratch scripts and code since reverted) is a record, not a user document, and
is left out but for its links."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HISTORY_DOCS = sorted((ROOT / "docs" / "history").glob("*.md"))
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
    """The variables the app reads: bot/, and migrations/ (env.py reads DATABASE_URL)."""
    names: set[str] = set()
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "migrations").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"\benv(?:iron)?(?:\.get)?[\[(]\s*\"([A-Z][A-Z0-9_]+)\"", text))
        names |= set(re.findall(r"getenv\(\s*\"([A-Z][A-Z0-9_]+)\"", text))
        # the app's own names wherever they stand whole in a string, e.g. the names a check
        # loops over (`for name in ("GITHUB_API_URL", ...)`), which the patterns above miss
        names |= set(re.findall(r"\"((?:RLTRACKER|GITHUB)_[A-Z0-9_]*[A-Z0-9])\"", text))
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


def test_documented_defaults_and_bounds_of_the_numbers_are_the_code_s() -> None:
    """The table's default and "checked" cells of the numeric settings, and the log level's."""
    from bot import config
    from bot.config import Settings

    table = _env_table()
    settings = Settings.from_env({})
    cells = {name: table[name].split("|") for name in table}
    assert f"`{settings.statement_timeout:g}`" in cells["RLTRACKER_STATEMENT_TIMEOUT"][2]
    assert f"{config.MAX_STATEMENT_TIMEOUT:.0f}" in cells["RLTRACKER_STATEMENT_TIMEOUT"][4]
    lease = cells["RLTRACKER_WORKER_LEASE"][4]
    assert f"at least {config.MIN_WORKER_LEASE:.0f}" in lease
    assert f"at most {config.MAX_WORKER_LEASE:.0f}" in lease
    assert f"`{config.log_level({})}`" in cells["RLTRACKER_LOG_LEVEL"][2]


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


def test_readme_http_table_lists_every_route() -> None:
    """The reverse of the test above: README's HTTP table, the operator's list of what the
    service answers, names every route (`/methods` and its kin were named in no table, the
    general check finding them as the start of longer paths)."""
    section = _section((ROOT / "README.md").read_text(), "## Running it")
    listed = {(row.split("|")[1].split()[0].strip("`"), _shape(path))
              for row in section.splitlines() if re.match(r"\| `(GET|POST) ", row)
              for path in re.findall(r"(?<![\w.:/])(/[A-Za-z0-9_{}./-]*)", row.split("|")[1])}
    missing = sorted((m, p) for m, p in _app_routes() if (m, _shape(p)) not in listed)
    assert not missing, f"routes README's HTTP table does not list: {missing}"


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


def test_the_nightly_steps_readme_s_map_and_study_md_name_are_the_scheduler_s() -> None:
    """README's architecture map (`scheduler.py   the nightly job: ...`) and docs/study.md's
    row of the `study` step name the nightly steps in the scheduler's order (the `settings`
    step, user79, was in neither)."""
    from bot.scheduler import STEPS

    said = {"reanalyse": "re-analysis"}
    names = [said.get(name, name) for name, _ in STEPS]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"scheduler\.py\s+the nightly job: ([^\n]+)", readme)
    assert line and [word.strip() for word in line.group(1).split(",")] == names
    study = " ".join((ROOT / "docs" / "study.md").read_text(encoding="utf-8").split())
    before = re.search(r"step `study` \| after ([^|]*?), before the report", study)
    assert before and re.split(r", | and ", before.group(1)) == names[:names.index("study")]


# ------------------------------------------------------------------ docs65: fresh eyes
# A value for each placeholder the documents' command lines use, so that each line can be
# given to the parser as a person would type it. A new placeholder fails the test below
# until it is given a value here.
PLACEHOLDER_VALUES = {
    "SECONDS": "5", "H": "127.0.0.1", "P": "8000", "N": "2", "URL": "http://localhost:8000/webhook",
    "S": "secret", "E": "issues", "FILE": "threads.jsonl", "F": "verl", "C": "cs.LG",
    "OWNER/NAME": "verl-project/verl", "INPUT": "-", "POOL": "pool.jsonl", "OUT": "-",
    "TARGET": "verl", "DIR": "out", "YYYY-MM-DD": "2026-01-01", "ID": "1f0e", "FILE_OR_DIR": "examples/",
    "<printed secret>": "secret",
}


def _code_lines() -> list[tuple[str, str]]:
    """(document, command) for each `rltracker SUBCOMMAND ...` line of a code block (four
    spaces in), its `# comment` dropped: the synopses of README's "Running it" and the
    demo's replay line. Error messages quoted the same way (`rltracker serve: ...`) are not
    commands."""
    found = []
    for doc in USER_DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            code = re.match(r"^ {4}(?:\.venv/bin/)?(rltracker [^#]*)", line)
            if code and not re.match(r"rltracker [\w-]+:", code.group(1)):
                found.append((doc.name, code.group(1).strip()))
    return found


def _typed(synopsis: str) -> list[list[str]]:
    """The argument lists a synopsis stands for, placeholders filled: `[--flag V]` given, and
    each side of `A... | --all` on its own (the alternative keeps the words before A)."""
    text = synopsis.replace("<printed secret>", "secret")
    first, *others = text.split(" | ")
    head = [w for w in first.split() if not w.strip("[]").startswith("-") and not w.endswith("...")
            and not w.strip("[]").isupper()]
    lines = [first] + [" ".join(head) + " " + other for other in others]
    typed = []
    for line in lines:
        argv = []
        for word in line.replace("[", " ").replace("]", " ").split()[1:]:
            word = word.removesuffix("...")
            if not word:  # `[--repo OWNER/NAME]...`: the option once stands for its repeats
                continue
            if word.isupper() or word in PLACEHOLDER_VALUES:
                assert word in PLACEHOLDER_VALUES, f"give the placeholder {word} a value ({synopsis})"
                word = PLACEHOLDER_VALUES[word]
            argv.append(word)
        typed.append(argv)
    return typed


def test_every_documented_command_line_parses() -> None:
    """Each synopsis and example line, typed as shown, is accepted by the parser: an option
    that takes a value shown without one (or the reverse), a positional shown in the wrong
    place, a value the option's type refuses, all fail here (the option-name check above
    reads names only)."""
    import contextlib
    import io

    from bot.cli import build_parser

    lines = _code_lines()
    assert len(lines) > 15  # README's "Running it" block is found
    refused = []
    for doc, synopsis in lines:
        for argv in _typed(synopsis):
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr):
                    build_parser().parse_args(argv)
            except SystemExit as exc:
                if exc.code:
                    refused.append((doc, synopsis, argv, stderr.getvalue().strip()))
    assert not refused, refused


def _all_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from bot.cli import build_parser

    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        found.append((name, parser))
        for sub, child in _subparsers(parser).items():
            walk(child, f"{name} {sub}")

    walk(build_parser(), "rltracker")
    return found


def test_every_cli_option_is_documented() -> None:
    """The reverse of the check above: every option of every command is shown with it in a
    document (either of its spellings, `-o` or `--output`)."""
    mentions = [text for _, text in _command_mentions()]
    missing = []
    for name, parser in _all_parsers()[1:]:
        shown = " ".join(t for t in mentions if t == name or t.startswith(name + " "))
        for action in parser._actions:
            spellings = [s for s in action.option_strings if s not in ("-h", "--help", "--debug")]
            if spellings and not any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", shown)
                                     for s in spellings):
                missing.append((name, spellings))
    assert not missing, f"options no document shows with their command: {missing}"


def test_every_argument_has_help() -> None:
    """`rltracker COMMAND --help` says what each option and argument is: `replay --url`,
    `sync --repo`, `preview --days`, `stats --json` were listed with no word about them."""
    bare = [(name, action.option_strings or action.dest) for name, parser in _all_parsers()
            for action in parser._actions
            if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert not bare, f"arguments whose --help says nothing: {bare}"


def test_defaults_the_help_states_are_the_parser_defaults() -> None:
    """`(default 50)`, `(default: 100)` in an option's help is the value it gets unset (an
    option whose default None is decided by its command, as `migrate --wait`, is not
    compared)."""
    wrong = []
    for name, parser in _all_parsers():
        for action in parser._actions:
            stated = re.search(r"default:? (\d+)\b", action.help or "")
            if stated and isinstance(action.default, int) and not isinstance(action.default, bool) \
                    and action.default != int(stated.group(1)):
                wrong.append((name, action.option_strings, stated.group(0), action.default))
    assert not wrong, wrong


def test_environment_variables_the_tests_read_are_documented() -> None:
    """The knobs of the test suite (a PostgreSQL server, failing instead of skipping, where
    screenshots go, the crash test's size) are named in README, as the app's are."""
    read: set[str] = set()
    for path in (ROOT / "tests").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"environ(?:\.get)?[\[(]\s*\"([A-Z][A-Z0-9_]+)\"", text))
    read -= {"PATH", "HOME", "PYTHONPATH", "TZ", "LANG", "LC_ALL"} | _env_read_by_code()
    assert "TEST_DATABASE_URLS" in read  # the scan finds them
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not sorted(n for n in read if f"`{n}" not in readme), "README: the test suite's variables"


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M)
    assert phony
    # the rules a person types (`run:`, not `$(BIN)/python:` nor `HOST := ...`) are the .PHONY
    # list: one left out of it would be neither documented nor checked
    rules = set(re.findall(r"^([a-z][a-z-]*):(?!=)", text, re.M))
    assert rules == set(phony.group(1).split()), rules ^ set(phony.group(1).split())
    return rules


# `make` targets of other projects the documents quote (docs/rules.md: the lint scripts a
# CONTRIBUTING file may name).
OTHER_PROJECTS_MAKE = {"style"}


def test_make_targets_documented_exist_and_every_target_is_documented() -> None:
    targets = _makefile_targets() | OTHER_PROJECTS_MAKE
    docs = "\n".join(doc.read_text(encoding="utf-8") for doc in USER_DOCS)
    shown = set(re.findall(r"`make ([a-z][a-z-]*)", docs)) | set(
        re.findall(r"^ {4}make ([a-z][a-z-]*)", docs, re.M))
    assert not sorted(shown - targets), "make targets the documents show that the Makefile lacks"
    assert not sorted(targets - shown), "Makefile targets no document shows"


def test_dockerfile_copies_what_the_app_reads_and_runs_migrate_then_serve() -> None:
    """README: the image runs `rltracker migrate && rltracker serve` on SQLite under /data and
    checks /healthz. The app reads its templates, migrations and alembic.ini beside the
    packages (bot.config); each must be in the image."""
    from bot.config import ALEMBIC_INI, MIGRATIONS_DIR, TEMPLATES_DIR

    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copied = {word.rstrip("/") for line in re.findall(r"^COPY (.*)$", text, re.M)
              for word in line.split()[:-1]}
    packages = set(tomllib_loads()["tool"]["setuptools"]["packages"]["find"]["include"])
    needed = {p.rstrip("*") for p in packages} | {
        path.relative_to(ROOT).as_posix() for path in (ALEMBIC_INI, MIGRATIONS_DIR, TEMPLATES_DIR)}
    assert needed <= copied, sorted(needed - copied)
    command = re.search(r"^CMD (.*)$", text, re.M)
    assert command and re.search(r"rltracker migrate && exec rltracker serve\b", command.group(1))
    assert "DATABASE_URL=sqlite+aiosqlite:////data/" in text and 'VOLUME ["/data"]' in text
    health = re.search(r"^HEALTHCHECK(?:.*\\\n)*.*$", text, re.M)
    assert health and "/healthz" in health.group(0)
    assert ("GET", "/healthz") in _app_routes()


def tomllib_loads() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


# What each GitHub call the app makes needs of the installation (GitHub's docs, "Permissions
# required for GitHub Apps"): REST paths as written in bot/ (f-string fields and URI-template
# variables as {}), GraphQL mutations by name. Calls made with the app's JWT, and the
# transport (/graphql), need none. A call not listed fails the test below: add it here with
# what it needs, and to app.yaml and README's table if that is a new permission.
LEVELS = {"read": 1, "write": 2}
GITHUB_CALLS: dict[str, set[tuple[str, str]]] = {
    "/app": set(), "/app/installations/{}": set(), "/app/installations/{}/access_tokens": set(),
    "/app/hook/deliveries": set(), "/app/hook/deliveries/{}/attempts": set(),
    "/repos/{}/{}/installation": set(), "/installation/repositories": set(),
    "/rate_limit": set(), "/graphql": set(),
    "/repos/{}/{}": {("metadata", "read")},
    "/repositories/{}": {("metadata", "read")},
    "/repos/{}/{}/collaborators/{}/permission": {("metadata", "read")},
    "/repos/{}/contents": {("contents", "read")},
    "/repos/{}/contents/{}": {("contents", "read")},
    "/repos/{}/git/trees/HEAD": {("contents", "read")},  # the rules' package guides (fetch75)
    # an issue or a pull request read through the issues API
    "/repos/{}/issues/{}": {("issues", "read"), ("pull_requests", "read")},
    # comments posted, edited, read on issues and on pull requests' conversations
    "/repos/{}/issues/{}/comments": {("issues", "write"), ("pull_requests", "write")},
    "/repos/{}/issues/comments/{}": {("issues", "write"), ("pull_requests", "write")},
    "/repos/{}/{}/issues/comments/{}": {("issues", "write")},  # the nightly report's issue
    "/repos/{}/issues/{}/labels": {("issues", "write")},
    # the config's label read, and created when missing (user77)
    "/repos/{}/labels/{}": {("issues", "read"), ("pull_requests", "read")},
    "/repos/{}/labels": {("issues", "write"), ("pull_requests", "write")},
    "/repos/{}/issues/{}/reactions": {("issues", "write"), ("pull_requests", "write")},
    # {} is issues or pulls: a 👍 on an issue comment or on a review comment
    "/repos/{}/{}/comments/{}/reactions": {("issues", "write"), ("pull_requests", "write")},
    "/repos/{}/pulls/{}": {("pull_requests", "read")},
    "mutation addDiscussionComment": {("discussions", "write")},
    # on a discussion, its comments, a pull request review
    "mutation addReaction": {("discussions", "write"), ("pull_requests", "write")},
    # the app's own failure comment on an issue
    "mutation minimizeComment": {("issues", "write")},
    "mutation unminimizeComment": {("issues", "write")},
}
# What an installation must grant for GitHub to deliver each event.
EVENT_PERMISSIONS = {
    "issues": "issues", "issue_comment": "issues", "pull_request": "pull_requests",
    "pull_request_review": "pull_requests", "pull_request_review_comment": "pull_requests",
    "discussion": "discussions", "discussion_comment": "discussions", "repository": "metadata",
}


def _github_calls() -> dict[str, set[str]]:
    """Each REST path (from the strings of bot/ that start like GitHub's API paths) and GraphQL
    mutation the code holds -> the modules holding it. The app's own routes (`/repos/`, a
    preview page) are left out."""
    import ast

    ours = {_shape(path) for _, path in _app_routes()}
    calls: dict[str, set[str]] = {}
    for path in (ROOT / "bot").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parts = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                 for part in node.values}  # an f-string's pieces: read with it, not alone
        for node in ast.walk(tree):
            if id(node) in parts:
                continue
            if isinstance(node, ast.JoinedStr):
                text = "".join(part.value if isinstance(part, ast.Constant) else "{}"
                               for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            mutation = re.match(r"\s*mutation\b[^{]*\{\s*(\w+)", text)
            if mutation:
                key = f"mutation {mutation.group(1)}"
            elif re.fullmatch(r"/(?:repos|repositories|app|installation|rate_limit|orgs|users?|"
                              r"search|graphql|notifications|gists)\b[\w{}/.-]*(?:\?\S*)?", text):
                key = re.sub(r"\{[^}]*\}", "{}", text.partition("?")[0])
                if _shape(key) in ours:
                    continue
            else:
                continue
            calls.setdefault(key, set()).add(path.relative_to(ROOT).as_posix())
    return calls


def test_app_yaml_grants_what_every_github_call_needs_and_nothing_more() -> None:
    manifest = yaml.safe_load((ROOT / "app.yaml").read_text())
    granted = manifest["default_permissions"]
    calls = _github_calls()
    assert "/repos/{}/issues/{}/comments" in calls and "mutation addDiscussionComment" in calls
    unknown = {call: sorted(where) for call, where in calls.items() if call not in GITHUB_CALLS}
    assert not unknown, f"GitHub calls whose permission is not known to this test: {unknown}"
    needed: set[tuple[str, str]] = set()
    for call in calls:
        needed |= GITHUB_CALLS[call]
    for event in manifest["default_events"]:
        needed.add((EVENT_PERMISSIONS[event], "read"))
    short = sorted((p, lvl) for p, lvl in needed if LEVELS[lvl] > LEVELS.get(granted.get(p, ""), 0))
    assert not short, f"app.yaml grants less than the code needs: {short}"
    unused = sorted(p for p in granted if p not in {p for p, _ in needed})
    assert not unused, f"app.yaml grants permissions no call or event needs: {unused}"
    over = sorted(p for p, lvl in granted.items()
                  if LEVELS[lvl] > max(LEVELS[n] for q, n in needed if q == p))
    assert not over, f"app.yaml grants a higher level than any call needs: {over}"


def test_commands_readme_says_read_no_setting_run_with_every_setting_bad(tmp_path: Path) -> None:
    """README, "Environment": `analyze`, `replay` and `rules FOLDER` read none of the app's
    settings, so a bad one does not stop them; `rules FRAMEWORK` (which may read the
    database) is refused as every other command is."""
    from tests.test_cli import run_cli
    from tests.test_crash_recovery import free_port

    bad = {"DATABASE_URL": "bogus", "PORT": "x", "GITHUB_API_URL": "ftp://x",
           "RLTRACKER_NIGHTLY_CRON": "99 * *", "RLTRACKER_DRY_RUN": "perhaps"}
    (tmp_path / "CONTRIBUTING.md").write_text("Please add tests with every change.\n")
    (tmp_path / "empty.jsonl").write_text("")
    analyzed = run_cli("analyze", str(tmp_path / "empty.jsonl"), env=bad)
    assert analyzed.returncode == 0, analyzed.stderr
    summarised = run_cli("rules", str(tmp_path), env=bad)
    assert summarised.returncode == 0 and "Tests" in summarised.stdout, summarised.stderr
    sent = run_cli("replay", str(ROOT / "examples" / "issues" / "opened.failure-en.json"),
                   "--url", f"http://127.0.0.1:{free_port()}/webhook", "--secret", "s", env=bad)
    assert sent.returncode == 1 and "cannot connect" in sent.stderr, sent.stderr
    refused = run_cli("rules", "verl", env=bad)
    assert refused.returncode == 2 and "DATABASE_URL=bogus" in refused.stderr, refused.stderr


# The parameters of a GitHub App manifest (GitHub's docs, "Registering a GitHub App from a
# manifest"): README says app.yaml converts to JSON unchanged and is such a manifest.
MANIFEST_PARAMETERS = {"name", "url", "hook_attributes", "redirect_url", "callback_urls",
                       "setup_url", "description", "public", "default_events",
                       "default_permissions", "request_oauth_on_install", "setup_on_update"}


def test_app_yaml_is_a_manifest_github_takes_as_it_is() -> None:
    manifest = yaml.safe_load((ROOT / "app.yaml").read_text())
    assert set(manifest) <= MANIFEST_PARAMETERS, sorted(set(manifest) - MANIFEST_PARAMETERS)
    assert set(manifest["hook_attributes"]) <= {"url", "active"}
    assert manifest["hook_attributes"]["url"].endswith("/webhook")  # README, step 1
    assert ("POST", "/webhook") in _app_routes()
    assert isinstance(manifest["public"], bool)


async def test_every_metric_served_is_named_in_the_docs_and_every_one_named_is_served(
        sqlite_ctx: object) -> None:
    """docs/site.md, "/metrics": an operator writes alerts with the names; the webhook and the
    inbox writer's families were described in words only."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    # with its inbox worker, as `serve` runs (without one the workers' outcomes are left out)
    async with TestClient(TestServer(create_app(sqlite_ctx, worker=True))) as client:
        text = await (await client.get("/metrics")).text()
    served = set(re.findall(r"^# TYPE (\w+) ", text, re.M))
    assert "rltracker_database_up" in served
    section = _section((ROOT / "docs" / "site.md").read_text(encoding="utf-8"), "## /metrics")
    named = set(re.findall(r"\b(rltracker_[a-z_]+[a-z])\b", section))
    assert not sorted(served - named), "metrics docs/site.md's /metrics section does not name"
    assert not sorted(named - served), "metrics docs/site.md names that /metrics does not serve"
    everywhere = {name for doc in USER_DOCS
                  for name in re.findall(r"\b(rltracker_[a-z_]+[a-z])\b", doc.read_text(encoding="utf-8"))}
    # (README's /metrics row names three; a name in any document is one served)
    assert not sorted(everywhere - served), "metrics a document names that /metrics does not serve"


def test_relative_links_in_the_documents_lead_to_files() -> None:
    """`[docs/site.md](docs/site.md)`, `[study.md](study.md)`: each relative Markdown link,
    read from the document's folder as GitHub reads it, names a file of the project."""
    broken, checked = [], 0
    for doc in [*USER_DOCS, *HISTORY_DOCS]:
        for target in re.findall(r"\]\(([\w./-]+\.\w+)(?:#[\w-]*)?\)", doc.read_text(encoding="utf-8")):
            checked += 1
            if not (doc.parent / target).exists():
                broken.append((doc.name, target))
    assert checked > 20 and not broken, broken


def _statuses(text: str) -> set[int]:
    """The exit statuses an `exit status: 0 ...; 1 ...; 2 ...` text names."""
    return {int(n) for n in re.findall(r"(?:exit status: |; )(\d+) ", " ".join(text.split()))}


def test_every_command_s_help_says_its_exit_statuses_and_readme_s_table_names_them() -> None:
    """README, "When something is wrong": "each command's `--help` says what its own mean".
    `serve`, `migrate`, `sync`, `stats`, `study`, `preview` and `papers fetch` said nothing,
    and a subcommand's --help (`deliveries retry`) showed none of its command's; `sync`'s 2
    for a repository it could not read was in docs/sync.md only. Each parser's epilog names
    its statuses; every one named is a row of README's table, and every row is named by some
    command."""
    section = _section((ROOT / "README.md").read_text(encoding="utf-8"), "### When something is wrong")
    table = {int(n) for n in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert {0, 1, 2} <= table
    silent, named = [], set()
    for name, parser in _all_parsers():
        statuses = _statuses(parser.epilog or "")
        if not {0, 1, 2} <= statuses:
            silent.append(name)
        named |= statuses
    assert not silent, f"--help says nothing of the exit statuses of: {silent}"
    assert not sorted(named - table), "exit statuses a --help names that README's table lacks"
    assert not sorted(table - named), "exit statuses README's table names that no --help does"


def _query_parameters_read() -> set[str]:
    """The query-string parameters the app's routes read: `request.query.get("x")`, `"x" in
    request.query`, and the same on a name bound to `request.query` (`q = request.query`) or
    on a `query` argument (`api_paging(query, ...)`)."""
    names: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        aliases = {"query", *re.findall(r"\b(\w+) = request\.query\b", text)}
        holder = rf"(?:\brequest\.query|\b(?:{'|'.join(sorted(aliases))}))"
        names |= set(re.findall(rf"{holder}(?:\.get\(|\[)\s*\"(\w+)\"", text))
        names |= set(re.findall(rf"\"(\w+)\" in {holder}\b", text))
        # a second list of one answer paged by `api_paging(..., prefix="comments_")` (bounds79)
        names |= {f"{prefix}{name}" for prefix in re.findall(r"\bprefix=\"(\w+)\"", text)
                  for name in ("limit", "offset")}
    return names


# Parameters the documents show on a route that the app does not read, on purpose: the 301 of
# a framework page keeps a query string it does not read (docs/site.md).
SHOWN_UNREAD_PARAMETERS = {"from"}


def _documented_queries() -> list[tuple[str, str, str]]:
    """(document, path, parameter) for each `/path?a=1&b=2` the documents show on a route of
    the app (its path matching one of the routes)."""
    patterns = [re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/?]+", re.escape(path)) + "/?")
                for _, path in _app_routes()]
    found = []
    for doc in USER_DOCS:
        text = doc.read_text(encoding="utf-8")
        for path, query in re.findall(r"(?<![\w.:/])(/[A-Za-z0-9_{}./-]*)\?([^\s`)\]>]+)", text):
            if any(p.fullmatch(path) for p in patterns):
                found += [(doc.name, path, name) for name in re.findall(r"(?:^|&)(\w+)=", query)]
    return found


def test_every_query_parameter_read_is_documented_and_every_one_shown_is_read() -> None:
    """(It replaces a check of the first direction alone, which took a backticked word for a
    parameter shown.) The HTML lists' `?after=` / `?before=` cursors (site66), `?page=`, the API's `limit`,
    `offset`, `after`, the filters, `?bom=`, `?days=`, `?reload=`: each parameter a route reads
    is shown as one (`?name=` or `&name=`) in a user document, and each one the documents show
    on a route is read (a typo, or one a change dropped, would be ignored in silence)."""
    read = _query_parameters_read()
    assert {"after", "before", "page", "limit", "offset", "framework"} <= read  # the scan finds them
    docs = "\n".join(doc.read_text(encoding="utf-8") for doc in USER_DOCS)
    undocumented = sorted(n for n in read if not re.search(rf"[?&]{n}=", docs))
    assert not undocumented, f"query parameters read but shown as ?name= in no document: {undocumented}"
    shown = _documented_queries()
    assert len(shown) > 20
    unread = sorted({(doc, path, name) for doc, path, name in shown
                     if name not in read | SHOWN_UNREAD_PARAMETERS})
    assert not unread, f"query parameters the documents show that no route reads: {unread}"


def test_the_lock_waits_readme_and_migrate_s_help_state_are_the_code_s() -> None:
    """`migrate --wait` (its default is decided by the command, so the check of the help's
    defaults above passes it by), the 3 s a try of a migration waiting for a table lock
    (leftc66), and the app's own `lock_timeout`: README and `migrate --help` quote them."""
    from bot.store.db import LOCK_TIMEOUT
    from bot.store.migrate import MIGRATION_LOCK_TIMEOUT, MIGRATION_WAIT

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    migrate = dict(_all_parsers())["rltracker migrate"]
    wait = next(a for a in migrate._actions if "--wait" in a.option_strings)
    described = " ".join((migrate.description or "").split())
    assert f"`--wait SECONDS`, default {MIGRATION_WAIT}," in readme
    assert f"(default {MIGRATION_WAIT})" in (wait.help or "")
    for text in (readme, described):
        assert f"waited for {MIGRATION_LOCK_TIMEOUT:g} s a try" in text
    app_lock = int(LOCK_TIMEOUT.removesuffix("s"))
    assert f"`lock_timeout` = {app_lock} s" in readme
    assert f"not granted within {app_lock} s" in readme


def test_test_files_and_test_names_the_documents_cite_exist() -> None:
    """The reviews cite their tests by a bare file name (docs/app.md's table: `test_site.py`)
    or a bare function name (`test_html_lists_link_their_pages_by_cursor_both_ways`, a
    `test_..._` cut short with `...`); the check above reads only `tests/test_x.py::name`.
    A test renamed or removed leaves a review pointing at nothing."""
    files = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    defined = set()
    for path in (ROOT / "tests").glob("*.py"):
        defined |= set(re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.M))
    missing, checked = [], 0
    for doc in USER_DOCS:
        text = doc.read_text(encoding="utf-8")
        for name in set(re.findall(r"(?<![\w/])(test_\w+\.py)\b", text)):
            checked += 1
            if name not in files:
                missing.append((doc.name, name))
        for name, cut in set(re.findall(r"(?<![\w/:.])(test_\w+)\b(?!\.py)(\.\.\.)?", text)):
            checked += 1
            known = defined | {f.removesuffix(".py") for f in files}  # or a file, `test_sync`
            if not (any(d.startswith(name) for d in known) if cut else name in known):
                missing.append((doc.name, name))
    assert checked > 50 and not missing, missing


# Packages of bot/ README's architecture map lists module by module (cli/ and store/ it
# describes as a whole).
MAPPED_PACKAGES = ("site", "speaking", "webhooks", "github")


def test_readme_architecture_map_names_every_module_and_only_modules_that_exist() -> None:
    """README's "Architecture map" is where a new reader looks for a file: each module of bot/
    and of its mapped packages is named there (bot/site/conditional.py, the pages' ETag and
    304s, was not), and each `x.py` it names in a package is a file of that package."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = _section(readme, "## Architecture map").split("```")[1]
    lines = block[block.index("\nbot/"):block.index("\nmigrations/")].splitlines()
    named: dict[str | None, set[str]] = {}
    package: str | None = None
    for line in lines:
        header = re.match(r"^  (\w+)/\s", line)
        if header:
            package = header.group(1)
        elif re.match(r"^  \w", line):
            package = None
        named.setdefault(package, set()).update(re.findall(r"\b(\w+\.py)\b", line))
    in_block = set().union(*named.values())
    problems = [f"bot/{p.name} not in the map" for p in (ROOT / "bot").glob("*.py")
                if p.name != "__init__.py" and p.name not in in_block]
    for package in MAPPED_PACKAGES:
        files = {p.name for p in (ROOT / "bot" / package).glob("*.py")} - {"__init__.py"}
        problems += [f"bot/{package}/{name} not in the map" for name in sorted(files - named[package])]
        problems += [f"the map's {package}/{name} does not exist" for name in sorted(named[package] - files)]
    assert not problems, problems


def test_page_sizes_and_limits_the_documents_quote_are_the_code_s() -> None:
    """The sizes README's HTTP table and docs/site.md's page and JSON tables quote, each
    against the constant it describes."""
    from bot.config import WEBHOOK_BODY_LIMIT
    from bot.site import data, pages, verdicts
    from bot.site.exports import EXPORT_PAGE

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    site = " ".join((ROOT / "docs" / "site.md").read_text(encoding="utf-8").split())
    assert f"413 body over {WEBHOOK_BODY_LIMIT // 2**20} MiB" in readme
    assert f"`limit` (at most {EXPORT_PAGE:,})" in readme
    assert f"all proposals, {pages.PROPOSALS_PAGE} a page" in site
    assert f"the threads naming it, newest first, {data.LIST_ROWS} a page" in site
    assert f"its reports newest first, {pages.REPORTS_PAGE} a page" in site
    assert f"the verdicts latest first, {verdicts.LIST_ROWS} a page" in site
    assert f"`limit` (at most {data.MAX_ROWS:,}, the default)" in site
    assert f"`limit` {data.LIST_ROWS} by default, at most {data.MAX_ROWS:,}" in site
    assert f"the same way, {pages.REPORTS_PAGE} by default" in site
    from bot.site.feeds import FEED_ROWS

    assert f"one per nightly report, newest first, at most {FEED_ROWS}" in site
    assert f"the {FEED_ROWS} most recently changed first" in site
    # a thread's bounds (left78, bounds79): the page's latest changes and actions, the
    # JSON's review history and comments pages
    from bot.site import api, threads

    assert f"the latest {threads.HISTORY_SHOWN} changes of its stored review state" in site
    assert f"The thread page shows the latest {threads.HISTORY_SHOWN} and says" in site
    assert f"its latest {threads.ACTIONS_SHOWN} Action rows" in site
    assert f"The thread page shows a thread's latest {threads.ACTIONS_SHOWN} actions" in site
    assert f"its latest `limit` changes ({api.HISTORY_LIMIT} by default, at most {api.HISTORY_MAX:,};" in site
    comments = f"`comments_limit` ({api.COMMENTS_LIMIT} by default, at most {api.COMMENTS_MAX:,})"
    assert comments in site and comments in readme


def test_every_variable_the_documents_name_is_read() -> None:
    """README's table is checked both ways above; the other pages name variables too
    (docs/sync.md `RLTRACKER_ARXIV_API_URL`, docs/performance.md the test suite's): each
    `RLTRACKER_*` or `GITHUB_*` name anywhere in a user document is one the app or the
    tests read (a renamed or removed variable leaves no page behind)."""
    read = set(_env_read_by_code())
    for path in (ROOT / "tests").glob("*.py"):
        read |= set(re.findall(r"\"((?:RLTRACKER|GITHUB)_[A-Z0-9_]*[A-Z0-9])\"",
                               path.read_text(encoding="utf-8")))
    named = {(doc.name, name) for doc in USER_DOCS for name in re.findall(
        r"\b((?:RLTRACKER|GITHUB)_[A-Z0-9_]*[A-Z0-9])\b", doc.read_text(encoding="utf-8"))}
    assert len(named) > 20
    unread = sorted((doc, name) for doc, name in named if name not in read)
    assert not unread, f"variables the documents name that nothing reads: {unread}"


def test_the_error_lines_the_documents_quote_are_printed_as_quoted(tmp_path: Path) -> None:
    """README, "When something is wrong", shows the one line a bad setting gets: each such
    code line (`rltracker COMMAND: VARIABLE='value': ...`) is, word for word, what the
    command prints with that setting, and its status is 2."""
    from tests.test_cli import run_cli

    quoted = []
    for doc in USER_DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            shown = re.match(r"^ {4}(rltracker ([a-z-]+): ([A-Z][A-Z0-9_]+)=('([^']*)'|[^\s:']+): .*)$", line)
            if shown:
                quoted.append((doc.name, shown))
    assert quoted
    for doc, shown in quoted:
        line, command, variable, value = shown.group(1, 2, 3, 4)
        value = shown.group(5) if value.startswith("'") else value
        result = run_cli(command, env={variable: value,
                                       "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/none.db"})
        assert (result.returncode, result.stderr.strip()) == (2, line), doc


def test_the_commands_readme_says_refuse_a_database_of_another_version_are_those_that_check() -> None:
    """README, "Running it": the commands listed as refusing a database behind or ahead of
    the migrations (`rules FRAMEWORK` aside, which checks when it reads the cache) are the
    ones `bot.cli` checks before they start, and `serve`, `migrate` and those named as using
    no database are the rest."""
    from bot.cli import COMMANDS, NEEDS_DATABASE

    text = " ".join(_section((ROOT / "README.md").read_text(encoding="utf-8"), "## Running it").split())
    listed = re.search(r"Every other command that reads or writes the database \(([^)]*)\)", text)
    assert listed
    named = set(re.findall(r"`(\w+)`", listed.group(1)))
    assert named == set(NEEDS_DATABASE), named ^ set(NEEDS_DATABASE)
    without = re.search(r"`analyze`, `replay` and `rules FOLDER` use no database", text)
    assert without and set(COMMANDS) == named | {"serve", "migrate", "rules", "analyze", "replay"}


def test_the_frameworks_readme_and_rules_help_name_are_the_catalog_s() -> None:
    """README's first lines name the seven frameworks as the catalog names them, and `rules
    --help` lists the ids it takes: both the catalog's, in its order."""
    from analyzers.catalog import load_catalog

    frameworks = load_catalog().frameworks
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    names = ", ".join(f.name for f in frameworks.values())
    count = "zero one two three four five six seven eight nine ten".split()[len(frameworks)]
    assert f"of {count} RL post-training frameworks" in readme
    assert f"post-training frameworks ({names})" in readme
    rules = dict(_all_parsers())["rltracker rules"]
    target = next(a for a in rules._actions if a.dest == "target")
    assert f"({', '.join(frameworks)}; any case)" in " ".join((target.help or "").split())


def test_the_python_readme_asks_for_is_pyproject_s_and_the_image_s() -> None:
    """Quick start's "Python 3.11+" is pyproject's requires-python, and the image README
    names (`python:3.11-slim`) is the Dockerfile's."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    required = re.fullmatch(r">=(\d+\.\d+)", tomllib_loads()["project"]["requires-python"])
    assert required and f"Needs only Python {required.group(1)}+" in readme
    image = re.search(r"^FROM (\S+)", (ROOT / "Dockerfile").read_text(encoding="utf-8"), re.M)
    assert image and f"`Dockerfile`: {image.group(1)}," in readme


def test_the_languages_rules_md_says_are_glossed_are_the_patterns_ones() -> None:
    """docs/rules.md's Pieces table names every Latin-script language the rule patterns gloss
    (`latin_languages`), and no other: Italian joined them (rules77) while the page said five."""
    patterns = yaml.safe_load((ROOT / "analyzers" / "rules_patterns.yaml").read_text(encoding="utf-8"))
    glossed = {name.capitalize() for name in patterns["latin_languages"]}
    pieces = _section((ROOT / "docs" / "rules.md").read_text(encoding="utf-8"), "## Pieces")
    said = re.search(r"`latin_languages`: ([^`]+?), each", pieces)
    assert said, "docs/rules.md's Pieces table no longer lists `latin_languages`"
    assert set(re.split(r",\s*", said.group(1))) == glossed


def test_the_review_history_sources_site_md_names_are_the_store_s() -> None:
    """docs/site.md's review history (under "Proposals") names each `source` a
    review_transitions row can have, as bot.store.history records them."""
    from bot.store.history import SOURCES

    proposals = _section((ROOT / "docs" / "site.md").read_text(encoding="utf-8"), "## Proposals")
    history = proposals[proposals.index("**Review history.**"):]
    assert [source for source in SOURCES if f"`{source}`" not in history] == []


def _letters(spans: str) -> set[str]:
    """"A-I, K-Z and AA-AD" -> {"A", ..., "I", "K", ..., "AD"} (one- or two-letter set names)."""
    def index(name: str) -> int:
        return sum((ord(c) - 64) * 26 ** i for i, c in enumerate(reversed(name)))

    def name(n: int) -> str:
        return chr(64 + n) if n <= 26 else chr(64 + (n - 1) // 26) + chr(65 + (n - 1) % 26)

    found: set[str] = set()
    for first, last in re.findall(r"\b([A-Z]{1,2})(?:-([A-Z]{1,2}))?\b", spans):
        found |= {name(n) for n in range(index(first), index(last or first) + 1)}
    return found


def test_the_reading_bounds_and_sets_rules_md_states_are_the_code_s() -> None:
    """docs/rules.md's Pieces and Production: the written rule sets there are, the workflows
    read, and each bound of one repository's read, against `bot.speaking.contribution`
    (fetch79 moved MAX_REPO_REQUESTS, shared the linked pages between package guides and
    named the docs sites' folders; sets AA to AD came after "sets A-I and K-Z")."""
    from bot.speaking import contribution as c

    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    pieces = " ".join(_section(text, "## Pieces").split())
    sets = re.search(r"fictional projects' contribution files \(sets ([A-Z ,and-]+)\)", pieces)
    folders = {p.name.upper() for p in (ROOT / "benchmarks" / "rules_written").iterdir() if p.is_dir()}
    assert sets and _letters(sets.group(1)) == folders, sets
    production = " ".join(_section(text, "## Production").split())
    workflows = re.search(r"the workflows whose names mention ([^.]+?)\.", production)
    assert workflows and set(re.split(r", | or ", workflows.group(1))) == set(
        c.WORKFLOW_NAMES.pattern.replace("-?", "-").split("|"))
    docs_sites = re.search(r"under a docs site's folder \(([^:]+):", production)
    assert docs_sites and set(re.findall(r"`(\w+)/`", docs_sites.group(1))) == c.DOCS_SITE_FOLDERS
    for said in (f"{c.MAX_FOLDER_FILES} files of each folder",
                 f"up to {c.MAX_LINKED_PAGES} Markdown / reStructuredText / text pages",
                 f"at most {c.MAX_GUIDE_DEPTH} deep below the root",
                 f"{c.MAX_PACKAGE_GUIDES} folders at most",
                 f"with up to {c.MAX_LINKED_PAGES} pages they link to, for all of them together",
                 f"(at most {c.MAX_REPO_REQUESTS}:",
                 f"cached for {c.MAX_AGE.total_seconds() / 3600:.0f} hours"):
        assert said in production, said
    safety = " ".join(_section(text, "## Safety").split())
    assert f"A file over {c.MAX_FILE_BYTES // 1024} KiB is read to its first" in safety


# docs/rules.md's reference sections (the rest of the page is its reviews, which name code
# as it was)
RULES_REFERENCE = ("## Pieces", "## How a fact is found", "## Adding a rule", "## Safety",
                   "## Ground truth and tests", "## Production")


def test_the_rule_ids_and_functions_rules_md_names_exist() -> None:
    """Each `snake_case` name docs/rules.md's reference sections quote (a rule id as
    `issue_first_size`, a pattern key as `latin_languages`, a function as `heading_condition`)
    is a word of analyzers/ (code and pattern tables), bot/ or tests/: a rule renamed or
    merged away leaves no name behind."""
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    quoted = {name for heading in RULES_REFERENCE
              for name in re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`", _section(text, heading))}
    sources = [*(ROOT / "analyzers").glob("*.py"), *(ROOT / "analyzers").glob("*.yaml"),
               *(ROOT / "bot").rglob("*.py"), *(ROOT / "tests").glob("*.py")]
    words = {word for path in sources for word in re.findall(r"\w+", path.read_text(encoding="utf-8"))}
    assert len(quoted) > 20 and not sorted(quoted - words), sorted(quoted - words)


def test_the_rest_reserve_github_md_states_is_the_code_s() -> None:
    """docs/github.md's rate-limit table: what the nightly rules refresh keeps back for
    webhooks and one repository's worst case (fetch78, fetch79 moved it to 509)."""
    from bot.speaking.contribution import MAX_REPO_REQUESTS, REST_RESERVE

    limits = " ".join(_section((ROOT / "docs" / "github.md").read_text(encoding="utf-8"),
                               "## Rate limits").split())
    assert f"Keep `REST_RESERVE` ({REST_RESERVE})" in limits
    assert f"`MAX_REPO_REQUESTS` ({MAX_REPO_REQUESTS}, one repository's worst case" in limits


def test_the_unknown_flag_line_readme_quotes_is_printed_as_quoted(tmp_path: Path) -> None:
    """README, "When something is wrong": a flag the command does not take is said as that
    command's, pointing at its help (user79: argparse said it as the top command's). The
    quoted line, its `...` filled with a flag no command takes, is what the command prints."""
    from tests.test_cli import run_cli

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"\(\"(rltracker (\w+): unrecognized arguments: \.\.\. \(see `rltracker \2 --help`\))\"\)",
                       readme)
    assert quoted, "README no longer quotes the unknown-flag line"
    result = run_cli(quoted.group(2), "--no-such-flag",
                     env={"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/none.db"})
    expected = quoted.group(1).replace("...", "--no-such-flag")
    assert (result.returncode, result.stderr.strip().splitlines()[-1]) == (2, expected)


def test_the_catalog_counts_and_published_figures_the_docs_state_are_the_code_s() -> None:
    """docs/catalog.md states how many options have a Chinese setting (`set_by_zh`, "107
    today"), docs/study.md how many methods the catalog holds ("holds 35 methods") and the
    published study's headline (`analyzers.study.PUBLISHED`): each is a number that drifts as
    the catalog grows, so each is read back from the code (reread82)."""
    from analyzers.catalog import load_catalog
    from analyzers.study import PUBLISHED

    cat = load_catalog()
    with_zh = sum(1 for m in cat.methods.values() for opts in m.options.values() for o in opts
                  if o.set_by_zh)
    catalog_md = " ".join((ROOT / "docs" / "catalog.md").read_text().split())
    assert f"has words besides its code spans ({with_zh} today)" in catalog_md
    study_md = " ".join((ROOT / "docs" / "study.md").read_text().split())
    assert f"the catalog holds {len(cat.methods)} methods, so the two" in study_md
    assert (f"paper of {PUBLISHED['date']} followed {PUBLISHED['papers']:,} papers, "
            f"{PUBLISHED['reached']} of which reached") in study_md
    assert (f'"published": {{"date": "{PUBLISHED["date"]}", "papers": {PUBLISHED["papers"]}, '
            f'"reached": {PUBLISHED["reached"]}}}') in study_md


# ------------------------------------------------------------------ docs82
def _failure_comment_skip_codes() -> set[str]:
    """The skip codes a failure comment records: the quiet rules' and the decision's
    (`return "code", "reason"`, `CODE = ("code", "reason")`, `record_skip(..., "failure_comment",
    "code", ...)` in bot/speaking/quiet.py and failure_comment.py), GitHub's refusals of the
    comment (`posting.REFUSAL_REASONS`), a person's deletion and the daily budget."""
    from bot.speaking import claims, posting

    source = "".join((ROOT / "bot" / "speaking" / name).read_text(encoding="utf-8")
                     for name in ("quiet.py", "failure_comment.py"))
    codes = set(re.findall(
        r"(?:return (?:False, )?\(?|= \(|\"failure_comment\", )\"([a-z_]+)\",\s*f?\"", source))
    codes |= set(posting.REFUSAL_REASONS) | {posting.DELETED[0]}
    codes |= set(re.findall(r"record_skip\([^)]*?kind, \"([a-z_]+)\"",
                            Path(claims.__file__).read_text(encoding="utf-8")))
    return codes


def test_the_skip_codes_comments_md_lists_are_those_a_failure_comment_records() -> None:
    """docs/comments.md's table under "When the app stays quiet" names every code a failure
    comment's skip can carry, and only those: `issues_disabled` and `issue_deleted` (GitHub's
    410) were recorded but missing from it (docs82)."""
    table = _section((ROOT / "docs" / "comments.md").read_text(encoding="utf-8"),
                     "## When the app stays quiet")
    documented = {code for line in table.splitlines() if line.startswith("| `")
                  for code in re.findall(r"`([a-z_]+)`", line.split("|")[1])}
    code_side = _failure_comment_skip_codes()
    assert {"not_failure", "budget", "suspended", "issue_deleted", "deleted"} <= code_side
    assert documented == code_side, (f"recorded, not in the table: {code_side - documented}; "
                                     f"in the table, never recorded: {documented - code_side}")


def _keys_shown(value: object) -> set[str]:
    return {k for k in value if k != "..."} if isinstance(value, dict) else set()


def test_the_fields_study_md_s_json_shows_are_those_api_study_gives() -> None:
    """docs/study.md's JSON example has the fields `/api/study` gives (`compute_study`, plus the
    four `build_study` adds), at the top, per framework, per method and per catalog landing;
    study82 added `published`, `reached` and `first_landing_days` (docs82)."""
    import json

    from analyzers.catalog import load_catalog
    from analyzers.study import compute_study

    text = (ROOT / "docs" / "study.md").read_text(encoding="utf-8")
    shown = json.loads(re.search(r"## JSON\n\n```json\n(.*?)\n```", text, re.S).group(1))
    study = compute_study(load_catalog(), [], {})
    assert _keys_shown(shown) == set(study) | {"computed_at", "recorded_at", "how_to_fill"}
    fw_shown, fw = shown["frameworks"]["verl"], study["frameworks"]["verl"]
    assert _keys_shown(fw_shown) == set(fw)
    assert _keys_shown(fw_shown["sets"]) == set(fw["sets"])
    assert _keys_shown(fw_shown["proposals"]) == set(fw["proposals"])
    assert _keys_shown(shown["published"]) == set(study["published"])
    assert _keys_shown(shown["reached"]) == set(study["reached"])
    assert _keys_shown(shown["methods"][0]) == set(study["methods"][0])
    catalog_landing = next(x for x in shown["landings"] if not x["detected"])
    assert _keys_shown(catalog_landing) == set(study["landings"][0])
    assert _keys_shown(shown["review_records"]) == set(study["review_records"])
    assert _keys_shown(shown["review_records"]["merged_prs"]) == set(
        study["review_records"]["merged_prs"])


def _keys_named(text: str) -> set[str]:
    """The YAML keys a page names: in code spans (`key`, `key: value`) and at the start of a
    line of its examples (`  - id: ...`, `    set_by_zh: ...`, `- {text: ...`)."""
    return set(re.findall(r"`([a-z_]+)(?:: [^`]*)?`", text)) | set(
        re.findall(r"^\s*-? ?\{?([a-z_]+):", text, re.M))


def test_the_method_and_option_fields_catalog_md_names_are_the_loader_s() -> None:
    """docs/catalog.md ("A method" and the paragraphs after it) names every field a method, a
    paper, a caution and an option of methods.yaml can carry (`analyzers.catalog`'s records;
    `Option.framework` is the key it stands under), and frameworks.yaml's; a field added to
    the loader, such as zh82's `text_zh` and `set_by_zh`, fails here until it is written down
    (docs82)."""
    from dataclasses import fields

    from analyzers.catalog import Caution, Framework, Method, Option, PaperRef

    text = (ROOT / "docs" / "catalog.md").read_text(encoding="utf-8")
    reference = text[text.index("## Files"):text.index("## Validation at load")]
    named = _keys_named(reference) | set(re.findall(r"[{,] ?([a-z_]+):", reference))
    loaded = {f.name for record in (Method, PaperRef, Caution, Option, Framework)
              for f in fields(record) if not f.name.startswith("_")} - {"framework"}
    assert loaded - named == set()


def test_every_rule_key_the_pattern_table_uses_is_named_in_adding_a_rule() -> None:
    """docs/rules.md's "Adding a rule" (its example entry and its "Keys:" list) names every key
    a rule of analyzers/rules_patterns.yaml carries: rules82's `conditional` was written down,
    six older keys (`bare_paths`, `lower`, `absence`, `permission`, `weak_first`,
    `none_if_weak`) were not (docs82)."""
    patterns = yaml.safe_load((ROOT / "analyzers" / "rules_patterns.yaml").read_text(encoding="utf-8"))
    used = {key for rule in patterns["rules"] for key in rule}
    adding = _section((ROOT / "docs" / "rules.md").read_text(encoding="utf-8"), "## Adding a rule")
    named = _keys_named(adding)
    assert len(used) > 20 and used - named == set(), sorted(used - named)


def test_every_command_skip_code_is_named_in_comments_md() -> None:
    """Each code a command's skip carries (`record_skip(..., "command", f"CODE:{ref}")`, and the
    refusals `not_allowed` / `not_maintainer`) is named in docs/comments.md's reference part
    (above "## Measured"), so an operator reading /api/actions finds what it means: `no_kind`,
    `unknown` and `unknown_thread` were recorded but unnamed there (docs82)."""
    source = (ROOT / "bot" / "webhooks" / "commands.py").read_text(encoding="utf-8")
    codes = set(re.findall(r"record_skip\([^)]*?\"command\", f\"([a-z_]+):", source))
    codes |= set(re.findall(r"\brefuse\(\s*(?:ctx, data, )?\"([a-z_]+)\"", source))
    assert {"not_installed", "not_allowed", "not_maintainer", "reply_rate"} <= codes, codes
    text = (ROOT / "docs" / "comments.md").read_text(encoding="utf-8")
    reference = text[:text.index("## Measured")]
    assert not sorted(c for c in codes if f"`{c}:" not in reference and f"`{c}`" not in reference)


def test_every_rule_summary_skip_code_is_named_in_its_section() -> None:
    """Each code `bot/speaking/rule_summary.py` gives when it offers no rule summary is named
    in docs/comments.md's "Rule-summary reply" (`not_proposal` aside: it is no skip, most
    threads being no proposal; GitHub's refusals, `deleted` and `budget` are in the failure
    comment's table, "the rule summary likewise"): the section told `failure_report`,
    `low_confidence`, `maintainer_author`, `bot_author`, `closed`, `locked`, `muted`, `paused`
    and `config_off` in words only (docs82)."""
    source = (ROOT / "bot" / "speaking" / "rule_summary.py").read_text(encoding="utf-8")
    codes = set(re.findall(r"(?:return \(?|= \(|reason = \(|quiet = \()\s*\"([a-z_]+)\",\s*f?\"",
                           source))
    assert {"not_proposal", "summarised_on_issue", "too_old", "config_off"} <= codes, codes
    section = _section((ROOT / "docs" / "comments.md").read_text(encoding="utf-8"),
                       "## Rule-summary reply")
    assert not sorted(c for c in codes - {"not_proposal"} if f"`{c}`" not in section)


def test_the_api_repos_fields_site_md_lists_are_reception_s() -> None:
    """docs/site.md's JSON list names the fields of each `/api/repos` object, the ones
    `bot.site.data.reception` builds (user82 added `suspended`; docs82 wrote the list)."""
    import inspect

    from bot.site import data

    built = re.findall(r"^\s*\"([a-z_]+)\":", inspect.getsource(data.reception), re.M)
    text = " ".join((ROOT / "docs" / "site.md").read_text(encoding="utf-8").split())
    listed = re.search(r"- `/api/repos`: one object per installed repository [^:]*: (.*?) \(the",
                       text)
    assert "suspended" in built and listed, built
    assert re.findall(r"`([a-z_]+)`", listed.group(1)) == built
