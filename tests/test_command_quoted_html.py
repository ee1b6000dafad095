"""A command GitHub shows quoted or as code through HTML is no command, as through Markdown
(`>`, fences): a maintainer quoting a reporter's `/rltracker kind ...` in a `<blockquote>`
gave the verdict as theirs, and a `<pre>` block showing how to silence the app silenced it.
Real issue_comment payload from ../shared/fixtures/webhooks/; GitHub is tests/fakegithub.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.command_syntax import parse_command, without_commands
from bot.store.models import Verdict
from bot.webhooks.commands import handle_command
from tests.test_actions_e2e import INST, VERL, install, open_issue


@pytest.mark.parametrize("body", [
    "As the reporter wrote:\n<blockquote>\n/rltracker kind kl_growth\n</blockquote>\nI disagree.",
    "<blockquote>\n\n/rltracker kind kl_growth\n\n</blockquote>",
    '<BLOCKQUOTE cite="#1">\n/rltracker stop\n</BLOCKQUOTE>',
    "To silence the app, write:\n<pre>\n/rltracker stop\n</pre>",
    "<pre>\nlog line\n\n/rltracker stop\n</pre>",
    "<blockquote><pre>\n/rltracker stop\n</pre>\n</blockquote>",
])
def test_a_command_in_an_html_quote_or_pre_block_is_none(body: str) -> None:
    assert parse_command(body) is None, body
    assert without_commands(body) == body


@pytest.mark.parametrize(("body", "parsed"), [
    ("<blockquote>\n/rltracker kind kl_growth\n</blockquote>\n/rltracker stop", ("stop", [])),
    ("<pre>\nx\n</pre>\n/rltracker stop", ("stop", [])),
    ("Quote with `<blockquote>` or `>`.\n/rltracker stop", ("stop", [])),  # a code span
    ("Write it in `<pre>` tags.\n/rltracker stop", ("stop", [])),  # a code span (security75:
    # a bare <pre> in prose boxes the rest of the comment: test_command_rendered.py)
    ("<preview>\n/rltracker stop", ("stop", [])),  # another tag
])
def test_a_command_after_or_beside_such_words_is_read(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed


@pytest.mark.parametrize("body", [
    "The reporter asked for\n<blockquote>\n/rltracker kind kl_growth\n</blockquote>\n"
    "but the logs show an entropy collapse; let us look again.",
    # security71: shown as code (failed on main: the verdict was recorded)
    "If you are sure, a maintainer can write\n<code>\n/rltracker kind kl_growth\n</code>\n"
    "but the logs show an entropy collapse.",
])
async def test_a_maintainer_quoting_a_reporters_verdict_gives_none(
        app_ctx: Any, fake_github: Any, shared_dir: Path, body: str) -> None:
    from gidgethub import sansio

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json")
                      .read_text())
    data["comment"].update(id=880001, author_association="OWNER", body=body)
    data["issue"].update(number=5, state="open")
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    event = sansio.Event(data, event="issue_comment", delivery_id="quoted-880001")
    assert await handle_command(event, app_ctx) == "no_command"
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Verdict))) == []
    assert not fake_github.requests("POST")


@pytest.mark.parametrize("body", [
    "<pre>\nTraceback (most recent call last):\nValueError: nan loss</pre>\n/rltracker stop",
    "<details><summary>log</summary>\n\nstep 100 loss nan</details>\n/rltracker stop",
    "<blockquote>\nthe reporter said so</blockquote>\n/rltracker stop",
])
def test_a_block_closed_at_the_end_of_its_text_hides_nothing_after_it(body: str) -> None:
    """review66: a `<pre>`, `<details>` or `<blockquote>` block closed at the end of its last
    line of text (`...nan loss</pre>`, as logs are pasted) was counted open to the end of the
    comment (only lines starting with `<` were read for tags): the command after it, which
    GitHub shows as the comment's own line, was not answered."""
    assert parse_command(body) == ("stop", [])


@pytest.mark.parametrize("body", [
    "<details>\nclose it with `</details>` when done\n/rltracker stop\n</details>",
    "<pre>\nlog</pre-not-a-close>\n/rltracker stop\n</pre>",
    # a stray closing tag of another kind closes no quote (the browser ignores it)
    "<blockquote>\nsee the </details> tag\n/rltracker kind kl_growth\n</blockquote>",
    "<blockquote>\n</details>\n/rltracker kind kl_growth\n</blockquote>",
])
def test_a_closing_tag_in_a_code_span_or_another_name_keeps_the_block_open(body: str) -> None:
    assert parse_command(body) is None, body


# security71: what GitHub shows as code through `<code>` (inline HTML code, across lines and
# blank lines until `</code>`), a `<textarea>` (GitHub's tag filter prints the tags as text:
# the command shows framed as a sample) and a Markdown code span that runs across lines (a
# hard-wrapped "type `\n/rltracker stop` to ..."): quoted, not said.
SHOWN_AS_CODE = [
    "To silence the app:\n<code>\n/rltracker stop\n</code>",
    "<p><code>\n/rltracker stop\n</code></p>",
    '<CODE class="language-text">\n/rltracker kind kl_growth\n</CODE>',
    "<textarea>\n/rltracker stop\n</textarea>",
    "<textarea rows=3>\nstep 1 nan\n\n/rltracker stop\n</textarea>",
    "To silence it, type `\n/rltracker stop` in a comment.",
    "Write `\n/rltracker stop\n` to silence it.",
    "Use ``\n/rltracker stop ` with a backtick\n`` if you must.",
    "- the command `\n/rltracker stop` mutes it",
    "Text `\n*not a list item*\n/rltracker stop`",
    "#hashtag, no heading: `\n/rltracker stop`",
]


@pytest.mark.parametrize("body", SHOWN_AS_CODE)
def test_a_command_shown_as_code_through_html_or_a_span_across_lines_is_none(body: str) -> None:
    """Failed on main: each was done (or, with the closing backtick on its line, answered as
    an unknown command)."""
    assert parse_command(body) is None, body
    assert without_commands(body) == body


@pytest.mark.parametrize(("body", "parsed"), [
    ("<code>\nx</code>\n\n/rltracker stop", ("stop", [])),  # closed where its text ends
    # (without the blank line the command is the HTML block's raw text, shown run into "x":
    # tests/test_command_raw_html.py)
    ("<code>x</code> is the flag\n/rltracker stop", ("stop", [])),  # opened and closed
    ("<codex>\n/rltracker stop", ("stop", [])),  # another tag
    ("<textarea>\nx\n</textarea>\n/rltracker stop", ("stop", [])),
    ("An unpaired ` here\n/rltracker stop", ("stop", [])),  # no closer: a literal backtick
    ("Text with `\n\n/rltracker stop\n` and more", ("stop", [])),  # a blank line ends the paragraph
    ("# Heading with `\n/rltracker stop", ("stop", [])),  # a heading is a line of its own
    ("Two ``\n/rltracker stop\n` unlike", ("stop", [])),  # a run of another length closes none
    ("`a` and `b`\n/rltracker stop\n`c`", ("stop", [])),  # spans closed on their own lines
])
def test_a_command_beside_code_closed_before_it_is_read(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed

