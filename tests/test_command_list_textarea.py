"""A `<textarea>` in a list item (left81). CommonMark (markdown-it 4, cmark-gfm) reads a list
item's lines, indented to its content column, as the item's: a `<textarea>` starting the item
(`- <textarea>`) or indented into it is an HTML block of type 1 there, raw text up to the line
holding `</textarea>` or to the end of the item (an HTML block has no lazy lines: a line
indented less ends it). GitHub's tag filter prints its tags as text, so its lines show run into
one: no command (security79's rule, now in list items). The finder tracks the open list items'
content columns for this rule only (bot.command_syntax._in_list_items).

Each body is checked against the rendering (tests/test_command_rendered.py's `shown_commands`:
markdown-it with line breaks and GFM's tag filter, built by html5lib)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.command_syntax import parse_command, without_commands
from tests.test_command_rendered import shown_commands

# Hidden by a `<textarea>` in a list item (each read as a command on main).
HIDDEN = [
    "- <textarea>\n  x\n  /rltracker stop\n  </textarea>",
    "- <textarea>\n  /rltracker stop",
    "- <textarea>\n\n  /rltracker stop",  # blank lines and all
    "* <textarea rows=3>\n  /rltracker stop",
    "+ <textarea>\n  /rltracker stop",
    "1. <textarea>\n   /rltracker stop",
    "1) <textarea>\n   /rltracker stop",
    "- a\n- <textarea>\n  /rltracker stop",  # a second item
    "Log:\n- <textarea>\n  /rltracker stop",  # a bullet interrupts a paragraph
    "Log:\n1. <textarea>\n   /rltracker stop",  # so does an item numbered 1
    "- a\n\n    <textarea>\n  /rltracker stop",  # indented two columns into the item
    "-\n  <textarea>\n  /rltracker stop",  # an item starting empty
]

# Shown as the writer's line (each agreed on main, or differed where it says).
SHOWN = [
    ("- <textarea>\n/rltracker stop", ("stop", [])),  # the item ends: no lazy line
    ("- <textarea>\n /rltracker stop", ("stop", [])),
    ("1. <textarea>\n  /rltracker stop", ("stop", [])),  # short of the content column
    ("   - <textarea>\n  /rltracker stop", ("stop", [])),
    ("- a\n  - <textarea>\n    x\n  /rltracker stop", ("stop", [])),  # the nested item ends
    ("-     <textarea>\n  /rltracker stop", ("stop", [])),  # the item's indented code
    ("- x <textarea>\n  /rltracker stop", ("stop", [])),  # in prose: printed as text
    ("text\n2. <textarea>\n   /rltracker stop", ("stop", [])),  # no list: a paragraph's line
    ("- - -\n<textarea>\n</textarea>\n/rltracker stop", ("stop", [])),  # a thematic break
    # a textarea in an item ends with it (each hidden on main: read to `</textarea>`)
    ("- a\n  <textarea>\n/rltracker stop", ("stop", [])),
    ("- a\n\n  <textarea>\n\n/rltracker stop", ("stop", [])),
]


@pytest.mark.parametrize("body", HIDDEN)
def test_a_textarea_in_a_list_item_hides_its_lines(body: str) -> None:
    assert parse_command(body) is None, body
    assert without_commands(body) == body  # and the analyzers read the lines


@pytest.mark.parametrize(("body", "parsed"), SHOWN)
def test_a_line_outside_the_item_s_textarea_is_a_command(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed, body


@pytest.mark.parametrize("body", [*HIDDEN, *(b for b, _ in SHOWN)])
def test_the_finder_agrees_with_the_rendered_comment(body: str) -> None:
    assert shown_commands(body) == [parse_command(body) is not None], body
