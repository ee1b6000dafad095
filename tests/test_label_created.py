"""The label the repository's config names, made by the app when the repository lacks it
(user77). Adding a label an issue's repository does not have makes GitHub create it, grey
(`ededed`) and with no description: the maintainer found a grey `rl: entropy` in their label
list with nothing saying where it came from. The app now creates it first, with a colour and a
description naming rltracker and its settings file; a label the repository has is left as its
maintainers made it. GitHub is tests/fakegithub.py over HTTP; SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from bot.speaking.decide import act
from tests.test_actions_e2e import FAILURE, VERL, app_comments, install, open_issue

CONFIG = "labels:\n  entropy_collapse: 'rl: entropy'\n"


async def test_a_missing_label_is_created_with_a_colour_and_a_description(
        app_ctx: Any, fake_github: Any) -> None:
    """Failed on main: GitHub's grey, no description."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    payload = await open_issue(app_ctx, fake_github, 71)
    await act(app_ctx, VERL, 71, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert len(app_comments(fake_github, VERL, 71)) == 1
    assert {"name": "rl: entropy"} in fake_github.issue(VERL, 71)["labels"]
    label = fake_github.repo_label(VERL, "rl: entropy")
    assert label is not None and label["color"] != "ededed", label
    assert "rltracker" in (label["description"] or "") and ".github/rltracker.yml" in label["description"]
    assert len(label["description"]) <= 100  # GitHub's limit
    # A second issue of the kind: the label is there, not made again.
    payload = await open_issue(app_ctx, fake_github, 72)
    await act(app_ctx, VERL, 72, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert {"name": "rl: entropy"} in fake_github.issue(VERL, 72)["labels"]
    assert len(fake_github.requests("POST", rf"/repos/{VERL}/labels$")) == 1


async def test_a_label_the_maintainers_made_is_left_as_they_made_it(
        app_ctx: Any, fake_github: Any) -> None:
    """Their colour and description stay; the app only adds it to the issue (in any case:
    GitHub's names are case-insensitive)."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    fake_github.add_issue(VERL, 70, "an older issue", "", "bob", labels=["RL: Entropy"])
    fake_github.label_info.setdefault(VERL.lower(), {})["rl: entropy"] = {
        "color": "b60205", "description": "ours"}
    payload = await open_issue(app_ctx, fake_github, 73)
    await act(app_ctx, VERL, 73, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert {"name": "RL: Entropy"} in fake_github.issue(VERL, 73)["labels"]
    assert fake_github.repo_label(VERL, "rl: entropy") == {
        "name": "RL: Entropy", "color": "b60205", "description": "ours"}
    assert not fake_github.requests("POST", rf"/repos/{VERL}/labels$")


async def test_a_decision_reads_the_label_it_adds_once_and_repeats_are_conditional(
        app_ctx: Any, fake_github: Any) -> None:
    """tidy79: the request count of the label a decision adds, from the fake's recorded calls.
    A decision adds one label at most, and reads it once (`GET /repos/{o}/{r}/labels/{name}`)
    before adding it; a later decision reads it again, conditionally (If-None-Match: GitHub's
    304, which its primary rate limit does not count), so a label a maintainer deleted since
    is made again with its colour rather than created grey by the add. Passed on main too:
    the count it pins is main's (docs/github.md, Review tidy79)."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG + "daily_budget: 10\n")
    label_reads = rf"/repos/{VERL}/labels/"

    async def decide(number: int) -> list[Any]:
        """The label reads of one decision on a new issue."""
        payload = await open_issue(app_ctx, fake_github, number)
        before = len(fake_github.calls)
        await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
        assert {"name": "rl: entropy"} in fake_github.issue(VERL, number)["labels"]
        return [c for c in fake_github.calls[before:]
                if c.method == "GET" and c.path.startswith(label_reads)]

    assert [c.status for c in await decide(74)] == [404]  # then made, with its colour
    assert [c.status for c in await decide(75)] == [200]
    third = await decide(76)
    assert [c.status for c in third] == [304] and "If-None-Match" in third[0].headers
    assert len(fake_github.requests("POST", rf"/repos/{VERL}/labels$")) == 1
    # Deleted by a maintainer since: the next decision's read finds it gone and makes it again.
    fake_github.repo_labels[VERL.lower()].clear()
    assert [c.status for c in await decide(77)] == [404]
    assert fake_github.repo_label(VERL, "rl: entropy")["color"] == "5319e7"
