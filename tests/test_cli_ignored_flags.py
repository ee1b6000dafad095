"""reread82/left83: a flag accepted where it does nothing (`rltracker repos --json resume X`
resumed and printed no JSON; `deliveries --limit 5 retry --all` re-queued every delivery) is
refused as an unknown flag is: one line naming the command that ran and its help, exit 2,
nothing done. One rule in the parser (bot.cli: an option's `applies` condition), not one check
per command."""

from __future__ import annotations

import pytest

from bot.cli import build_parser, parse_arguments
from tests.test_cli_edges import rltracker, text
from tests.test_cli_errors import one_line

IGNORED = [
    # a parent's listing flag before a subcommand that does not list
    (("repos", "--json", "resume", "a/b"), "repos resume", "--json"),
    (("deliveries", "--json", "retry", "--all"), "deliveries retry", "--json"),
    (("deliveries", "--limit", "5", "retry", "--all"), "deliveries retry", "--limit"),
    (("deliveries", "--limit=5", "retry", "x"), "deliveries retry", "--limit"),
    # an option that only modifies another one, given without it
    (("analyze", "--no-cache", "-"), "analyze", "--no-cache"),
    (("serve", "--no-worker", "--workers", "2"), "serve", "--workers"),
]


@pytest.mark.parametrize(("args", "name", "flag"), IGNORED)
def test_a_flag_that_would_do_nothing_is_refused_as_an_unknown_one(
        args: tuple[str, ...], name: str, flag: str) -> None:
    """Failed on main: each exited as if the flag were not there (the subcommand ran)."""
    line = one_line(text(rltracker(*args)), name, 2)
    assert line == (f"rltracker {name}: unrecognized arguments: {flag} "
                    f"(see `rltracker {name} --help`)"), line


@pytest.mark.parametrize("argv", [
    ["repos", "--json"], ["repos", "resume", "a/b"], ["deliveries", "--json", "--limit", "5"],
    ["deliveries", "retry", "--all"], ["analyze", "--no-cache", "--papers", "p.jsonl", "-"],
    ["serve", "--workers", "2"], ["serve", "--no-worker"], ["stats", "--json", "--debug"],
    ["repos", "--debug", "resume", "a/b"],
])
def test_a_flag_that_does_something_is_taken(argv: list[str]) -> None:
    args = parse_arguments(build_parser(), argv)
    assert not [k for k in vars(args) if k.startswith("_")], vars(args)
