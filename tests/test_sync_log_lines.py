"""`rltracker sync` writes its log as plain lines on standard error (not serve's JSON lines):
text GitHub answers with (a GraphQL error's message, a skip reason quoting a repository's
labels) must not start a line of its own there, where it reads as the command's own word
("rltracker sync: synced ..."), nor move the cursor of a terminal (ESC, CSI). Run as a person
runs it, against the fake GitHub over HTTP (security71)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from tests.test_cli_errors import CLEAN_ENV, HANG_GUARD, migrated_db  # noqa: F401 - a fixture

FORGED = "rltracker sync: synced 999 threads (forged)"


async def test_a_graphql_error_message_holding_line_breaks_stays_on_its_line(
        migrated_db: str, fake_github: Any) -> None:  # noqa: F811 - the fixture imported above
    fake_github.graphql_handler = lambda query, variables: {"errors": [
        {"message": f"Something went wrong\n{FORGED}\r\x1b[2K\u2028{FORGED}\x1b]0;t\x07"}]}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "verl-project/verl",
        env={**CLEAN_ENV, "DATABASE_URL": migrated_db, "GITHUB_API_URL": fake_github.url,
             "GITHUB_TOKEN": fake_github.user_token},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    result = subprocess.CompletedProcess(["sync"], proc.returncode or 0, out.decode(), err.decode())
    assert "Something went wrong" in result.stderr, result.stderr  # it was said
    assert not any(line.startswith(FORGED) for line in result.stderr.splitlines()), result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr.replace("\r\n", "\n")
