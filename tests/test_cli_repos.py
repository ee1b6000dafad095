"""`rltracker repos`: the repositories the app comments in, as the operator's terminal shows
them (user82).

`rltracker --help` described `repos` as "the repositories the app comments in", but
`rltracker repos` listed nothing: "the following arguments are required: {resume}", exit 2.
Its one subcommand, `repos resume OWNER/NAME`, lifts a pause the nightly reception check
sets, and the command gave the operator no way to learn which repository was paused, or
suspended, or had a settings file the app could not use (the /repos/ page and /api/repos
alone did). `repos` alone now lists them as /api/repos does (`bot.site.data.reception`, the one
definition), `--json` the same JSON; `repos resume` is as it was. On SQLite and PostgreSQL
(`db_url`), the command run as the operator runs it (a process)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.test_cli_edges import rltracker, text

SUSPENDED_INSTALLATION = 12
INSTALLATION = 11


async def _stored(db_url: str) -> list[dict[str, Any]]:
    """Five installed repositories (one paused, one whose installation is suspended, one whose
    settings file cannot be used, one of no framework, one as it should be), one not
    installed, one private; what /api/repos gives for them."""
    from bot.config import Settings
    from bot.context import AppContext
    from bot.site.data import reception
    from bot.store.models import Installation, Repository

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        async with ctx.sessionmaker() as session, session.begin():
            session.add_all([Installation(id=INSTALLATION, account="verl-project"),
                             Installation(id=SUSPENDED_INSTALLATION, account="huggingface",
                                          suspended=True)])
            await session.flush()
            session.add_all([
                Repository(full_name="verl-project/verl", framework="verl",
                           installation_id=INSTALLATION, comments_paused=True,
                           paused_reason="3 of the app's last 10 comments hidden by maintainers"),
                Repository(full_name="huggingface/trl", framework="trl",
                           installation_id=SUSPENDED_INSTALLATION),
                Repository(full_name="verl-project/verl-recipe", installation_id=INSTALLATION,
                           config_error="unknown key: \x1b[31mfailure_coments\u202e"),
                Repository(full_name="verl-project/docs", installation_id=INSTALLATION),
                Repository(full_name="THUDM/slime", framework="slime",
                           installation_id=INSTALLATION),
                Repository(full_name="OpenRLHF/OpenRLHF", framework="openrlhf"),
                Repository(full_name="verl-project/secret", installation_id=INSTALLATION,
                           private=True),
            ])
        async with ctx.sessionmaker() as session:
            return await reception(session)
    finally:
        await ctx.close()


def test_repos_alone_lists_the_installed_repositories_and_their_state(db_url: str) -> None:
    """Failed on main: exit 2, "the following arguments are required: {resume}"."""
    expected = asyncio.run(_stored(db_url))
    env = {"DATABASE_URL": db_url}
    result = text(rltracker("repos", env=env))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    rows = {line.split("\t")[0]: line for line in lines if "\t" in line}
    # the installed public ones, in the order /api/repos gives them; never the private one,
    # nor one the app is not installed in
    assert list(rows) == [r["repo"] for r in expected], lines
    assert "verl-project/secret" not in result.stdout and "OpenRLHF" not in result.stdout
    assert "paused: 3 of the app's last 10 comments hidden by maintainers" in rows["verl-project/verl"]
    assert "rltracker repos resume verl-project/verl" in result.stdout  # what to type
    assert "suspended" in rows["huggingface/trl"]
    assert ".github/rltracker.yml could not be used" in rows["verl-project/verl-recipe"]
    # a settings file's words are the repository's: no escape sequence, no direction override
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "failure_coments" in rows["verl-project/verl-recipe"]
    assert rows["THUDM/slime"].split("\t")[2] == "commenting"
    # a repository of the installation that is no framework of the catalog: commands only
    assert "not one of the tracked frameworks" in rows["verl-project/docs"]
    assert "commenting" not in rows["verl-project/docs"]
    assert lines[-1].startswith("5 repositories, 1 paused"), lines
    # --json: what GET /api/repos answers, as it is
    as_json = text(rltracker("repos", "--json", env=env))
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == expected


def test_repos_on_an_empty_database_says_there_is_none(db_url: str) -> None:
    """Failed on main (exit 2)."""
    result = text(rltracker("repos", env={"DATABASE_URL": db_url}))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("0 repositories: the app is installed in no public "
                                     "repository this service has stored")
