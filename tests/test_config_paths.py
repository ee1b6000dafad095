"""Where a maintainer puts `.github/rltracker.yml`, and how: a file at another path (the
repository's root, `.rltracker.yml`, or a misspelt name in `.github/`) and settings under an
`rltracker:` key. Before, the first was ignored without a word (the defaults applied: the app
commented in a repository whose file said `failure_comments: false`) and the second made the
file invalid with its opt-outs lost."""

from __future__ import annotations

from typing import Any

import pytest

from bot.speaking.repo_config import get_repo_config, parse_config_text
from tests.test_actions_e2e import FAILURE, INST, VERL, actions_of, install, open_issue


def test_settings_under_an_rltracker_key_are_read() -> None:
    config = parse_config_text("rltracker:\n  failure_comments: false\n  daily_budget: 1\n")
    assert (config.source, config.failure_comments, config.daily_budget) == ("file", False, 1)
    assert parse_config_text("rltracker:\n").source == "file"


def test_an_invalid_setting_under_an_rltracker_key_keeps_the_opt_outs() -> None:
    from bot.speaking.repo_config import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_config_text("rltracker:\n  failure_comments: false\n  failure_coments: true\n")
    assert "failure_coments" in str(err.value)
    assert err.value.opt_outs == {"failure_comments": False}


@pytest.mark.parametrize("path", [".rltracker.yml", "rltracker.yaml", ".github/rltracker.YML",
                                  ".github/.rltracker.yml"])
async def test_a_file_at_another_path_is_said_and_its_opt_outs_hold(
        app_ctx: Any, fake_github: Any, path: str) -> None:
    from bot.speaking.decide import act

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, "README.md", "# verl\n")
    fake_github.set_file(VERL, ".github/workflows/ci.yml", "on: push\n")
    fake_github.set_file(VERL, path, "failure_comments: false\nlabels:\n  entropy_collapse: x\n")
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    assert (config.source, config.failure_comments) == ("invalid", False)
    assert path in (config.error or "") and ".github/rltracker.yml" in (config.error or "")
    assert config.labels == {}  # only what makes the app quieter holds from a misplaced file
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 1)
    [row] = await actions_of(app_ctx, kind="config")
    assert path in row.reason


async def test_no_file_anywhere_is_the_defaults_without_a_word(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, "README.md", "# verl\n")
    fake_github.set_file(VERL, ".github/workflows/ci.yml", "on: push\n")
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    assert (config.source, config.error) == ("defaults", None)
    assert not await actions_of(app_ctx, kind="config")


@pytest.mark.parametrize("files", [
    {"README.md": "# verl\n", ".github/workflows/ci.yml": "on: push\n"},  # a .github/, no file
    {"README.md": "# verl\n"},  # no .github/ at all
    {"README.md": "# verl\n", ".github/rltracker.yml": "daily_budget: 1\n"},
    {"README.md": "# verl\n", ".github/rltracker.yaml": "daily_budget: 1\n"},
])
async def test_a_read_costs_two_contents_requests_at_most(
        app_ctx: Any, fake_github: Any, files: dict[str, str]) -> None:
    """A repository with no settings file cost four contents requests per read (its TTL is
    ten minutes): .github/rltracker.yml, .github/rltracker.yaml, then the root's and
    .github/'s listings for a file at another path. Two at most now, the file read and a
    file elsewhere still found (above)."""
    await install(app_ctx, fake_github)
    for path, text in files.items():
        fake_github.set_file(VERL, path, text)
    before = len(fake_github.requests("GET", r"/contents"))
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    contents = fake_github.requests("GET", r"/contents")[before:]
    assert len(contents) <= 2, [c.path for c in contents]
    settings_file = any(p.startswith(".github/rltracker.") for p in files)
    assert (config.source, config.error) == ("file" if settings_file else "defaults", None)
    assert config.daily_budget == (1 if settings_file else 3)


@pytest.mark.parametrize(("text", "kept"), [
    ("failure-comments: false\n", {"failure_comments": False}),
    ("Rule_Summaries: no\n", {"rule_summaries": False}),
    ("dry-run: true\nDaily-Budget: 0\n", {"dry_run": True, "daily_budget": 0}),
])
def test_an_opt_out_spelt_with_hyphens_or_capitals_holds(text: str, kept: dict[str, Any]) -> None:
    """`failure-comments: false` (the hyphen many YAML files use) was an unknown setting and
    the defaults applied: the app commented where the maintainer had written it should not.
    The file is still reported (with the setting's name), and the opt-out holds."""
    from bot.speaking.repo_config import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_config_text(text)
    assert err.value.opt_outs == kept
    assert "did you mean" in str(err.value)


def test_settings_both_under_the_key_and_at_the_top_level_keep_the_opt_outs_of_both() -> None:
    from bot.speaking.repo_config import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_config_text("labels: {}\nrltracker:\n  failure_comments: false\n  daily_budget: 1\n")
    assert "rltracker" in str(err.value)
    assert err.value.opt_outs == {"failure_comments": False, "daily_budget": 1}


async def test_both_settings_file_names_are_said_and_what_either_turns_off_holds(
        app_ctx: Any, fake_github: Any) -> None:
    """`.github/rltracker.yml` and `.github/rltracker.yaml` both there (left65): the .yml was
    read and the .yaml ignored without a word, so a `failure_comments: false` written into
    the .yaml did nothing, and nobody was told. Which one the maintainer meant is not known:
    it is said (the config's error, `/api/actions`), and what either turns off holds, as
    for a key set twice in one file."""
    from bot.speaking.decide import act

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 2\nlabels:\n  kl_growth: x\n")
    fake_github.set_file(VERL, ".github/rltracker.yaml", "failure_comments: false\ndaily_budget: 1\n")
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    assert (config.source, config.failure_comments, config.daily_budget) == ("invalid", False, 1)
    assert config.labels == {}
    assert ".github/rltracker.yml and .github/rltracker.yaml are both there" in (config.error or "")
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 1)
    [row] = await actions_of(app_ctx, kind="config")
    assert "both there" in (row.reason or "")


async def test_one_of_both_names_gone_since_the_listing_is_read_as_the_one(
        app_ctx: Any, fake_github: Any) -> None:
    """`.github/` listed both, GitHub then answers 404 for one (deleted meanwhile): the
    other is the settings file, read as usual."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 2\n")
    fake_github.set_file(VERL, ".github/rltracker.yaml", "daily_budget: 1\n")
    fake_github.fail_next("GET", r"/contents/\.github/rltracker\.yml$", 404)
    config = await get_repo_config(app_ctx, VERL, INST, refresh=True)
    assert (config.source, config.error, config.daily_budget) == ("file", None, 1)
