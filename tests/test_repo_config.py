"""`.github/rltracker.yml`: parsing, validation, caching, and invalid files never breaking anything."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from analyzers.failures import threshold
from bot.speaking.repo_config import ConfigError, RepoConfig, get_repo_config, parse_config_text
from bot.store.models import Action, Repository
from tests.test_actions_e2e import INST, VERL, install


def test_valid_file() -> None:
    c = parse_config_text(
        "failure_comments: false\nrule_summaries: true\nmin_confidence: 0.85\ndry_run: true\n"
        "daily_budget: 5\nlabels:\n  entropy_collapse: 'rl: entropy'\nignore_labels: [bug, question]\n"
    )
    assert c == RepoConfig(failure_comments=False, rule_summaries=True, min_confidence=0.85,
                           dry_run=True, daily_budget=5, labels={"entropy_collapse": "rl: entropy"},
                           ignore_labels=("bug", "question"), source="file")
    assert parse_config_text("") == RepoConfig(source="file")
    assert RepoConfig.from_dict(c.as_dict()) == c


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("failure_comments: [oops\n", "not valid YAML"),
        ("- a\n- b\n", "mapping"),
        ("min_confidence: 2\n", "min_confidence"),
        ("min_confidence: yes\n", "min_confidence"),
        ("failure_comments: 'no'\n", "failure_comments"),
        ("labels: {no_such_kind: x}\n", "unknown failure kinds"),
        ("ignore_labels: bug\n", "ignore_labels"),
        ("failure_coments: false\n", "unknown settings: failure_coments"),
        ("a: &x [1]\nb: *x\n", r"aliases \(\*name\) are not allowed in this file \(line 2\)"),
        ("failure_comments: [oops\n", r"not valid YAML \(line 2\): expected ',' or '\]'"),
        ("a: \x01\n", "not valid YAML: unacceptable character"),
        ("daily_budget: 1000\n", "daily_budget"),
        ("x: !!python/object:os.system {}\n", "not valid YAML .line 1.: could not determine a constructor"),
    ],
)
def test_invalid_files(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_config_text(text)


def test_alias_bomb_is_refused_fast() -> None:
    bomb = "a: &a ['x','x','x','x','x','x','x','x','x']\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(9)
    )
    with pytest.raises(ConfigError):
        parse_config_text(bomb)


async def test_fetched_cached_and_refreshed(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 0.9\n")
    c = await get_repo_config(app_ctx, VERL, INST)
    assert c.min_confidence == 0.9 and c.source == "file"
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 0.5\n")
    assert (await get_repo_config(app_ctx, VERL, INST)).min_confidence == 0.9  # cached (TTL)
    # one read (.github/'s listing, then the file it names: left64), none while cached
    assert len(fake_github.requests("GET", r"/contents/")) == 2
    assert (await get_repo_config(app_ctx, VERL, INST, refresh=True)).min_confidence == 0.5
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Repository).where(Repository.full_name == VERL))
        assert row.config["min_confidence"] == 0.5 and row.config_fetched_at is not None


async def test_missing_file_means_defaults(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    assert await get_repo_config(app_ctx, VERL, INST) == RepoConfig()


async def test_invalid_file_defaults_and_one_skipped_action(app_ctx: Any, fake_github: Any, caplog: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "min_confidence: 3\n")
    for _ in range(2):
        c = await get_repo_config(app_ctx, VERL, INST, refresh=True)
        assert c.source == "invalid" and c.failure_comments and c.min_confidence is None
        assert c.failure_bar() == threshold() and c.proposal_bar() == 0.7
    async with app_ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Action).where(Action.kind == "config")))
    assert len(rows) == 1 and rows[0].status == "skipped" and "min_confidence" in rows[0].reason
    assert "invalid .github/rltracker.yml" in caplog.text


async def test_no_file_on_either_path_means_defaults(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.fail_next("GET", r"/contents/", 404, times=2)
    assert (await get_repo_config(app_ctx, VERL, INST)).source == "defaults"


async def test_without_app_credentials_nothing_is_fetched(
    ctx: Any, settings: Any, fake_github: Any
) -> None:
    """Dev mode (`serve --dev`, no app credentials): an installation id in a payload is not
    enough to read the installation's files, so defaults apply and GitHub is not called."""
    from bot.github.client import GitHubClient

    ctx.github = GitHubClient(
        settings.__class__.from_env({}, database_url=settings.database_url, api_url=fake_github.url)
    )
    try:
        assert await get_repo_config(ctx, VERL, INST) == RepoConfig()
    finally:
        await ctx.github.close()
        ctx.github = None
    assert not [c for c in fake_github.calls if "/contents/" in c.path]


# Files whose YAML parses but whose values PyYAML cannot build (a date that is no date, an
# integer past Python's digit limit, an explicit tag on a wrong value) or that nest deeper
# than PyYAML's recursive composer goes: all well under the 16 KiB limit.
HOSTILE_FILES = [
    pytest.param("failure_comments: false\nreleased: 2024-13-45\n", "cannot be read", id="no-such-date"),
    pytest.param("daily_budget: " + "9" * 5000 + "\n", "cannot be read", id="integer-past-digit-limit"),
    pytest.param("daily_budget: !!int many\n", "cannot be read", id="int-tag-on-a-word"),
    pytest.param("min_confidence: !!float high\n", "cannot be read", id="float-tag-on-a-word"),
    # Tags whose PyYAML constructor fails with other than ValueError: a KeyError, an
    # AttributeError, an IndexError, a TypeError escaped get_repo_config.
    pytest.param("dry_run: !!bool maybe\n", "cannot be read", id="bool-tag-on-a-word"),
    pytest.param("released: !!timestamp soon\n", "cannot be read", id="timestamp-tag-on-a-word"),
    pytest.param("daily_budget: !!int\n", "cannot be read", id="int-tag-on-nothing"),
    pytest.param("labels: !!map [kl_growth]\n", "cannot be read", id="map-tag-on-a-list"),
    pytest.param("ignore_labels: !!set [bug]\n", "cannot be read", id="set-tag-on-a-list"),
    pytest.param("labels: " + "[" * 5000 + "]" * 5000 + "\n", "nested", id="deep-flow-sequence"),
    pytest.param("labels: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "nested", id="deep-flow-mapping"),
]


@pytest.mark.parametrize(("text", "problem"), HOSTILE_FILES)
def test_unbuildable_or_deep_yaml_is_a_config_error(text: str, problem: str) -> None:
    assert len(text.encode()) <= 16 * 1024
    with pytest.raises(ConfigError, match=problem):
        parse_config_text(text)


async def test_unbuildable_yaml_falls_back_and_is_reported(app_ctx: Any, fake_github: Any) -> None:
    """A repository's file with a date that is no date: the failure comment is still decided
    with the defaults (plus the file's opt-outs it can still read: none here), and the problem
    is one skipped action of kind "config", not an exception in every delivery."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, app_comments, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "labels: {}\nreleased: 2024-13-45\n")
    payload = await open_issue(app_ctx, fake_github, 1)
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert len(app_comments(fake_github, VERL, 1)) == 1
    async with app_ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Action).where(Action.kind == "config")))
    assert len(rows) == 1 and "invalid .github/rltracker.yml" in rows[0].reason



@pytest.mark.parametrize("broken", [
    "labels: {entropy_collapse: [oops\n",  # a bracket left open
    "released: 2024-13-45\n",  # a value YAML cannot build
    "notes: &n x\nmore: *n\n",  # an alias
    "released: !!timestamp soon\n",  # a tag PyYAML fails to build with an AttributeError
    "notes: !!bool maybe\n",  # ... with a KeyError
])
async def test_opt_out_holds_when_the_file_does_not_parse(app_ctx: Any, fake_github: Any,
                                                          broken: str) -> None:
    """docs/comments.md: "a typo in another setting never turns on what the repository turned
    off". A typo that broke the YAML itself (not only a setting's value) dropped the whole
    file, `failure_comments: false` with it: the app began commenting in a repository that
    had turned it off. The opt-outs stated on top-level lines of their own still hold."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, actions_of, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "failure_comments: false   # not here, thanks\ndry_run: yes\n" + broken)
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 1)
    [row] = await actions_of(app_ctx, 1)
    assert row.status == "skipped" and "turned off" in row.reason
    config = await get_repo_config(app_ctx, VERL, INST)
    assert (config.source, config.failure_comments, config.dry_run, config.rule_summaries) == (
        "invalid", False, True, True)
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "invalid .github/rltracker.yml" in config_row.reason


def test_only_top_level_opt_out_lines_hold_in_a_broken_file() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_text("labels:\n  failure_comments: false\nrule_summaries: true\n"
                          "dry_run: false\nx: [\n")
    assert caught.value.opt_outs == {}


@pytest.mark.parametrize("content", [
    pytest.param("failure_comments: false\ndry_run: true\n" + "# why we turned it off\n" * 800,
                 id="larger-than-16-KiB"),
    pytest.param("failure_comments: false\ndry_run: true\n# r\xe9sum\xe9 of our reasons\n".encode("latin-1"),
                 id="latin-1"),
])
async def test_opt_out_holds_in_a_file_too_large_or_not_utf8(app_ctx: Any, fake_github: Any,
                                                              content: str | bytes) -> None:
    """A file over the size limit or not in UTF-8 was refused whole, its opt-outs with it:
    `failure_comments: false` followed by long comments, or saved in Latin-1, turned the
    app's comments on. The opt-outs on top-level lines of their own still hold."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, actions_of, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", content)
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 1)
    config = await get_repo_config(app_ctx, VERL, INST)
    assert (config.source, config.failure_comments, config.dry_run) == ("invalid", False, True)
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "larger than" in config_row.reason or "UTF-8" in config_row.reason


async def test_a_setting_given_twice_is_reported_and_the_opt_out_holds(app_ctx: Any,
                                                                      fake_github: Any) -> None:
    """`failure_comments: false` added at the top of a file that says `failure_comments: true`
    further down: PyYAML keeps the last silently, so the app went on commenting where the
    maintainer had just turned it off, and nothing said why. A key given twice in a mapping is
    a problem (with both lines), and the opt-out stated holds."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, actions_of, open_issue

    with pytest.raises(ConfigError, match=r"failure_comments is set twice \(lines 1 and 4\)"):
        parse_config_text("failure_comments: false\nlabels:\n  kl_growth: kl\nfailure_comments: true\n")
    with pytest.raises(ConfigError, match=r"kl_growth is set twice \(lines 2 and 3\)"):
        parse_config_text("labels:\n  kl_growth: a\n  kl_growth: b\n")
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml",
                         "failure_comments: false\nmin_confidence: 0.9\nfailure_comments: true\n")
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert not fake_github.comments_of(VERL, 1)
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "failure_comments is set twice" in config_row.reason


def test_opt_out_of_a_broken_file_saved_with_a_byte_order_mark() -> None:
    """Windows editors start UTF-8 files with a BOM: the first line, `failure_comments: false`,
    did not count as stated in a file that does not parse."""
    with pytest.raises(ConfigError) as caught:
        parse_config_text("\ufefffailure_comments: false\r\nx: [\r\n")
    assert caught.value.opt_outs == {"failure_comments": False}


@pytest.mark.parametrize("text", [
    '"bad\\0key": 1\n',  # YAML's escape for U+0000, in a key named in the problem
    'failure_comments: false\nlabels: {"kl\\0growth": x}\n',
    'labels: {kl_growth: "kl\\0"}\n',  # in a label name: a valid-looking setting
])
async def test_a_nul_character_in_the_file_is_stored_and_reported(app_ctx: Any, fake_github: Any,
                                                                  text: str) -> None:
    """YAML's "\\0" escape makes a U+0000 in a key or a value; PostgreSQL text cannot hold one.
    Named in the problem (an unknown setting, an unknown failure kind) or kept in the
    settings, it made storing the config on the repository row fail, so every decision in
    that repository raised. The file is invalid, reported, and the decisions go on."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, actions_of, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", text)
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    config = await get_repo_config(app_ctx, VERL, INST)
    assert config.source == "invalid"
    [config_row] = await actions_of(app_ctx, kind="config")
    assert "\x00" not in (config_row.reason or "")


async def test_an_uninstalled_installation_is_not_read_as_a_repository_without_config(
        app_ctx: Any, fake_github: Any) -> None:
    """The app uninstalled with no event handled yet: GitHub answers 404 for the
    installation's token, and the client raised that 404 from the file read, which reads as
    "no .github/rltracker.yml": the opt-out was replaced on the row by the defaults (comments
    on), kept for CONFIG_TTL, so a reinstall spoke where the maintainers had said no. The
    client's answer for a gone installation is no 404 of the resource (InstallationGone, 410)."""
    import gidgethub

    from bot.github.client import InstallationGone
    from tests.fakegithub import install_app

    repo = "verl-project/verl"
    await install_app(app_ctx, fake_github, 56, "verl-project", [repo])
    fake_github.set_file(repo, ".github/rltracker.yml", "failure_comments: false\n")
    assert (await get_repo_config(app_ctx, repo, 56, refresh=True)).failure_comments is False
    fake_github.remove_installation(56)
    with pytest.raises(gidgethub.BadRequest) as refused:
        await get_repo_config(app_ctx, repo, 56, refresh=True)
    assert isinstance(refused.value, InstallationGone) and refused.value.status_code != 404
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == repo))
    assert row.config["failure_comments"] is False


async def test_the_preview_says_the_file_is_invalid(app_ctx: Any, fake_github: Any) -> None:
    """The install preview is where a maintainer installing the app looks at what it would do
    under their settings. A file with a typo (`failure_coments`) is invalid and the defaults
    apply: the page and `rltracker preview` listed the would-be comments and "failure comments
    on" without a word of the file, as if it had been read (the problem was only in the log
    and /api/actions)."""
    from datetime import UTC, datetime, timedelta

    from bot.site.preview_pages import render_html
    from bot.speaking.preview import compute_preview, render_markdown
    from bot.store.models import Analysis
    from bot.store.threads import upsert_thread
    from tests.test_actions_e2e import FAILURE, iso

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_coments: false\n")
    assert (await get_repo_config(app_ctx, VERL, INST, refresh=True)).source == "invalid"
    async with app_ctx.sessionmaker() as s:
        thread = await upsert_thread(s, {
            "repo": VERL, "number": 1, "kind": "issue", "title": "entropy collapse",
            "body": "entropy falls", "state": "open",
            "created_at": iso(datetime.now(UTC) - timedelta(days=1))})
        s.add(Analysis(thread_id=thread.id, analyzer_version="t", result=FAILURE,
                       is_failure_report=True))
        await s.commit()
    preview = await compute_preview(app_ctx, VERL)
    assert [c["number"] for c in preview["comments"]] == [1]  # the defaults: comments on
    for shown in (render_html({**preview, "install_problems": []}), render_markdown(preview)):
        assert ".github/rltracker.yml" in shown and "unknown settings: failure_coments" in shown
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    await get_repo_config(app_ctx, VERL, INST, refresh=True)
    preview = await compute_preview(app_ctx, VERL)
    for shown in (render_html({**preview, "install_problems": []}), render_markdown(preview)):
        assert "unknown settings" not in shown


@pytest.mark.parametrize(("text", "kept"), [
    # valid settings that make the app quieter than the defaults, beside a typo
    ("daily_budget: 0\nrule_summary: false\n", {"daily_budget": 0}),
    ("daily_budget: 1\nmin_confidence: 0.99\nfailure_coments: false\n",
     {"daily_budget": 1, "min_confidence": 0.99}),
    # in a file that does not parse: on a top-level line of its own
    ("daily_budget: 0   # nothing spontaneous, please\nlabels: {kl_growth: [oops\n", {"daily_budget": 0}),
    # settings that would make it louder are not kept from an invalid file
    ("daily_budget: 10\nmin_confidence: 0.1\ntypo: 1\n", {"daily_budget": 3, "min_confidence": None}),
])
def test_a_quieter_budget_or_bar_holds_in_an_invalid_file(text: str, kept: dict[str, Any]) -> None:
    """docs/comments.md: "a typo in another setting never turns on what the repository turned
    off". `daily_budget: 0` turns spontaneous comments off as surely as `failure_comments:
    false`, yet a typo beside it (`rule_summary`) restored the default budget of 3 a day; a
    budget of 1 or a bar of 0.99 went back to the defaults the same way."""
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text)
    config = RepoConfig(source="invalid", error=str(caught.value), **caught.value.opt_outs)
    assert {k: getattr(config, k) for k in kept} == kept


async def test_a_zero_budget_holds_beside_a_typo(app_ctx: Any, fake_github: Any) -> None:
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, open_issue

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 0\nrule_summary: false\n")
    payload = await open_issue(app_ctx, fake_github, 1)
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out.get("failure_comment") != "posted" and not fake_github.comments_of(VERL, 1)
