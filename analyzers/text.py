"""The prose a reader sees in a GitHub Markdown body, without code and template boilerplate.

Matching titles and method names against code (logs, configs, stack traces) or against the
issue template's own headings and checkboxes produces false links, so analyzers look at
`visible_text(body)` instead of the raw body. Everything here is a single pass over lines
with `str.find`; no regular expression can backtrack across more than one line, so 64 KiB
of hostile input stays linear.
"""

from __future__ import annotations

import functools
import re

# Unicode's explicit direction controls: embeddings (LRE, RLE), overrides (LRO, RLO), their end
# (PDF), isolates (LRI, RLI, FSI) and theirs (PDI). Each may show the text after it in another
# order; one set for the command finder, the logs and the pages (bot.command_syntax,
# bot.logs, bot.templating).
DIRECTION_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# The direction marks (LRM, RLM, ALM): letters of no width that move only the neutral
# characters beside them, never the order of words.
DIRECTION_MARKS = "\u200e\u200f\u061c"

# Headings that issue and PR templates of these repositories (and GitHub's defaults) put in
# every post. Compared after lower-casing and dropping punctuation, emoji and surrounding
# space; only these headings are removed, other headings keep their text.
TEMPLATE_HEADINGS: frozenset[str] = frozenset(
    {
        "system info", "system information", "environment", "environment info", "env",
        "information", "tasks", "reproduction", "to reproduce", "steps to reproduce",
        "reproduction steps", "expected behavior", "expected behaviour", "actual behavior",
        "actual behaviour", "describe the bug", "bug description", "describe the issue",
        "description", "who can help", "checklist", "checklists", "feature request",
        "motivation", "your contribution", "additional context", "additional information",
        "related issues", "related issue", "what does this pr do", "before submitting",
        "before submitting a new issue", "what does this pr do?", "test", "tests", "testing",
        "api and usage example", "design & code changes", "design and code changes",
        "high-level design", "specific changes", "checklist before starting",
        "checklist before submitting", "usage example", "describe the solution you'd like",
        "describe alternatives you've considered", "is your feature request related to a problem",
        "proposal", "pitch", "alternatives", "summary", "details", "screenshots", "logs",
        "error log", "error logs", "log", "your environment", "versions", "version",
        "minimal reproducible example", "reproducible example", "command", "commands",
        "config", "configuration", "other", "others", "notes", "question", "questions",
        "问题描述", "复现步骤", "环境信息", "期望行为", "其他",
    }
)  # fmt: skip

# Sentences that templates pre-fill and many posters leave in place.
# Pre-filled template sentences that many posters leave in place; matched at the start of a
# line only, and specific enough that a poster's own sentence does not start this way.
TEMPLATE_LINES: tuple[str, ...] = (
    "a clear and concise description of",
    "provide a clear and concise",
    "if you have code snippets",
    "steps to reproduce the behavior",
    "thank you for contributing",
    "add any other context about the",
    "fixes # (issue)",
    "the official example scripts",
    "my own modified scripts",
    "an officially supported task in the",
    "my own task or dataset",
    "copy-paste the output of",
    "please copy-paste the output of",
    "please provide a clear",
    "please describe the",
    "please include the output of",
    "before submitting a new issue",
    "did you read the contributor guideline",
    "did you make sure to update the documentation",
    "did you write any new necessary tests",
)

# A line whose first character (ASCII) opens no checkbox, heading or list marker and whose
# first two characters (lower-cased) begin no template sentence is not a template line:
# most lines are answered from these two sets alone.
_TEMPLATE_LINE_MARKS = frozenset("#*-+>.)0123456789")
_TEMPLATE_LINE_PREFIXES = frozenset(t[:2] for t in TEMPLATE_LINES)

_HEADING_WORDS_RE = re.compile(r"[^\w\s'&?-]+")
_CHECKBOX_RE = re.compile(r"^\s{0,8}(?:[-*+]|\d{1,3}[.)])\s{1,4}\[[ xX]\]")
_LIST_ITEM_RE = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s")
_INLINE_CODE_RE = re.compile(r"`[^`\n]{0,2000}`")
_UNSEEN: tuple[str, int] = ("", -1)  # marks a line not looked at yet


def strip_html_comments(text: str) -> str:
    """Remove <!-- ... -->; an unclosed comment hides the rest, as GitHub renders it."""
    if "<!--" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        i = text.find("<!--", pos)
        if i < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:i])
        j = text.find("-->", i + 4)
        if j < 0:
            break
        # Keep line structure so that what follows does not merge with what preceded.
        out.append("\n" * text.count("\n", i, j))
        pos = j + 3
    return "".join(out)


def _fence(line: str) -> tuple[str, int] | None:
    """(fence char, length) when `line` opens or closes a fenced code block."""
    s = line.lstrip(" ")
    if len(line) - len(s) > 3 or len(s) < 3:
        return None
    ch = s[0]
    if ch not in "`~":
        return None
    n = len(s) - len(s.lstrip(ch))
    if n < 3:
        return None
    if ch == "`" and "`" in s[n:]:
        return None  # ``` followed by more backticks on the line is inline code
    return ch, n


def _normalise_heading(line: str) -> str | None:
    s = line.strip()
    if s.startswith("#"):
        s = s.lstrip("#")
    elif s.startswith("**") and s.endswith("**") and len(s) > 4:
        s = s[2:-2]
    else:
        return None
    s = _HEADING_WORDS_RE.sub(" ", s).strip(" ?:").lower()
    return " ".join(s.split())


def is_template_line(line: str, *, checkboxes: bool = True) -> bool:
    """A heading or sentence that an issue/PR template supplies, or a checkbox item.

    With `checkboxes=False` a task-list item counts only when its own text (after the box) is
    a template sentence: a poster's "- [x] Method (link)" is a list item like any other."""
    s = line.lstrip()
    if not s:
        return False
    # An ASCII first character outside the marks is not stripped below and lower-cases to
    # itself alone, so a template sentence would have to begin with these two characters.
    first = s[0]
    if (
        first.isascii()
        and first not in _TEMPLATE_LINE_MARKS
        and s[:2].lower()[:2] not in _TEMPLATE_LINE_PREFIXES
    ):
        return False
    box = _CHECKBOX_RE.match(line)
    if box:
        if checkboxes:
            return True
        line = line[box.end() :]
    h = _normalise_heading(line)
    if h is not None and (h in TEMPLATE_HEADINGS or not h):
        return True
    low = line.strip().lower()
    low = low.lstrip("-*+>0123456789.) ")
    return low.startswith(TEMPLATE_LINES)


@functools.lru_cache(maxsize=8)
def strip_code(text: str) -> str:
    """Drop fenced and indented code blocks (lines become empty, so line numbers hold).

    Cached: the paper linker asks for the prose and for the code of the same body."""
    if "`" not in text and "~" not in text and "\n    " not in text and "\n\t" not in text:
        if not text.startswith(("    ", "\t")):
            return text  # no fence and no indented line: nothing to drop
    lines = text.split("\n")
    out: list[str] = []
    fences: dict[str, tuple[str, int] | None] = {}  # per distinct line: bodies repeat lines
    fence: tuple[str, int] | None = None
    prev_blank = True
    in_list = False
    in_indented = False
    for line in lines:
        f = fences.get(line, _UNSEEN)
        if f is _UNSEEN:
            f = fences[line] = _fence(line)
        if fence is not None:
            if f and f[0] == fence[0] and f[1] >= fence[1] and not line.strip()[f[1] :].strip():
                fence = None
            out.append("")
            prev_blank = False
            continue
        if f:
            fence = f
            out.append("")
            prev_blank = False
            in_indented = False
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if not blank and indented and (in_indented or (prev_blank and not in_list)):
            in_indented = True
            out.append("")
            prev_blank = False
            continue
        if not blank:
            in_indented = False
            if _LIST_ITEM_RE.match(line):
                in_list = True
            elif not indented:
                in_list = False
        out.append(line)
        prev_blank = blank
    return "\n".join(out)


def strip_inline_code(text: str) -> str:
    """Replace `inline code` spans by a space."""
    if "`" not in text:
        return text
    return _INLINE_CODE_RE.sub(" ", text)


def visible_text(
    text: str | None, *, drop_inline_code: bool = False, keep_task_items: bool = False
) -> str:
    """The prose of a Markdown body: no HTML comments, code blocks, template headings,
    template sentences or checkbox lines. Line structure is kept (removed lines are empty).

    `keep_task_items`: task-list items stay unless their text is a template sentence (paper
    links and method names are cited in task lists; issue-form checkboxes are not prose for
    the failure and proposal readers, which keep the default)."""
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = strip_code(strip_html_comments(text))
    # One check per distinct line: a hostile body repeats the same line thousands of times.
    template: dict[str, bool] = {"": False}
    lines: list[str] = []
    for line in text.split("\n"):
        t = template.get(line)
        if t is None:
            t = template[line] = is_template_line(line, checkboxes=not keep_task_items)
        lines.append("" if t else line)
    out = "\n".join(lines)
    return strip_inline_code(out) if drop_inline_code else out


__all__ = [
    "TEMPLATE_HEADINGS",
    "is_template_line",
    "strip_code",
    "strip_html_comments",
    "strip_inline_code",
    "visible_text",
]
