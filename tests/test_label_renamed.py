"""The kind label the app added, renamed by a maintainer, still follows the comment's kind
(user82).

The app adds the label its repository's config names for the kind (`rl: entropy`) and removes
it when the kind the comment says changes (an edit of the issue, a person's `/rltracker kind`
or `not-a-failure`: `failure_comment.relabel`). A maintainer who renamed the label in the
repository's settings (`rl: entropy` -> `training: entropy`: GitHub keeps the label, its id,
on every issue) left the app removing a name GitHub no longer knows: answered 404, taken for
"a person took it off", so the issue kept `training: entropy` beside the new kind's label, a
wrong kind shown on the issue for good. The app now keeps the label's id with its name and,
when the name answers 404, removes the label of that id under its new name. A label a person
took off stays off. GitHub is tests/fakegithub.py over HTTP; SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

from bot.speaking.decide import act
from tests.test_actions_e2e import FAILURE, NOT_FAILURE, VERL, app_comments, install, open_issue

CONFIG = "labels:\n  entropy_collapse: 'rl: entropy'\n  kl_growth: 'rl: kl'\n"
KL = copy.deepcopy(FAILURE)
KL["failure"].update(category="kl_growth", categories=["kl_growth"],
                     evidence=["kl divergence grows", "reward falls"])


def labels_of(fake: Any, number: int) -> list[str]:
    return sorted(label["name"] for label in fake.issue(VERL, number)["labels"])


async def _posted(ctx: Any, fake: Any, number: int) -> dict[str, Any]:
    await install(ctx, fake)
    fake.set_file(VERL, ".github/rltracker.yml", CONFIG)
    payload = await open_issue(ctx, fake, number)
    await act(ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert len(app_comments(fake, VERL, number)) == 1
    assert labels_of(fake, number) == ["rl: entropy"]
    return payload


async def test_a_renamed_label_follows_the_kind(app_ctx: Any, fake_github: Any) -> None:
    """Failed on main: ['rl: kl', 'training: entropy'] after the edit."""
    payload = await _posted(app_ctx, fake_github, 81)
    fake_github.rename_label(VERL, "rl: entropy", "training: entropy")
    assert labels_of(fake_github, 81) == ["training: entropy"]
    out = await act(app_ctx, VERL, 81, trigger="issues.edited", payload=payload, analysis=KL)
    assert out["failure_comment"] == "updated"
    assert labels_of(fake_github, 81) == ["rl: kl"]
    # and the new kind's label, renamed in turn, goes when the issue no longer reads as one
    fake_github.rename_label(VERL, "rl: kl", "training: kl")
    await act(app_ctx, VERL, 81, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert labels_of(fake_github, 81) == []


async def test_a_label_a_person_took_off_stays_off(app_ctx: Any, fake_github: Any) -> None:
    """Guard (passes on main too): a 404 for the label's name because a person removed it
    from the issue removes nothing else; the new kind's label is added."""
    payload = await _posted(app_ctx, fake_github, 82)
    fake_github.issue(VERL, 82)["labels"] = [{"name": "bug"}]  # theirs, put in its place
    await act(app_ctx, VERL, 82, trigger="issues.edited", payload=payload, analysis=KL)
    assert labels_of(fake_github, 82) == ["bug", "rl: kl"]
