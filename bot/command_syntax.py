"""What a `/rltracker` command looks like in a comment.

The webhook handler that answers commands (bot/webhooks/commands.py) parses them with this;
the analysis (bot/analysis.py) leaves the command lines out of what the analyzers read, since a
command is addressed to the app, not to the thread: `/rltracker kind entropy_collapse` is no
report wording, and a maintainer's `/rltracker rules` is no reply to a proposal.
"""

from __future__ import annotations

PREFIX = "/rltracker"
_MAX_BODY = 65536  # characters read for a command
_MAX_LINES = 50  # lines read for a command


def _is_command_line(line: str) -> bool:
    words = line.split(maxsplit=1)
    return bool(words) and words[0].lower() == PREFIX


def parse_command(body: str | None) -> tuple[str, list[str]] | None:
    """The first `/rltracker <word> [args]` line of a comment, as (word, args)."""
    for line in (body or "")[:_MAX_BODY].splitlines()[:_MAX_LINES]:
        if not _is_command_line(line):
            continue
        words = line.split()
        if len(words) == 1:
            return "", []
        return words[1].lower(), words[2:8]
    return None


def without_commands(body: str) -> str:
    """`body` without its command lines (those `parse_command` reads)."""
    if PREFIX not in body[:_MAX_BODY].lower():
        return body
    lines = body.splitlines(keepends=True)
    kept: list[str] = []
    offset = 0
    for n, line in enumerate(lines):
        # the lines parse_command reads: the first _MAX_LINES of the first _MAX_BODY characters
        read = line[: max(0, _MAX_BODY - offset)] if n < _MAX_LINES else ""
        if not (read and _is_command_line(read)):
            kept.append(line)
        offset += len(line)
    return "".join(kept)


def only_commands(body: str | None) -> bool:
    """A comment that is nothing but command lines: addressed to the app alone (no reply to
    the thread, nothing for the analyzers to read)."""
    text = body or ""
    return bool(text.strip()) and not without_commands(text).strip()
