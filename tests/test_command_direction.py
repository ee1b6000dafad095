"""security79: a command is a line the reader sees as written, in the order the app reads it.

Direction controls. An override (LRO, RLO) shows the characters after it in reverse order, an
embedding or an isolate moves the neutral characters around it: "/rltracker kind
\\u202espalloc_yportne" shows "/rltracker kind entropy_collapse", "/rltracker \\u202epots" shows
"/rltracker stop", a line ending in a control shows what follows it in the same visual line
reordered. A line holding one (typed, or as `&#x202E;` which GitHub shows as the control) is no
command now; on main each was read (an unknown word or kind, answered as such), or a
well-shown `\\u2066/rltracker stop\\u2069` was taken for a command while `\\u2066` hid it
from the prefix. In GitHub's comments a line break is a <br>, which ends a control's reach
(measured in Chromium below); the lines of a raw HTML block have no <br> and run into one,
so a control on an earlier line of the block reaches the command's. The marks (LRM, RLM, ALM)
stay dropped as security75 decided: they move neutral characters only.

`<textarea>`. CommonMark 0.30 (markdown-it 4, and the cmark-gfm GitHub renders with: checked
with its Python binding) made `<textarea>` an HTML block of type 1, as `<pre>`: raw text up to
the first line holding `</textarea>`, blank lines included; GFM's tag filter then prints the
tags as text. So its lines run into one line of text ("<textarea> x /rltracker stop
</textarea>"), hidden as security71 chose, but only when the block starts where a block may
start: on main a `<textarea>` after another tag in prose, indented four columns, or inside a
`<div>` block opened one, a second one nested, and an end tag in a code span or an HTML comment
(still the end: the block is raw text) did not close it, each hiding a command GitHub shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.command_syntax import only_commands, opening_command, parse_command, without_commands
from bot.store.models import Verdict
from bot.webhooks.commands import handle_command
from tests.browser import chromium  # noqa: F401 - the fixture
from tests.test_actions_e2e import VERL, install, open_issue
from tests.test_command_rendered import _comment_event, github_html, shown_commands

RLO, LRI, PDI = "\u202e", "\u2066", "\u2069"

# Shown in another order than read, or not as the line it is: no command (each was read on main).
REORDERED = [
    f"/rltracker kind {RLO}htworg_lk",  # shows "kind kl_growth"
    f"/rltracker {RLO}pots",  # shows "/rltracker stop"
    f"/rltracker stop {RLO}",
    f"/rltracker kind kl_growth{LRI} and more{PDI}",
    "/rltracker kind &#x202E;htworg_lk",  # GitHub shows the reference as the control
    "/rltracker &#8238;pots",
    "/rltracker stop \u202b",  # an embedding
    f"<div>\nthe note {RLO}\n/rltracker stop\n</div>",  # raw HTML: one visual line
]

# The controls' reach ends at a line break (GitHub's <br>): the command's line is as written.
AS_WRITTEN = [
    (f"the log says {RLO}nan\n/rltracker kind kl_growth", ("kind", ["kl_growth"])),
    (f"{RLO}\n\n/rltracker stop", ("stop", [])),
    ("\u200f/rltracker stop", ("stop", [])),  # a mark: security75's, dropped
]


@pytest.mark.parametrize("body", REORDERED)
def test_a_line_with_a_direction_control_is_no_command(body: str) -> None:
    assert parse_command(body) is None, body
    assert opening_command(body) is None and not only_commands(body)
    assert without_commands(body) == body  # and the analyzers read the line, as shown


@pytest.mark.parametrize(("body", "parsed"), AS_WRITTEN)
def test_a_control_on_another_line_leaves_the_command(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed


# `<textarea>` where GitHub shows the command as the writer's line (each hidden on main).
TEXTAREA_SHOWN = [
    "<b>Note</b> <textarea>\n/rltracker stop",  # a paragraph: its tag is printed as text
    "    <textarea>\n\n/rltracker stop",  # indented code
    "<div>\n<textarea>\n\n/rltracker stop",  # inside a <div> block no block starts
    "<textarea>\n<textarea>\n</textarea>\n/rltracker stop",  # no nesting: the first end ends it
    "<textarea>\n`</textarea>`\n/rltracker stop",  # raw text: no code span
    "<textarea>\n<!-- </textarea> -->\n/rltracker stop",  # the comment closes on its line
    "<textarea>a</textarea><textarea>\n\n/rltracker stop",  # ended on its first line
]
# `<textarea>` hiding the command (kept from security71, now checked against the rendering).
TEXTAREA_HIDDEN = [
    "<textarea>\n/rltracker stop\n</textarea>",
    "<textarea rows=3>\nstep 1 nan\n\n/rltracker stop\n</textarea>",
    "Log:\n<textarea>\n\n/rltracker stop",  # interrupts a paragraph; unclosed: to the end
    "> quoted\n<textarea>\n\n/rltracker stop",
    "<textarea>\nx\n</textarea >\n/rltracker stop",  # not its end tag
    "<textarea>\n/rltracker stop</textarea>",
]


@pytest.mark.parametrize("body", TEXTAREA_SHOWN)
def test_a_textarea_github_prints_as_text_hides_nothing(body: str) -> None:
    assert parse_command(body) == ("stop", []), body


@pytest.mark.parametrize("body", [*REORDERED, *(b for b, _ in AS_WRITTEN[:2]), *TEXTAREA_SHOWN,
                                  *TEXTAREA_HIDDEN])
def test_the_finder_agrees_with_the_rendered_comment(body: str) -> None:
    """GitHub's rendering (tests/test_command_rendered.py's `shown_commands`: markdown-it with
    line breaks and GFM's tag filter, built by html5lib) shows the command as the writer's
    line exactly when the finder reads one. The same bodies rendered by cmark-gfm (its
    Python binding, not a dependency) gave the same trees (docs/github.md). (The mark
    before a command is left out: the oracle does not drop it, the finder does.)"""
    assert shown_commands(body) == [parse_command(body) is not None], body


# The order a browser lays out each command's characters in: left edges, first to last.
ORDER = """
return Array.from(document.querySelectorAll('div.c')).map(function (div) {
  var walker = document.createTreeWalker(div, NodeFilter.SHOW_TEXT), node;
  while ((node = walker.nextNode()) && node.data.indexOf('/rltracker') < 0) {}
  var start = node.data.indexOf('/rltracker'), lefts = [];
  for (var i = start; i < start + 15; i++) {
    var r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
    lefts.push(r.getBoundingClientRect().left);
  }
  return lefts;
});
"""


async def test_a_browser_shows_a_command_the_finder_reads_in_its_order(
        chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    """Chromium lays out each rendered comment: the 15 characters from `/rltracker` of every
    line the finder reads as a command run left to right, and an override on the line (or
    on an earlier line of a raw HTML block) turns them around; one on the line before, ended
    by the <br>, does not."""
    bodies = [f"/rltracker {RLO}pots and more", f"<div>\nthe note {RLO}\n/rltracker stop\n</div>",
              f"the log says {RLO}nan\n/rltracker kind kl_growth", "/rltracker kind kl_growth"]
    page = tmp_path / "comments.html"
    page.write_text('<!doctype html><meta charset="utf-8"><body style="font:16px monospace">'
                    + "".join(f'<div class="c"><div dir="auto">{github_html(b)}</div></div>'
                              for b in bodies), encoding="utf-8")
    lefts = (await chromium.evaluate([page.as_uri()], ORDER, width=1000))[page.as_uri()]
    in_order = [all(a < b for a, b in zip(run, run[1:], strict=False)) for run in lefts]
    assert in_order == [False, False, True, True], lefts
    assert [parse_command(b) is not None for b in bodies] == [False, False, True, True]


async def test_a_verdict_spelled_with_an_override_records_nothing(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """A maintainer's line shown as "/rltracker kind kl_growth" but holding RLO and the kind
    spelled backwards: on main it was read (kind "\\u202ehtworg_lk") and answered on GitHub
    as an unknown kind; now it is no command: nothing recorded, nothing posted."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    fake_github.set_permission(VERL, "Codertocat", "write")
    event = _comment_event(shared_dir, 880701, f"Looked at the log.\n/rltracker kind {RLO}htworg_lk")
    assert await handle_command(event, app_ctx) == "no_command"
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Verdict))) == []
    assert not fake_github.requests("POST")


async def test_a_verdict_after_a_textarea_in_prose_is_recorded(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub prints a `<textarea>` in prose as text and shows the next line as the writer's:
    on main the verdict was hidden (nothing recorded)."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    fake_github.set_permission(VERL, "Codertocat", "write")
    body = "<b>Reporter</b> pasted the run in a <textarea>\n/rltracker kind kl_growth"
    await handle_command(_comment_event(shared_dir, 880702, body), app_ctx)
    async with app_ctx.sessionmaker() as session:
        [verdict] = list(await session.scalars(select(Verdict)))
    assert verdict.category == "kl_growth"
