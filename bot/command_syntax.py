"""What a `/rltracker` command looks like in a comment.

The webhook handler that answers commands (bot/webhooks/commands.py) parses them with this;
the analysis (bot/analysis.py) leaves the command lines out of what the analyzers read, since a
command is addressed to the app, not to the thread: `/rltracker kind entropy_collapse` is no
report wording, and a maintainer's `/rltracker rules` is no reply to a proposal.

A command is a line of its own that starts with `/rltracker` (any case; a full-width `／` as
Chinese input methods type it, and the full-width letters their full-width mode types with it,
read as NFKC; characters GitHub does not show ignored), read in the first 64 KiB, and shown
by GitHub as the writer's own line (security75: the finder agrees with the rendered comment).
What GitHub shows as code (a fenced block, in a list item too up to the item's end
(fence81), a line indented four columns, a `<pre>` (to
`</pre>`), the rest of the paragraph after an unclosed `<code>`, a code
span running across a paragraph's lines, as a hard-wrapped "type `` ` `` and a new line
starting `/rltracker stop`"), hides (an HTML comment) or folds away (`<details>`), and what
quotes someone else (a `>` quote and the lines going on from its text, a `<blockquote>`, or
everything below an e-mail reply's header: `On ... wrote:`, `在 ... 写道：` or Outlook's `From:`
naming an address, and `-----Original Message-----`; Outlook does not quote the original with
`>`) is no command: "to silence it, write ```/rltracker stop```" asks for nothing. A bare
`<pre>`, `<details>` or `<blockquote>` in prose holds the rest of the comment as one at the
start of a line does (the browser keeps what follows inside the element). An HTML block's
lines (`<div>` or a tag alone on a line up to a blank line; a `<textarea>`, `<script>`,
`<style>` up to its end tag; a comment or a `<?`/`<!DOCTYPE` declaration up to its end) are raw
HTML, laid out as the browser does (`_runs_on`, commands82): a line runs into the text before
it unless a block element (`<div>`, `<p>`, `<br>`, `<li>`, ...) opens or closes between them,
and a tag GitHub's tag filter prints (`<textarea>`) is text: "<div>", "x", "/rltracker stop"
shows "x /rltracker stop", no line of its own. A command in a GFM table (a header cell, or a
row written without pipes) is a cell, no line either.
A line holding a direction control that reorders what is shown (an embedding, an override or
an isolate, typed or as a numeric character reference) is no command (security79): the reader
may see its words in another order than the app reads them, or no command at all.
Lines end where GitHub ends them (LF, CR, CRLF; not at U+2028 or a form feed, which it shows
inside a line). Every rule is a scan of each line with string methods, linear on 64 KiB (a
paragraph's backtick runs are paired with one pointer per run length).
"""

from __future__ import annotations

import html
import re
import unicodedata

from analyzers.text import DIRECTION_CONTROLS

PREFIX = "/rltracker"
_MAX_BODY = 65536  # characters read for a command
# Invisible characters a paste or an editor leaves around a command (zero-width space, joiners,
# word joiner, byte-order mark; security75: the soft hyphen, the left-to-right and right-to-left
# and Arabic letter marks an RTL keyboard types, the invisible operators, the combining grapheme
# joiner and the Mongolian vowel separator, none of which GitHub shows): dropped before the line
# is read, and before a body is looked at for the word at all.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u061c"
                                    "\u2061\u2062\u2063\u2064\u034f\u180e"))
# Unicode's explicit direction controls: embeddings (LRE, RLE), overrides (LRO, RLO), their end
# (PDF), isolates (LRI, RLI, FSI) and theirs (PDI). A line holding one may show its words in
# another order (an override reverses them: "/rltracker kind \u202espalloc_yportne" shows
# "kind entropy_collapse") or not as a command. The marks above (LRM, RLM, ALM) are letters of
# no width: they move the neutral characters beside them (a leading RLM shows
# "rltracker stop/"), never the order of the command's words, and an RTL keyboard types them.
_DIRECTION_CONTROLS = frozenset(DIRECTION_CONTROLS)
_SLASHES = ("/", "\uff0f")  # `／`: a full-width slash
# Trailing punctuation people put after a command word or a kind ("/rltracker stop.").
_TRAILING = ".,;:!?。，；：！？、"
_LINE_END = re.compile(r"\r\n|\r|\n")  # CommonMark's line endings (no quantifier: linear)
# HTML blocks whose lines GitHub shows folded (`<details>`), quoted (`<blockquote>`: a
# maintainer quoting a reporter's `/rltracker kind ...` gave the verdict as theirs) or as code
# (`<pre>`): no command inside, as in a `>` quote or a fence. `<code>` is not one of them
# (`_code_depth`): it shows as code only up to the end of its paragraph; nor `<textarea>`
# (`_opens_raw_text`: printed as text, its lines run into one).
_HIDING_TAGS = ("details", "blockquote", "pre")
# `<code ...>` or `</code>` (one tag name, one character after it: linear)
_CODE_TAG = re.compile(r"</?code(?=[\s>/]|$)")


def _lines(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines as GitHub (CommonMark) ends them: at LF, CR or CRLF only. str.splitlines
    also ends a line at U+2028, U+2029, NEL, VT, FF and U+001C..U+001E, which GitHub shows
    inside a line: a `/rltracker` after one sits in that line (a quote, a sentence)."""
    out: list[str] = []
    start = 0
    for end in _LINE_END.finditer(text):
        out.append(text[start:end.end() if keepends else end.start()])
        start = end.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _indent(line: str) -> int:
    """Columns of leading indentation (a tab to the next multiple of four)."""
    cols = 0
    for ch in line:
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            break
    return cols


def _dedent(line: str, columns: int) -> str:
    """`line` with `columns` of its leading indentation taken off (a tab counted to the next
    multiple of four): a line of a list item as seen from the item's content column."""
    if not columns:
        return line
    indent = _indent(line)
    return " " * max(indent - columns, 0) + line.lstrip(" \t")


def _fence(line: str) -> tuple[str, int, str] | None:
    """(character, length, rest) of a code fence line (``` or ~~~, indented up to three
    columns), else None."""
    if _indent(line) > 3:
        return None
    text = line.lstrip(" \t")
    if text[:3] not in ("```", "~~~"):
        return None
    char = text[0]
    length = len(text) - len(text.lstrip(char))
    rest = text[length:]
    if char == "`" and "`" in rest:  # an inline code span, not a fence
        return None
    return char, length, rest


def _outside_code_spans(line: str) -> str:
    """The line without its inline code spans (text between paired backticks; an unpaired
    last one is literal), each replaced by a space."""
    parts = line.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one opens nothing
        parts[-2:] = ["`".join(parts[-2:])]
    return " ".join(parts[0::2])


def _backtick_runs(line: str) -> list[int]:
    """The length of each run of backticks in `line`, in order."""
    runs: list[int] = []
    pos = line.find("`")
    while pos >= 0:
        end = pos
        while end < len(line) and line[end] == "`":
            end += 1
        runs.append(end - pos)
        pos = line.find("`", end)
    return runs


def _in_spans(paragraph: list[tuple[int, str]]) -> set[int]:
    """The line indexes of `paragraph` (its (index, line) pairs) whose start lies inside a
    code span opened on an earlier line of it: CommonMark pairs a run of backticks with the
    next run of the same length in the paragraph, across its lines (an unpaired run is
    literal). Linear: each length's runs are visited once, by a pointer that only advances."""
    runs = [(n, length) for n, line in paragraph if "`" in line for length in _backtick_runs(line)]
    if len(runs) < 2:
        return set()
    by_length: dict[int, list[int]] = {}
    for i, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(i)
    pointer = dict.fromkeys(by_length, 0)
    inside: set[int] = set()
    i = 0
    while i < len(runs):
        n, length = runs[i]
        same = by_length[length]
        while pointer[length] < len(same) and same[pointer[length]] <= i:
            pointer[length] += 1
        if pointer[length] == len(same):
            i += 1  # no closer: a literal run
            continue
        closer = same[pointer[length]]
        inside.update(range(n + 1, runs[closer][0] + 1))
        i = closer + 1
    return inside


def _heading(text: str) -> bool:
    """An ATX heading line (`#` to `######`, then a space or the end), spaces stripped."""
    hashes = len(text) - len(text.lstrip("#"))
    return 0 < hashes <= 6 and text[hashes:hashes + 1] in ("", " ", "\t")


def _starts_block(line: str) -> bool:
    """A line that starts a block of its own or in a new container, after up to three
    spaces: a heading, a list item (`-`, `*`, `+`, `1.`, `1)` and a space), a `>` quote, a
    `-` setext underline or a thematic break. A code span of the paragraph before it does not
    go on into it. (A command line, starting with a slash, starts no block: it goes on the
    paragraph before it. A `===` line is no block: a paragraph's underline, `_ends_paragraph`,
    or text, a lazy line of a quote's or item's paragraph too.)"""
    if _indent(line) > 3:
        return False
    text = line.strip(" \t")
    if text[:1] == ">" or _heading(text) or (text and text.strip(text[0]) == "" and text[0] in "-*_"):
        return True
    return _item_marker(text) > 0


def _ends_paragraph(text: str, lines: int) -> bool:
    """Whether a line (stripped), the `lines`th of its paragraph, ends it: a thematic break
    (three or more of one of `-`, `*`, `_`, spaces between) or the underline of a setext
    heading (`=` or `-` only, under a paragraph line)."""
    marks = text.replace(" ", "").replace("\t", "")
    if len(marks) >= 3 and marks[0] in "-*_" and not marks.strip(marks[0]):
        return True
    return lines > 1 and bool(text) and (not text.strip("=") or not text.strip("-"))


def _table_cells(text: str) -> int:
    """The number of cells of a GFM table row (stripped): its `|` not escaped, a leading and
    a trailing one aside, split it."""
    text = text.removeprefix("|")
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return text.count("|") - text.count("\\|") + 1


def _delimiter_cells(text: str) -> int:
    """The number of cells of a GFM table's delimiter row (stripped: `|---|:--:|`, a `|` in
    it, each cell hyphens with a colon at either end), else 0."""
    if "|" not in text:
        return 0
    cells = text.removeprefix("|").removesuffix("|").split("|")
    if all(cell.strip(" \t").removeprefix(":").removesuffix(":").strip("-") == ""
           and "-" in cell for cell in cells):
        return len(cells)
    return 0


def _item_marker(text: str) -> int:
    """The length of the list item marker `text` starts with (`-`, `*`, `+`, `1.` or `1)`,
    at most nine digits, then a space, a tab or the end of the line), else 0."""
    digits = len(text) - len(text.lstrip("0123456789"))
    if 0 < digits <= 9 and text[digits:digits + 1] in (".", ")"):
        width = digits + 1
    elif text[:1] in ("-", "*", "+"):
        width = 1
    else:
        return 0
    return width if text[width:width + 1] in ("", " ", "\t") else 0


def _thematic_break_span(line: str) -> tuple[int, int]:
    """(first, last): the text of `line` from an index p with first <= p <= last is a
    thematic break (three or more of one of `-`, `*`, `_`, spaces between: `- - -` is one, not
    three list items); one pass from the line's end."""
    first, mark, marks, last = len(line), "", 0, -1
    while first > 0 and line[first - 1] in " \t-*_":
        char = line[first - 1]
        if char not in " \t":
            if mark and char != mark:
                break
            mark, marks = char, marks + 1
            if marks == 3:
                last = first - 1
        first -= 1
    return first, last


def _in_list_items(line: str, items: list[int], in_paragraph: bool, may_start: bool) -> str:
    """`line` as seen inside the list items it belongs to: `items` (the content columns of
    the open list items, outermost first) loses those the line is not indented into (unless
    it goes on a paragraph lazily: `in_paragraph` and no block starts) and gains those its
    list markers open (`may_start`: not inside an HTML block, a comment or a hiding
    element); returned is the line's text after its markers, indented by its columns past
    the innermost item's (at most four). The HTML block rules (left81, commands82), the fence
    rule (fence81), block starts and tables read it: a list item's lines are indented to its
    content column, and an HTML block, a fenced code block or a table in the item ends with it.
    Linear: each marker of the line is read once, each item popped once."""
    indent = _indent(line)
    left = False  # the line left a list item: no paragraph of its container to interrupt
    if items and indent < items[-1]:
        if in_paragraph and not _starts_block(line) and _fence(line) is None \
                and not _opens_raw_text(line) and not _starts_html_block(line.strip()) \
                and not _declaration_end(line):
            return line  # a lazy line of the item's paragraph (an HTML block's start is none,
            # as cmark-gfm and markdown-it read it, although one of type 7 interrupts no
            # paragraph of its own container)
        while items and indent < items[-1]:
            items.pop()
        left = True
    base = items[-1] if items else 0
    column, pos = indent, len(line) - len(line.lstrip(" \t"))
    first, last = _thematic_break_span(line) if may_start else (0, len(line))
    # (an index along the line and bounded slices: linear however many markers it holds)
    while may_start and column - base <= 3 and not first <= pos <= last:
        width = _item_marker(line[pos:pos + 11])
        # a list's first item interrupting a paragraph starts at 1 and holds something
        if not width or (in_paragraph and not left and column == indent and (
                not line[pos + width:].strip()
                or width > 1 and int(line[pos:pos + width - 1]) != 1)):
            break
        end = pos + width
        while end < len(line) and line[end] in " \t":
            end += 1
        spaces = _indent(line[pos + width:end] + ".")
        if end == len(line) or spaces > 4:  # empty, or indented code: content one column on
            items.append(column + width + 1)
            return " " * min(max(spaces - 1, 0), 4) + line[end:]
        base = column + width + spaces
        items.append(base)
        column, pos = base, end
    return " " * min(column - base, 4) + line[pos:]


def _tags_opened(lowered: str, tag: str, start: str = "<") -> int:
    """How many `<tag>` or `<tag attributes...` a lowercased line opens (not `<tagname...>`
    of a longer name: `<preview>` is no `<pre>`); with `start` "</", how many it closes."""
    start += tag
    return (lowered.count(start + ">") + lowered.count(start + " ") + lowered.count(start + "\t")
            + lowered.endswith(start))


def _code_depth(visible: str, depth: int) -> int:
    """How many `<code>` elements are open after `visible` (a line's text outside its code
    spans and HTML comments), `depth` being open before it, tags read left to right.

    An unclosed `<code>` is inline HTML (GFM: a line holding only the tag starts an HTML block
    of type 7, which a blank line ends; anywhere else the tag is inline in a paragraph): the
    rest of its paragraph or HTML block sits in the code element, shown as code (the grey
    code box). After the blank line that ends it, the browser keeps the paragraphs that
    follow inside the open element (the HTML standard's tree building), in its font but
    without the box, and renders their Markdown (emphasis, links, fences of their own): the
    writer's own text again, as a reader sees it. So the depth counts within a paragraph and
    its caller starts each paragraph at 0; `<pre>` (type 1) is otherwise: no blank line ends
    it, its lines are raw text in a code box up to `</pre>`."""
    for tag in _CODE_TAG.finditer(visible):
        depth = depth - 1 if tag.group().startswith("</") else depth + 1
        depth = max(depth, 0)
    return depth


# GFM's HTML block start condition 6: a line starting with one of these tags, whatever follows
_BLOCK_TAGS = frozenset(
    "address article aside base basefont blockquote body caption center col colgroup dd details "
    "dialog dir div dl dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 "
    "h6 head header hr html iframe legend li link main menu menuitem nav noframes ol optgroup "
    "option p param section source summary table tbody td tfoot th thead title tr track ul".split())


def _starts_html_block(text: str) -> int:
    """Which GFM HTML block that a blank line ends a line (stripped) starts: 6 (condition 6:
    a block tag, anything after it; it may interrupt a paragraph), 7 (condition 7: one complete
    tag alone on the line, `<code>` so, while `<code>x` is inline HTML of a paragraph; it
    interrupts none), else 0."""
    if not text.startswith("<"):
        return 0
    name = text[2:] if text.startswith("</") else text[1:]
    end = 0
    while end < len(name) and (name[end].isascii() and name[end].isalnum()):
        end += 1
    if name[:end].lower() in _BLOCK_TAGS:
        return 6
    return 7 if end > 0 and name[0].isalpha() and text.find(">") == len(text) - 1 else 0


# CommonMark's HTML block of type 1: these tags open it where a block may start, and the first
# line holding one of the end tags (whichever opened it) ends it, blank lines and all
_RAW_TEXT_TAGS = ("textarea", "script", "style", "pre")
_RAW_TEXT_ENDS = ("</textarea>", "</script>", "</style>", "</pre>")
# GFM's tag filter prints these tags, opening or closing, as text (`&lt;script>`)
_FILTERED_TAGS = frozenset(
    "title textarea style xmp iframe noembed noframes script plaintext".split())
# Elements the browser lays out as blocks (and `<br>`), among those GitHub's sanitizer keeps: raw
# HTML text after one starts a line of its own (`<section>`, which GitHub strips, does not; nor
# `<td>` or `<tr>` outside a `<table>`, which the browser drops; nor `<table>`, whose text
# outside a cell the browser moves before it, into the line there)
_LINE_BREAKING_TAGS = frozenset(
    "blockquote br dd details div dl dt figcaption figure h1 h2 h3 h4 h5 h6 hr li ol p pre "
    "summary ul".split())
_VOID_TAGS = ("br", "hr")  # no end tag: `</br>` is a `<br>`, `</p>` an empty paragraph


# CommonMark's HTML blocks of types 2 to 5 (a comment `<!--`, a processing instruction `<?`, a
# declaration `<!DOCTYPE`, a `<![CDATA[` section), each to the first line holding its end: the
# browser reads the start of types 3 to 5 as a comment (a bogus one) up to the first `>`, shown
# as nothing, and the rest of the block as raw HTML
_DECLARATION_ENDS = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"), ("<!", ">"))


def _declaration_end(line: str) -> str:
    """The end of the HTML block of type 2 (a comment), 3, 4 or 5 that `line` (where a block
    may start) starts (`_DECLARATION_ENDS`: `<!` then an ASCII letter for a declaration), else
    "". Like type 1 it may interrupt a paragraph, and its lines are raw HTML."""
    if _indent(line) > 3:
        return ""
    text = line.lstrip(" \t")
    for start, end in _DECLARATION_ENDS:
        if text.startswith(start) and (start != "<!" or text[2:3].isascii() and text[2:3].isalpha()):
            return end
    return ""


def _opens_raw_text(line: str) -> bool:
    """Whether `line`, where a block may start, starts an HTML block of type 1 (CommonMark
    0.30, cmark-gfm): after up to three spaces `<textarea`, `<script`, `<style` or `<pre`, then
    a space, a tab, `>` or the end of the line, any case. It holds the lines after it, blank ones
    too, up to the first line that holds one of `_RAW_TEXT_ENDS` anywhere (in a code span or
    an HTML comment too: the block is raw text, and its end is found by that string alone), and
    can interrupt a paragraph. Its lines are raw HTML (`_runs_on`); GitHub's tag filter prints
    the `<textarea>`, `<script>` and `<style>` tags as text, so a command there shows run into
    the line before it ("<textarea> x /rltracker stop </textarea>"); `<pre>` hides its lines as
    code (`_HIDING_TAGS`). A `<textarea>` elsewhere (in prose, after another tag, indented four
    columns) is printed as text and holds nothing (security79, checked with cmark-gfm and GFM's
    tagfilter). In a list item its columns are counted from the item's content
    (`_in_list_items`), and the item's end ends it (left81)."""
    if _indent(line) > 3:
        return False
    text = line.lstrip(" \t").lower()
    return any(text.startswith("<" + tag) and text[len(tag) + 1:len(tag) + 2] in ("", " ", "\t", ">")
               for tag in _RAW_TEXT_TAGS)


def _runs_on(raw_html: str, pending: bool, open_blocks: dict[str, int],
             bogus: bool) -> tuple[bool, bool]:
    """Whether the browser's current line holds text after the raw HTML `raw_html` (a line of
    an HTML block, outside its comments, without the characters GitHub does not show),
    `pending` saying whether it held text before it. The block's line feeds are spaces to the
    browser: a line runs into the text before it unless a block element starts or ends between
    them (`_LINE_BREAKING_TAGS`, `<br>`; an end tag only of an element open, counted in
    `open_blocks` across the comment: the browser drops a stray `</div>`). Text, a literal `<`
    and a tag the tag filter prints (`_FILTERED_TAGS`) are text; other tags (`<b>`, `<span>`)
    and declarations (`<!DOCTYPE html>`, `<?php ...>`: a bogus comment to the browser, up to
    the first `>`, on a later line too: `bogus`, in one when the line starts, and returned
    with `pending`) are not. One pass along the line: linear."""
    pos, end = 0, len(raw_html)
    if bogus:
        close = raw_html.find(">")
        if close < 0:
            return pending, True
        pos = close + 1
    while pos < end:
        lt = raw_html.find("<", pos)
        stop = end if lt < 0 else lt
        if raw_html[pos:stop].strip(" \t\r\f"):
            pending = True
        if lt < 0:
            break
        if raw_html[lt + 1:lt + 2] in ("!", "?"):  # a declaration or a processing instruction:
            close = raw_html.find(">", lt)  # a (bogus) comment to the browser, shown as nothing
            if close < 0:
                return pending, True
            pos = close + 1
            continue
        closing = raw_html[lt + 1:lt + 2] == "/"
        start = lt + 1 + closing
        if not (raw_html[start:start + 1].isascii() and raw_html[start:start + 1].isalpha()):
            pending, pos = True, lt + 1  # a literal `<`
            continue
        name_end = start
        while name_end < end and raw_html[name_end] not in " \t\f/>":
            name_end += 1
        name = raw_html[start:name_end].lower()
        if name in _FILTERED_TAGS:
            pending = True
        elif name in _LINE_BREAKING_TAGS:
            if not closing and name not in _VOID_TAGS:
                open_blocks[name] = open_blocks.get(name, 0) + 1
                pending = False
            elif not closing or name in _VOID_TAGS or name == "p":
                pending = False
            elif open_blocks.get(name, 0):
                open_blocks[name] -= 1
                pending = False
        close = raw_html.find(">", name_end)
        pos = end if close < 0 else close + 1
    return pending, False


def _direction_reordered(line: str) -> bool:
    """Whether `line` holds an explicit direction control (`_DIRECTION_CONTROLS`), typed or
    written as a numeric character reference (`&#x202E;`, which GitHub shows as the control
    outside code spans)."""
    if not _DIRECTION_CONTROLS.isdisjoint(line):
        return True
    return "&#" in line and not _DIRECTION_CONTROLS.isdisjoint(html.unescape(line))


def _quote_text(text: str) -> bool:
    """Whether a `>` quote line (stripped) holds paragraph text, which the next lines go on
    as its lazy continuation (shown inside the quote) until a blank line or another block."""
    pos = 0  # past the `>` markers, each with its optional space (an index: linear)
    while text[pos:pos + 1] == ">":
        pos += 2 if text[pos + 1:pos + 2] in (" ", "\t") else 1
    while True:  # past the markers of list items in the quote, each with one space
        skip = pos
        while skip < len(text) and text[skip] in " \t" and skip - pos < 4:
            skip += 1
        width = _item_marker(text[skip:skip + 11]) if skip - pos <= 3 else 0
        if not width:
            break
        pos = skip + width + (text[skip + width:skip + width + 1] in (" ", "\t"))
    text = text[pos:]
    rest = text.strip()
    if not rest or _indent(text) >= 4 or _fence(text) is not None or _heading(rest) \
            or _opens_raw_text(text) or _starts_html_block(rest) or _declaration_end(text):
        return False  # no paragraph text: an empty `>` or item, indented code, a fence, a
        # heading, an HTML block (which takes no lazy line: `> <div>` then a line of its own)
    marks = rest.replace(" ", "").replace("\t", "")
    return not (len(marks) >= 3 and marks[0] in "-*_" and not marks.strip(marks[0]))  # a rule


def _has_address(text: str) -> bool:
    """Whether the line holds an e-mail address (`name@host.tld`, maybe in `<...>`)."""
    for token in text.split():
        at = token.find("@")
        if at > 0 and "." in token[at + 1:].strip("<>()[].,;:"):
            return True
    return False


def _email_header(text: str) -> bool:
    """A line that starts the original an e-mail client put below a reply: it names the
    sender's address (GitHub's `notifications@github.com`, maybe wrapped onto this line)."""
    if text.startswith("-----Original Message") or text.startswith("----- Original Message"):
        return True
    header = (text.endswith("wrote:") or text.startswith("From:")
              or (text.startswith("在") and (text.endswith("写道：") or text.endswith("写道:"))))
    return header and _has_address(text)


def _words(line: str) -> list[str] | None:
    """The words of a command line (the first being the prefix), else None. A line starting
    with a slash that is not ASCII is read in its compatibility form (NFKC): the full-width
    letters, `＿` and `．` a Chinese input method's full-width mode types with `／`."""
    if line.lstrip()[:1] not in _SLASHES:
        return None
    if not line.isascii():
        line = unicodedata.normalize("NFKC", line)
    words = line.split(maxsplit=1)
    if not words or len(words[0]) != len(PREFIX) or words[0][0] not in _SLASHES:
        return None
    if words[0][1:].lower() != PREFIX[1:]:
        return None
    return line.split()


def _command_lines(body: str | None) -> list[tuple[int, list[str]]]:
    """(line index, words) of each command line in `body`, in order."""
    found: list[tuple[int, list[str]]] = []
    fence: tuple[str, int] | None = None
    fence_item = 0  # the content column of the list item holding the fence (0: none), whose
    # end ends it (fence81)
    in_comment = False
    hiding = dict.fromkeys(_HIDING_TAGS, 0)  # open blocks of each tag (a stray `</details>`
    # in a quote closes no `<blockquote>`)
    paragraph: list[tuple[int, str]] = []  # the text lines since the last block break
    spanned: set[int] = set()  # command lines inside a code span across lines
    code_depth = 0  # `<code>` elements open in the paragraph or HTML block (`_code_depth`)
    # An open HTML block, its lines raw HTML (a list item or quote marker, a heading or a fence
    # in it is its text, `_runs_on` lays them out): of type 6 or 7 (`_starts_html_block`), to
    # the next blank line, or of type 1 (`_opens_raw_text`), to a line holding its end tag,
    # blank lines and all; each the content column of the list item holding it (0: none), whose
    # end ends it (left81: no lazy line)
    html_block: int | None = None
    raw_text: int | None = None
    raw_ends = _RAW_TEXT_ENDS  # what ends the type 1 block, or the declaration's (3 to 5)
    bogus = False  # in raw HTML's declaration, up to its first `>` (a bogus comment: `_runs_on`)
    block_start = 0  # the line index the open HTML block started on
    pending = False  # the browser's line holds text from the HTML block's lines (`_runs_on`)
    open_blocks: dict[str, int] = {}  # block elements opened in raw HTML, by tag (`_runs_on`)
    runs_into: int | None = None  # a type 1 block ended on the line before, with text on its
    # last line, in a list item (this content column): a tight item wraps no `<p>` around the
    # paragraph after it, whose first line runs into that text
    quoted = False  # the paragraph is a `>` quote's: a line going on from it is quoted (lazy)
    items: list[int] = []  # the content columns of the open list items (`_in_list_items`)
    empty_item = False  # the last line opened a list item holding nothing yet: CommonMark
    # ends it at a blank line (an item starts with at most one), and no line goes on it lazily
    reordering = -1  # the last line index holding a direction control (`_direction_reordered`)
    last_raw = False  # the last line was raw HTML (a blank line after it keeps `pending`)
    table: int | None = None  # in a GFM table's rows (its cells no lines of their own): the
    # content column of the list item holding it (0: none), whose end ends it
    header = ""  # the paragraph's last line past its list markers: a table's header row?
    text_of_body = (body or "")[:_MAX_BODY]
    # cmark-gfm skips a byte-order mark starting the comment (no line break: indexes kept)
    text_of_body = text_of_body[1:] if text_of_body.startswith("\ufeff") else text_of_body
    # The structure is read on the line as CommonMark reads it (a zero-width space before
    # ```` ``` ```` makes it text, no fence), the command's words on what the reader sees.
    for n, line in enumerate(_lines(text_of_body)):
        run_in, runs_into = runs_into, None
        if not line or line.isspace():
            spanned |= _in_spans(paragraph)  # a blank line ends a paragraph
            paragraph, code_depth, quoted, html_block, table = [], 0, False, None, None
            pending = pending and last_raw  # (a list with a blank line wraps its text in <p>)
            if empty_item:
                items.pop()
                empty_item = False
            continue  # changes no other state (a fence, a comment, <details> go on across it;
            # raw HTML text before it is still on the browser's line for raw HTML after it)
        seen = line.translate(_INVISIBLE)
        if fence is not None and _indent(line) < fence_item:
            fence = None  # the item ends, and its fence with it (no lazy line): read the line
        if fence is not None:
            closing = _fence(_dedent(line, fence_item))
            if closing and closing[0] == fence[0] and closing[1] >= fence[1] and not closing[2].strip():
                fence = None
            continue
        if raw_text is not None and _indent(line) < raw_text \
                or html_block is not None and _indent(line) < html_block:
            raw_text = html_block = None  # the item ends, and its HTML block with it
            pending, code_depth = False, 0
        opened = new_block = False
        after_empty_item, empty_item = empty_item, False
        content = line  # the line past its list markers, indented from the innermost item
        last_raw = False
        if raw_text is None and html_block is None:
            # the paragraph's container ends here: a `>` quote's (its lazy line would be none)
            # or a list item's the line is indented short of
            closes_container = quoted or bool(items) and _indent(line) < items[-1]
            may_start = not (in_comment or any(hiding.values()))
            content = _in_list_items(line, items, bool(paragraph) and not after_empty_item,
                                     may_start)
            empty_item = bool(items) and not content.strip()  # the line was list markers alone
            # a block starts on the line: after its list markers, or in its item's columns
            new_block = _starts_block(content) or content.lstrip(" \t") != line.lstrip(" \t")
            opened_here = items[-1] if items else 0
            if may_start and _opens_raw_text(content):
                raw_text, raw_ends, opened = opened_here, _RAW_TEXT_ENDS, True
            elif may_start and (declaration := _declaration_end(content)):
                # (its start a bogus comment, `_runs_on`; an HTML comment's, type 2, hidden as
                # comments are: `in_comment`)
                raw_text, raw_ends, opened = opened_here, (declaration,), True
            elif may_start and _indent(content) <= 3 and (
                    kind := _starts_html_block(content.strip())) and (
                    kind == 6 or not paragraph or new_block or closes_container):
                # (type 7 interrupts no paragraph of its own container)
                html_block, opened = opened_here, True
            if opened:
                table = None
                spanned |= _in_spans(paragraph)
                # (a `<code>` left open in the paragraph it interrupts goes on into it)
                paragraph, quoted, block_start = [], False, n
                if content.lstrip(" \t") != line.lstrip(" \t") or closes_container:
                    pending = False  # in a list item it opens, or after the container closes
        hidden = in_comment or any(hiding.values())
        raw = raw_text is not None or html_block is not None
        if not (raw or in_comment or paragraph) and _indent(content) >= 4:
            pending, table = False, None  # an indented code block: its tags and comments are
            continue  # its text
        # HTML comments: open and close along the line, outside its code spans (raw HTML has
        # none)
        scanned = content if raw else _outside_code_spans(line) if "`" in line else line
        shown: list[str] = []  # the parts of `scanned` outside HTML comments
        pos = 0
        while True:
            if in_comment:
                end = scanned.find("-->", pos)
                if end < 0:
                    break
                in_comment, pos = False, end + 3
            else:
                start = scanned.find("<!--", pos)
                shown.append(scanned[pos:] if start < 0 else scanned[pos:start])
                if start < 0:
                    break
                in_comment, pos = True, start + 4
        # <details>, <blockquote>, <pre> opened and closed along the line, outside its code
        # spans ("fold logs in `<details>`") and HTML comments: at the start of a line (an HTML
        # block) or in prose ("write it in <pre> tags"), the browser keeps the rest of the
        # comment inside the element (security75: the HTML standard's tree building; a
        # `<details>` without a summary folds it away). Closed where the block's text
        # ends ("ValueError: nan</pre>"): the lines after it are GitHub's Markdown (review66).
        visible = "".join(shown).lower() if "<" in line else ""
        for tag in _HIDING_TAGS if visible else ():
            hiding[tag] = max(0, hiding[tag] + _tags_opened(visible, tag)
                              - _tags_opened(visible, tag, "</"))
        if _direction_reordered(line):
            reordering = n
        text = line.strip()
        if raw:
            last_raw = True
            if not hidden and _email_header(text):
                break
            # a line of its own where the browser starts one: after a block element, not run
            # into the text before it; a direction control on it or earlier in the block (raw
            # HTML: a control goes on over its run-in lines) reorders it
            if not (hidden or bogus or opened or pending or code_depth
                    or reordering >= block_start):
                words = _words(seen)
                if words is not None:
                    found.append((n, words))
            pending, bogus = _runs_on("".join(shown).translate(_INVISIBLE), pending, open_blocks,
                                      bogus)
            code_depth = _code_depth(visible, code_depth) if visible else code_depth
            if raw_text is not None and any(end in line.lower() for end in raw_ends):
                raw_text, code_depth, bogus = None, 0, False
                runs_into = items[-1] if items and pending else None
            continue
        pending = bogus = False  # a Markdown block (a paragraph, a heading, code) is a block
        # of its own (and its tag's `>` ends a bogus comment left open)
        if hidden:
            spanned |= _in_spans(paragraph)
            paragraph, code_depth, quoted = [], 0, False
            continue
        opening = _fence(content)  # after the line's list markers or indented into an item
        if opening is not None:
            spanned |= _in_spans(paragraph)
            paragraph, code_depth, quoted = [], 0, False
            fence, fence_item, table = opening[:2], (items[-1] if items else 0), None
            continue
        if _email_header(text):
            break
        if table is not None and (new_block or _indent(line) < table):
            table = None  # a block of its own, or the item's end, ends the table
        if table is not None:
            continue  # a row: its text is a table cell, no line of its own
        # a paragraph starting in the tight list item whose type 1 block ended on the line
        # before runs into that block's last line
        ran_in = run_in is not None and not paragraph and _indent(line) >= run_in
        lazy = quoted or bool(items) and _indent(line) < items[-1]  # (no setext underline)
        if new_block:
            spanned |= _in_spans(paragraph)
            paragraph, code_depth, ran_in = [], 0, False
            quoted = content.lstrip(" \t").startswith(">") and _quote_text(content.strip())
        elif paragraph and not lazy and _delimiter_cells(text) == _table_cells(header.strip()) > 0:
            # a delimiter row under a row of as many cells: a GFM table (cmark-gfm's
            # extension), its header the paragraph's last line, rows the lines after it
            if found and found[-1][0] == paragraph[-1][0]:
                found.pop()  # a header cell, no line of its own
            spanned |= _in_spans(paragraph[:-1])
            paragraph, code_depth, quoted = [], 0, False
            table = items[-1] if items else 0
            continue
        paragraph.append((n, line))
        header = content
        if not content.strip() or content.lstrip(" \t").startswith(">") and not quoted:
            spanned |= _in_spans(paragraph)  # no paragraph text (an empty list item, a quote
            paragraph, code_depth = [], 0  # with none) for the next line to go on
            continue
        # in a `<code>` opened above: code; going on from a `>` quote's text: quoted
        words = _words(seen) if not (code_depth or quoted or ran_in) else None
        # a direction control on the line reorders what it shows (a paragraph's line breaks
        # are GitHub's <br>, which ends a control's reach)
        if words is not None and reordering == n:
            words = None
        if words is not None:
            found.append((n, words))
        code_depth = _code_depth(visible, code_depth) if visible else code_depth
        pending = bool(items)  # a tight list item's text is no paragraph of its own (<p>): raw
        # HTML after it runs into it (a loose list's blank line ends that)
        if _indent(content) <= 3 and (_heading(text) or not lazy and _ends_paragraph(
                text, len(paragraph))):  # a heading ends on its line
            spanned |= _in_spans(paragraph)
            paragraph, code_depth, quoted, pending = [], 0, False, False  # (a block element)
    spanned |= _in_spans(paragraph)
    return [(n, words) for n, words in found if n not in spanned]


def _command(words: list[str]) -> tuple[str, list[str]]:
    if len(words) == 1:
        return "", []
    word = words[1].rstrip(_TRAILING).lower()
    args = words[2:8]
    if args:
        args[-1] = args[-1].rstrip(_TRAILING)
        if not args[-1]:
            args.pop()
    return word, args


def parse_command(body: str | None) -> tuple[str, list[str]] | None:
    """The first `/rltracker <word> [args]` line of a comment, as (word, args)."""
    lines = _command_lines(body)
    return _command(lines[0][1]) if lines else None


def parse_commands(body: str | None) -> list[tuple[str, list[str]]]:
    """Every `/rltracker <word> [args]` line of a comment, in order."""
    return [_command(words) for _, words in _command_lines(body)]


def _may_hold_command(body: str) -> bool:
    head = body[:_MAX_BODY].lower().translate(_INVISIBLE)  # as `_command_lines` reads a line
    if "rltracker" in head:
        return True
    return not head.isascii() and "rltracker" in unicodedata.normalize("NFKC", head)


def without_commands(body: str) -> str:
    """`body` without its command lines (those `parse_command` reads)."""
    if not _may_hold_command(body):
        return body
    drop = {n for n, _ in _command_lines(body)}
    if not drop:
        return body
    # The lines of the first _MAX_BODY characters are the body's first lines: same indexes.
    return "".join(line for n, line in enumerate(_lines(body, keepends=True)) if n not in drop)


# What the opening post of an issue, pull request or discussion may ask of the app: to be left
# alone (`/rltracker ignore`, or `stop`). The other commands answer something said in the
# thread (a reply, a verdict on what the app said, a recheck of its decision): nothing is
# there to answer when the thread opens, and they are not done from there (their lines are
# still left out of what the analyzers read, as every command line is).
OPENING_COMMANDS = ("ignore", "stop")


def opening_command(body: str | None) -> str | None:
    """What an opening post asks (OPENING_COMMANDS): `stop` when a command line of it says
    stop, else `ignore` when one says ignore, else None."""
    if not body or not _may_hold_command(body):
        return None
    words = {word for word, _ in parse_commands(body)}
    for word in reversed(OPENING_COMMANDS):
        if word in words:
            return word
    return None


def only_commands(body: str | None) -> bool:
    """A comment that is nothing but command lines: addressed to the app alone (no reply to
    the thread, nothing for the analyzers to read)."""
    text = body or ""
    return bool(text.strip()) and not without_commands(text).strip()
