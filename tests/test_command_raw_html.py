"""commands82: a command in raw HTML, and the block structure GitHub reads.

An HTML block's lines are raw HTML: GitHub keeps their line feeds, and the browser lays them out
as spaces, so a line runs into the text before it unless a block element (`<div>`, `<p>`,
`<br>`, `<li>`, `<td>`, ...) starts or ends between them: `<div>`, `x`, `/rltracker stop` shows
"x /rltracker stop" (fence81's and left81's first left shape). A list marker, a heading or a fence
in a type 6/7 block (`<div>`, `<span>` alone) is raw text up to the blank line that ends it. A tag
GitHub's tag filter prints as text (`<script>`, `<style>`, `<textarea>`, `</script>`) is text on
its line, and `<script>`/`<style>` start a block of type 1 as `<textarea>` does, up to the line
holding `</script>`, `</style>`, `</textarea>` or `</pre>`. In a tight list item, a paragraph
straight after such a block runs into its last line (no `<p>`). Characters GitHub does not show
(a zero-width space) are text to CommonMark: `\\u200b```` ` closes no fence.

The other way, GitHub shows these as the writer's line, and the finder missed them: a `>` line
that opens an HTML block or a fence takes no lazy line (`> <div>` then `/rltracker stop`), and
a `<div>` inside a `<textarea>` (printed as text, its content is HTML) starts a line.

Each body is checked against the rendering (tests/test_command_rendered.py's `shown_commands`:
markdown-it with line breaks and GFM's tag filter, built by html5lib); each also agreed with
cmark-gfm's rendering (compared by hand, not in the suite)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.command_syntax import parse_command, without_commands
from tests.test_command_rendered import shown_commands

# Not the writer's own line: run into the text before it, or code (each read on main).
HIDDEN = [
    "<div>\nx\n/rltracker stop\n</div>",
    "<span>\nx\n/rltracker stop",
    "<div>\n<b>x</b>\n/rltracker stop",
    "<code>\nx</code>\n/rltracker stop",  # read by security71's test: the code closed, not a line
    "<div>\nx &nbsp;\n/rltracker stop",
    "- <div>x\n  /rltracker stop",
    "<div>\n- a\n/rltracker stop",  # a list marker in the block is its raw text
    "<div>\n# a\n/rltracker stop",
    "<div>\n* a\n- ```\n/rltracker stop",  # fence81's left shape
    "x\n<div>\ny\n/rltracker stop",  # a block tag interrupts a paragraph
    "</script>\n/rltracker stop",  # printed as text by the tag filter
    "<div>\n<script>\n/rltracker stop",
    "<script>\n/rltracker stop\n</script>",
    "<style>\n\n/rltracker stop\n</style>",
    "- <textarea>\n  x\n  </textarea>\n  /rltracker stop",  # tight: run into `</textarea>`
    "```\n\u200b```\n/rltracker stop\n```",  # no closing fence: still code
    "* a\n   <td><section>\n  /rltracker stop",  # a tight item's text, then raw HTML
    "- > x\n  /rltracker stop",  # a quote in a list item: its lazy line
    "1. \n</script>\n   /rltracker stop",  # an empty item ends; then a block of type 7
    "<div>\nx\n\n<span>\n/rltracker stop",  # raw HTML goes on over the blank line
    "<div>\nx</span>\n/rltracker stop",  # an end tag of an inline element breaks nothing
    "<?php\n/rltracker stop\n?>",  # types 3, 4 and 5: a (bogus) comment to the browser
    "<!DOCTYPE x\n/rltracker stop\n>",
    "<![CDATA[\n/rltracker stop\n]]>",
    "> x\n===\n/rltracker stop",  # no underline on a lazy line: the quote's text goes on
    "- a\n  x\n  - > x\n/rltracker stop",  # a nested item's quote, read in its columns
    "x\n<!-- c -->\n</textarea>\n/rltracker stop",  # a comment (type 2) interrupts x
    "<div>\n<?php\n   /rltracker stop",  # a bogus comment in raw HTML, to the first `>`
]

# The writer's own line (each missed on main).
SHOWN = [
    ("> <div>\n/rltracker stop", ("stop", [])),  # an HTML block takes no lazy line
    ("> - ```\n/rltracker stop", ("stop", [])),
    ("> <textarea>\n/rltracker stop", ("stop", [])),
    ("> - <textarea>\nx\n/rltracker stop", ("stop", [])),  # left81's left shape
    ("<textarea>\n<div>\n/rltracker stop\n</textarea>", ("stop", [])),
    ("\u200b> quoted\n/rltracker stop", ("stop", [])),  # a paragraph, not a quote
    ("x\n    /rltracker stop", ("stop", [])),  # an indented line goes on the paragraph
    ("- a\n    /rltracker stop", ("stop", [])),  # (left81's indented shape)
    ("    <!--\n/rltracker stop", ("stop", [])),  # indented code: its comment is its text
    ("    <details>\n\n/rltracker stop", ("stop", [])),
    ("> - \n/rltracker stop", ("stop", [])),  # an empty item in a quote: no lazy line
]

# Agreed on main; kept so the rendering sees both sides of the rule.
AGREED = [
    ("<div>\n/rltracker stop\n</div>", ("stop", [])),
    ("<div>\nx<br>\n/rltracker stop", ("stop", [])),
    ("<div>\n<p>x</p>\n/rltracker stop", ("stop", [])),
    ("<div>\nx\n\n/rltracker stop", ("stop", [])),
    ("<div>\n<!-- note -->\n/rltracker stop", ("stop", [])),
    ("<table>\n<tr><td>\n/rltracker stop\n</td></tr></table>", ("stop", [])),
    ("- <textarea>\n  x\n  </textarea>\n\n  /rltracker stop", ("stop", [])),
    ("<textarea>\nx\n</textarea>\n/rltracker stop", ("stop", [])),  # a paragraph of its own
    ("<span>x</span>\n/rltracker stop", ("stop", [])),
    ("<div>\n```\n/rltracker stop\n```", None),
    ("\u200b/rltracker stop", ("stop", [])),
    ("<script>\nx\n</style>\n/rltracker stop", ("stop", [])),  # any type 1 end tag ends it
    ("* a\n<span>\n/rltracker stop", ("stop", [])),  # the list ends: a block of its own
    ("- a\n  <span>\n  /rltracker stop", ("stop", [])),  # type 7 interrupts no paragraph
    ("<div>\nx\n\n- <span>\n  /rltracker stop", ("stop", [])),  # a list item starts a line
    ("<div>\nx</div>\n/rltracker stop", ("stop", [])),  # after the block element's end
    ("<!DOCTYPE html>\n/rltracker stop", ("stop", [])),  # the declaration ends on its line
    ("<span>-->\n/rltracker stop", ("stop", [])),  # no type 7 block: text after the tag
    ("x\n===\n/rltracker stop", ("stop", [])),  # a setext heading ends on its underline
    ("<?x>\n/rltracker stop\n?>", ("stop", [])),  # the bogus comment ends at the first `>`
    ("<span>\n<!DOCTYPE html>\n/rltracker stop", ("stop", [])),  # shown as nothing
    ("<div>\n<?php echo 1 ?>\n/rltracker stop", ("stop", [])),
    ("> x\n    # h\n/rltracker stop", None),  # indented: the quote's lazy text, no heading
    ("- # h\n  <span>\n  /rltracker stop", ("stop", [])),  # a heading is a block: a new line
]


@pytest.mark.parametrize(("body", "parsed"), [*((b, None) for b in HIDDEN), *SHOWN, *AGREED])
def test_a_command_is_read_where_github_shows_it_as_a_line_of_its_own(body: str, parsed: Any) -> None:
    """The finder's command, what the analyzers read (a hidden line stays in), and whether
    the rendered comment shows the line as the writer's command, agree."""
    assert parse_command(body) == parsed, body
    if parsed is None:
        assert without_commands(body) == body
    else:
        assert "/rltracker" not in without_commands(body)
    if "\u200b/" not in body:  # the rendering sees the zero-width space as text before it
        # (a declaration's content is not shown at all)
        assert any(shown_commands(body)) == (parsed is not None), body


def test_a_tag_alone_after_a_quote_ends_it_as_cmark_gfm_reads_it() -> None:
    """cmark-gfm, GitHub's renderer, ends a `>` quote's paragraph at a line starting an HTML
    block of type 7 (`<span>` alone), so the line after it is the writer's; markdown-it reads
    the tag as the quote's lazy line (the two renderers differ here: the finder follows
    GitHub's; compared by hand with cmark-gfm 2025.10.22, not in the suite)."""
    assert parse_command("> x\n<span>\n/rltracker stop") == ("stop", [])


# GFM tables (cmark-gfm's extension; markdown-it's CommonMark preset has none, so the rendering
# above cannot judge them): a delimiter row under a row of as many cells makes that row the
# header and the lines after it rows, up to a blank line or another block. A command there is a
# table cell, no line of its own: as `| /rltracker stop |` was not read, neither is a header
# or a row written without pipes (each read on main). Compared by hand with cmark-gfm 2025.10.22.
IN_A_TABLE = [
    "/rltracker stop | x\n---|---",
    "a | b\n---|---\n/rltracker stop",  # a row: any line after the table's
    "x\na | b\n---|---\n/rltracker stop",
    "| a |\n|---|\n/rltracker stop",
    "| a | b |\n|:-:|--:|\n| x | y |\n/rltracker stop",
    "- a | b\n  --|--\n  /rltracker stop",  # a table in a list item
]
NOT_A_TABLE = [
    "a | b\n---|---\nc | d\n\n/rltracker stop",  # a blank line ends it
    "a | b\n--|--\n- x\n/rltracker stop",  # so does a list
    "a | b | c\n--|--\n/rltracker stop",  # three cells over two: a paragraph
    "/rltracker stop\n---|---",
    "a | b\n---\n/rltracker stop",  # a setext heading
    "- a | b\n  --|--\n/rltracker stop",  # the item ends, and its table
]


@pytest.mark.parametrize("body", IN_A_TABLE)
def test_a_command_in_a_table_cell_is_none(body: str) -> None:
    assert parse_command(body) is None, body
    assert without_commands(body) == body


@pytest.mark.parametrize("body", NOT_A_TABLE)
def test_a_command_after_or_beside_no_table_is_read(body: str) -> None:
    assert parse_command(body) == ("stop", []), body
