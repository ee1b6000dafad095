"""A fenced code block in a list item (fence81). CommonMark (markdown-it 4, cmark-gfm) reads a
fence opened after a list marker (`- ```` `, `1. ~~~`) or indented into an item as the item's
code block: its lines, indented to the item's content column, are code up to the closing fence
(indented up to three columns past that column) or to the end of the item (a line indented
less: a code block has no lazy lines, and the fence ends with its container). GitHub shows
them as code: no command. The finder reads the fence against the open list items' content
columns (bot.command_syntax._in_list_items, left81's stack).

Each body is checked against the rendering (tests/test_command_rendered.py's `shown_commands`:
markdown-it with line breaks and GFM's tag filter, built by html5lib)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.command_syntax import parse_command, without_commands
from tests.test_command_rendered import shown_commands

# Shown as code by a fence in a list item.
HIDDEN = [
    "- ```\n  /rltracker stop\n  ```",
    "- ```\n  /rltracker stop",  # never closed: to the end of the comment
    "- ```\n\n  /rltracker stop",  # blank lines and all
    "- ~~~\n  /rltracker stop\n  ~~~",
    "* ```bash\n  /rltracker stop\n  ```",
    "+ ````\n  ```\n  /rltracker stop\n  ````",  # a shorter fence closes nothing
    "1. ~~~\n   /rltracker stop\n   ~~~",
    "1) ```\n   /rltracker stop",
    "- a\n- ```\n  /rltracker stop",  # a second item
    "Log:\n- ```\n  /rltracker stop",  # a bullet interrupts a paragraph
    "Log:\n1. ~~~\n   /rltracker stop",  # so does an item numbered 1
    "- a\n  - ```\n    /rltracker stop",  # a nested item
    "- - ```\n    /rltracker stop",  # two markers on the line
    "1. a\n   - ~~~\n     /rltracker stop\n     ~~~",  # a bullet in an ordered item
    "- a\n\n  ```\n  /rltracker stop\n  ```",  # indented into the item
    "- a\n   ```\n  /rltracker stop",  # one column past the item's content
    "-\n  ```\n  /rltracker stop",  # an item starting empty
    "- ```\n  x\n    /rltracker stop\n  ```",  # deeper in the fence
    "- \n\n   ```\n/rltracker stop",  # an empty item ends at a blank line: a fence of its own
    "1. \nx\n   ```\n/rltracker stop",  # an empty item takes no lazy line: the same
]

# Shown as the writer's line.
SHOWN = [
    ("- ```\n/rltracker stop", ("stop", [])),  # the item ends, and its fence with it
    ("- ```\n x\n/rltracker stop", ("stop", [])),
    ("- ```\n  x\n /rltracker stop\n  ```", ("stop", [])),  # short of the content column
    ("1. ~~~\n  /rltracker stop", ("stop", [])),
    ("- a\n  - ```\n    x\n  /rltracker stop", ("stop", [])),  # the nested item ends
    ("- ```\n  x\n  ```\n  /rltracker stop", ("stop", [])),  # closed inside the item
    ("1. ~~~\n   x\n    ~~~\n   /rltracker stop", ("stop", [])),  # closed one column on
    ("- ```\n  x\n  ```\n\n/rltracker stop", ("stop", [])),  # after the item
    ("- ```\n  x\n\n/rltracker stop", ("stop", [])),  # after an item left unclosed
    ("- a\n```\n```\n/rltracker stop", ("stop", [])),  # a fence after the item
    ("text\n2. ```\n   /rltracker stop", ("stop", [])),  # no list: a paragraph's line
    ("- x ```\n  /rltracker stop", ("stop", [])),  # in prose: no fence
]


@pytest.mark.parametrize(("body", "parsed"), [*((b, None) for b in HIDDEN), *SHOWN])
def test_a_fence_in_a_list_item_hides_the_item_s_lines_as_github_shows(body: str, parsed: Any) -> None:
    """The finder's command, what the analyzers read (a hidden line stays in), and whether
    the rendered comment shows the line as the writer's command, agree."""
    assert parse_command(body) == parsed, body
    if parsed is None:
        assert without_commands(body) == body
    assert shown_commands(body) == [parsed is not None], body
