"""bot.command_syntax and what the app's analysis reads: `/rltracker` command lines are
addressed to the app, so the analyzers never read them as thread text."""

from __future__ import annotations

from typing import Any

import pytest

from bot.analysis import analysis_input, run_analysis
from bot.command_syntax import parse_command, without_commands


def test_without_commands_drops_only_command_lines() -> None:
    assert without_commands("/rltracker kind kl_growth") == ""
    assert without_commands("Thanks, looks right.\n  /RLTracker kind kl_growth\nThe KL grows.") == (
        "Thanks, looks right.\nThe KL grows."
    )
    body = "please run `/rltracker ignore` if it is noisy"
    assert without_commands(body) == body  # mentioned in prose: no command (as parse_command reads it)
    assert parse_command(body) is None
    assert without_commands("no command here") == "no command here"


def test_without_commands_reads_as_many_lines_as_parse_command() -> None:
    filler = "line\n" * 60
    body = filler + "/rltracker ignore\n"
    assert parse_command(body) is None  # beyond the lines a command is looked for in
    assert without_commands(body) == body


def test_without_commands_reads_the_characters_parse_command_reads() -> None:
    long_line = "x" * 70000 + "\n"  # one line past the 64 KiB parse_command reads
    body = long_line + "/rltracker ignore\n"
    assert parse_command(body) is None
    assert without_commands(body) == body
    body = "a\n/rltracker ignore\n" + long_line
    assert parse_command(body) == ("ignore", [])
    assert without_commands(body) == "a\n" + long_line


# Two short threads written for these tests: a method proposal and a usage question.
THREADS = {
    "proposal": ("[Feature] Add GSPO (sequence-level clipping) as a policy loss",
                 "This adds GSPO from arXiv:2507.18071 as a new policy loss option. Would you accept a PR?"),
    "question": ("Question about the GRPO config",
                 "How do I set the group size for GRPO in the trainer config? Thanks."),
}


def _thread(comments: list[dict[str, Any]], which: str = "proposal") -> dict[str, Any]:
    title, body = THREADS[which]
    return {"id": "example/rl#7", "repo": "verl-project/verl", "number": 7, "kind": "issue",
            "title": title, "body": body, "author": "opener", "author_association": "NONE",
            "state": "open", "comments": comments}


def _comment(body: str, author: str = "maintainer", association: str = "MEMBER") -> dict[str, Any]:
    return {"author": author, "author_association": association, "author_is_bot": False,
            "created_at": "2026-12-01T10:00:00Z", "body": body, "kind": "issue_comment"}


def test_analysis_input_leaves_threads_without_commands_as_they_are() -> None:
    record = _thread([_comment("Interesting, could you share results on GSM8K?")])
    assert analysis_input(record) is record


def test_analysis_input_drops_command_only_comments_and_command_lines() -> None:
    record = _thread([
        _comment("/rltracker rules"),
        _comment("Nice idea.\n/rltracker kind kl_growth\nCould you add a test?"),
    ])
    seen = analysis_input(record)
    assert [c["body"] for c in seen["comments"]] == ["Nice idea.\nCould you add a test?"]
    assert [c["body"] for c in record["comments"]][0] == "/rltracker rules"  # the stored record is untouched


@pytest.mark.asyncio
@pytest.mark.parametrize("which", sorted(THREADS))
async def test_commands_leave_the_analysis_as_the_thread_without_them(which: str) -> None:
    commands = [_comment("/rltracker kind entropy_collapse"), _comment("/rltracker methods entropy collapse"),
                _comment("/rltracker rules", author="opener", association="NONE")]
    with_commands = await run_analysis(_thread(commands, which))
    assert with_commands == await run_analysis(_thread([], which))
    assert with_commands["review"]["replied_from_other"] is False
