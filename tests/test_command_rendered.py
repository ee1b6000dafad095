"""security75: a command is what a reader of the rendered comment sees as the writer's own line.

GFM (the spec's HTML blocks): `<pre>` starts a block of type 1, raw text up to `</pre>`, blank
lines and all, shown in a code box. `<code>` alone on a line starts one of type 7, which the
next blank line ends; `<code>x` or a `<code>` in prose is inline HTML in its paragraph. Either
way the lines after it, up to the end of that paragraph or block, sit in the open code element
and show in the grey code box: "Wrap it in <code> tags.\\n/rltracker stop" shows the command as
code (it was done). After the blank line the paragraphs are Markdown again: the browser keeps
them inside the still-open element (the HTML standard's tree building), in its font but without
the box, with their emphasis, links and fences rendered: the writer's text, and a command there
is one (it was not done: the unclosed `<code>` hid every later command of the comment, as `<pre>`
does). A line going on from a `>` quote's paragraph (no blank line, no `>`) is that paragraph's
lazy continuation: shown inside the quote (it was done).

`test_the_finder_agrees_with_the_rendered_tree` checks each body against CommonMark's rendering
(markdown-it, HTML on) built into a tree as a browser builds it (html5lib): a command runs when
its line is shown outside any `pre`, `blockquote` or `details` and outside a `code` element
within its own block. Real issue_comment payload from ../shared/fixtures/webhooks/; GitHub is
tests/fakegithub.py over HTTP.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import html5lib
import pytest
from markdown_it import MarkdownIt
from sqlalchemy import select

from bot.command_syntax import parse_command, without_commands
from bot.store.models import Verdict
from bot.webhooks.commands import handle_command
from tests.test_actions_e2e import INST, VERL, install, open_issue

# Shown as code or quoted: no command (each was done on main).
NOT_SAID = [
    "Wrap it in <code> tags.\n/rltracker stop",
    "The flag is <code>--kl\n/rltracker kind kl_growth",
    "- the command <code>\n/rltracker stop",
    "<code>\n- not a list item here\n/rltracker stop",  # raw text of the HTML block
    "<code>x\n/rltracker stop\n</code> is the line",
    "> If it is noise, write\n/rltracker stop",  # a lazy line of the quote
    "As bob wrote:\n> it is the KL\n/rltracker kind kl_growth",
    "> the reporter said\ntwice:\n/rltracker kind kl_growth",
    "> - a quoted list item\n/rltracker stop",
    # a bare tag in prose: the browser keeps the rest of the comment in the element, boxed,
    # folded or quoted (each was done on main: only a line starting with `<` opened one)
    "Write it in <pre> tags.\n/rltracker stop",
    "Write it in <pre> tags.\n\n/rltracker stop",
    "Fold long logs in <details> tags.\n\n/rltracker stop",
    "Quote with <blockquote> tags.\n\n/rltracker kind kl_growth",
    "Done <!-- note --> <details>\n/rltracker stop",
]

# The writer's own line: a command (each was hidden on main: an unclosed `<code>`).
SAID = [
    ("<code>\nsome log text\n\n/rltracker stop", ("stop", [])),
    ("<code>x\n\n/rltracker stop", ("stop", [])),
    ("Wrap it in <code> tags.\n\n/rltracker stop", ("stop", [])),
    ("<code>\nlog line\n\n/rltracker stop\n\n</code>", ("stop", [])),
    ("<CODE class=x>\nKL 12.0\n\n/rltracker kind kl_growth", ("kind", ["kl_growth"])),
]

# Already agreed on main; kept here so the oracle sees both sides of each rule.
AGREED = [
    ("<code>\n/rltracker stop\n</code>", None),
    ("<pre>\nx\n\n/rltracker stop", None),
    ("Use `<code>` here.\n/rltracker stop", ("stop", [])),
    ("<code>x</code>\n/rltracker stop", ("stop", [])),
    ("<!-- <code> -->\n/rltracker stop", ("stop", [])),
    ("> quoted\n\n/rltracker stop", ("stop", [])),
    ("> quoted\n>\n/rltracker stop", ("stop", [])),
    ("> ---\n/rltracker stop", ("stop", [])),
    ("> ```\n/rltracker stop", ("stop", [])),
    ("> # heading\n/rltracker stop", ("stop", [])),
    ("> quoted\n- item\n/rltracker stop", ("stop", [])),  # the list ends the quote
    ("- item\n/rltracker stop", ("stop", [])),  # a list item's text, the writer's own
    ("<code>x\n- item\n/rltracker stop", ("stop", [])),  # the list closes the code's paragraph
    ("Fold logs in `<details>` tags.\n\n/rltracker stop", ("stop", [])),  # a code span
    ("Fold logs in <!-- <details> --> tags.\n/rltracker stop", ("stop", [])),  # a comment
    ("<pre>x</pre> is the tag\n/rltracker stop", ("stop", [])),  # closed on its line
]


@pytest.mark.parametrize("body", NOT_SAID)
def test_a_command_the_reader_sees_as_code_or_quoted_is_none(body: str) -> None:
    assert parse_command(body) is None, body
    assert without_commands(body) == body  # and the analyzers read the line


@pytest.mark.parametrize(("body", "parsed"), SAID)
def test_a_command_after_the_blank_line_that_ends_a_code_paragraph_is_read(
        body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed
    assert "/rltracker" not in without_commands(body)


# GitHub renders a comment's line breaks as <br> (`breaks`), and its tag filter (GFM's
# tagfilter extension) prints these tags as text: `<textarea>` holds nothing (security79).
_RENDER = MarkdownIt("commonmark", {"html": True, "breaks": True})
_TAGFILTER = re.compile(r"<(/?(?:title|textarea|style|xmp|iframe|noembed|noframes|script|plaintext))"
                        r"(?=[\s/>])", re.IGNORECASE)
_BLOCKS = {"p", "li", "div", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6"}
# elements that start a new line where they open and close (a <br> ends one)
_LINE_BREAKING = _BLOCKS | {"br", "pre", "blockquote", "details", "summary", "ul", "ol", "hr",
                            "table", "tr", "body", "html"}
_DIRECTION_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def github_html(body: str) -> str:
    """`body` rendered as GitHub renders a comment: CommonMark (markdown-it, HTML on, line
    breaks kept) with GFM's tag filter applied to its raw HTML."""
    return _TAGFILTER.sub(r"&lt;\1", _RENDER.render(body))


def shown_commands(body: str) -> list[bool]:
    """For each `/rltracker` the rendered comment shows: whether a reader sees it as the
    writer's own command line. It must start a line as the browser lays it out (after a
    block's start or a <br>: raw HTML's line feeds are spaces, so a line of an HTML block runs
    into the one before it), sit outside pre/blockquote/details and outside a code element
    opened within its own block (a block nested in a code element gets its font, not its
    box), and its line must hold no direction control (an embedding, override or isolate may
    show the words in another order; a <br> or a block ends its reach: Chromium)."""
    tree = html5lib.parseFragment(github_html(body), container="div", treebuilder="etree",
                                  namespaceHTMLElements=False)
    lines: list[list[tuple[str, bool]]] = [[]]  # each laid-out line: (text, hidden) pieces

    def text(value: str | None, path: list[str]) -> None:
        if value:
            inline = path[max((i for i, tag in enumerate(path) if tag in _BLOCKS), default=0):]
            hidden = bool({"pre", "blockquote", "details"} & set(path)) or "code" in inline
            pieces = value.split("\n") if "pre" in path else [value]
            for i, piece in enumerate(pieces):
                if i:
                    lines.append([])
                lines[-1].append((piece, hidden))

    def walk(element: Any, path: list[str]) -> None:
        if not isinstance(element.tag, str):
            return  # an HTML comment: not shown (its tail is its parent's text)
        tag = element.tag
        path = [*path, tag]
        if tag in _LINE_BREAKING:
            lines.append([])
        text(element.text, path)
        for child in element:
            walk(child, path)
            text(child.tail, path)
        if tag in _LINE_BREAKING:
            lines.append([])

    walk(tree, [])
    shown: list[bool] = []
    for line in lines:
        before = ""
        reordered = any(_DIRECTION_CONTROLS & set(piece) for piece, _ in line)
        for piece, hidden in line:
            start = piece.find("/rltracker")
            while start >= 0:
                own = not (before + piece[:start]).strip(" \t\n\r\f")
                shown.append(own and not hidden and not reordered)
                start = piece.find("/rltracker", start + 1)
            before += piece
    return shown


def _shown_as_the_writers_line(body: str) -> bool:
    """`shown_commands` of a body showing `/rltracker` once."""
    found = shown_commands(body)
    assert len(found) == 1, body
    return found[0]


@pytest.mark.parametrize(("body", "parsed"), [*((b, None) for b in NOT_SAID), *SAID, *AGREED])
def test_the_finder_agrees_with_the_rendered_tree(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed
    assert _shown_as_the_writers_line(body) == (parse_command(body) is not None), body


def _comment_event(shared_dir: Path, comment_id: int, body: str) -> Any:
    from gidgethub import sansio

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json")
                      .read_text())
    data["comment"].update(id=comment_id, author_association="OWNER", body=body)
    data["issue"].update(number=5, state="open")
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    return sansio.Event(data, event="issue_comment", delivery_id=f"rendered-{comment_id}")


@pytest.mark.parametrize("body", [
    "Wrap the category in <code> tags, e.g.\n/rltracker kind kl_growth\nand it is recorded.",
    "As the reporter wrote:\n> KL grows without bound\n/rltracker kind kl_growth",
])
async def test_a_verdict_shown_as_code_or_quoted_records_nothing(
        app_ctx: Any, fake_github: Any, shared_dir: Path, body: str) -> None:
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    assert await handle_command(_comment_event(shared_dir, 880101, body), app_ctx) == "no_command"
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Verdict))) == []
    assert not fake_github.requests("POST")


async def test_a_verdict_after_a_code_paragraph_is_recorded(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """The maintainer pasted a log line after an unclosed `<code>`, then a blank line and the
    verdict, shown as their own line: on main it was taken for code and nothing was done."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    body = "The run shows it:\n<code>\nstep 900 kl 12.0\n\n/rltracker kind kl_growth"
    fake_github.set_permission(VERL, "Codertocat", "write")
    await handle_command(_comment_event(shared_dir, 880102, body), app_ctx)
    async with app_ctx.sessionmaker() as session:
        [verdict] = list(await session.scalars(select(Verdict)))
    assert verdict.category == "kl_growth"


# security75: characters GitHub does not show, inside or around the command. A zero-width space
# inside the word was a command to the comment handler but not to the opening post's check or the
# analysis (`_may_hold_command` looked for the word before dropping them); a soft hyphen or a
# left-to-right mark (an RTL keyboard's) hid a command the reader sees.
INVISIBLE_SPELLINGS = ["/rl\u200btracker stop", "\u00ad/rltracker stop", "/rl\u00adtracker stop",
                       "\u200e/rltracker stop", "/rltracker\u200f stop", "\u061c/rltracker stop"]


@pytest.mark.parametrize("body", INVISIBLE_SPELLINGS)
def test_a_command_spelled_with_invisible_characters_is_read_by_every_reader(body: str) -> None:
    from bot.command_syntax import only_commands, opening_command

    assert parse_command(body) == ("stop", [])
    assert opening_command(body) == "stop"
    assert without_commands(body) == "" and only_commands(body)


async def test_an_opening_post_with_a_zero_width_space_in_the_command_mutes_the_thread(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub's `issues.opened` payload through every router: the comment handler read
    `/rl\u200btracker ignore` as a command, the opening post's check did not (not muted)."""
    from gidgethub import sansio

    from bot.webhooks.routers import router as all_routers
    from tests.test_opening_commands import muted

    await install(app_ctx, fake_github)
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json").read_text())
    data["issue"]["body"] = (data["issue"]["body"] or "") + "\n\n/rl\u200btracker ignore"
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    fake_github.add_issue(VERL, data["issue"]["number"], data["issue"]["title"],
                          data["issue"]["body"], data["issue"]["user"]["login"])
    await all_routers.dispatch(sansio.Event(data, event="issues", delivery_id="zw-ignore"), app_ctx)
    assert await muted(app_ctx, data["issue"]["number"])
