"""The two Jinja2 environments: HTML (autoescaped) for pages, Markdown for GitHub comments."""

from __future__ import annotations

import unicodedata
from functools import cache
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape

from analyzers.text import DIRECTION_CONTROLS, DIRECTION_MARKS
from bot.config import TEMPLATES_DIR

# Characters that draw nothing although Unicode calls them letters or symbols (Hangul fillers,
# the blank Braille pattern); format and control characters and blanks draw nothing either.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


# Control characters (C0, DEL, C1): GitHub strips them from a title, which is one line; one
# stored before (an older version, an imported record, a replayed file) was a parse error in
# every page and an invalid character for an XML reader. Tab, line feed and carriage return
# become a space, the others go.
_TITLE_CONTROLS: dict[int, str | None] = {
    **dict.fromkeys([*range(0x20), *range(0x7F, 0xA0)]), 0x09: " ", 0x0A: " ", 0x0D: " "}


def without_controls(text: object) -> str:
    """A title without control characters (`_TITLE_CONTROLS`); "" for None."""
    return "" if text is None else str(text).translate(_TITLE_CONTROLS)


def shown_title(text: object, empty: str = "(no title)") -> str:
    """A title from GitHub as a page shows it: `empty` when nothing of it would be seen (no
    text, or only blanks, zero-width and other format characters), else the title as it is,
    without control characters (`without_controls`).
    A link whose whole text was such a title could be neither seen nor clicked."""
    title = without_controls(text)
    visible = any(not ch.isspace() and ch not in _BLANK_LETTERS
                  and unicodedata.category(ch) not in ("Cf", "Cc", "Zs", "Zl", "Zp")
                  for ch in title)
    return title if visible else empty


# Unicode's direction controls: marks, embeddings, overrides and isolates with their ends.
_DIRECTION_CONTROLS = dict.fromkeys(map(ord, DIRECTION_MARKS + DIRECTION_CONTROLS))


def without_direction_controls(text: object) -> str:
    """The app's own sentence quoting GitHub's text in a plain string (a skip reason quoting
    labels) with the direction controls that text held taken out: one of them would reorder
    the sentence's words after it, and no markup can isolate a part of a plain string."""
    return "" if text is None else str(text).translate(_DIRECTION_CONTROLS)


def isolated(text: object) -> Markup:
    """A name from GitHub among a page's own words (a login, a repository, an `owner/repo#N`
    key): escaped, and in a <bdi> when it is not ASCII. GitHub allows only ASCII letters,
    digits and `-_.` in these, which reorder nothing; one holding more (a stored or imported
    record) may hold a direction control that reorders the sentence or table row after it,
    and is isolated as a title is (security79)."""
    shown = "" if text is None else str(text)
    return escape(shown) if shown.isascii() else Markup("<bdi>%s</bdi>") % shown


def plain_title(text: object) -> str:
    """A title from GitHub where no markup can isolate it (a page's <title>): its own
    direction controls taken out, the rest between FIRST STRONG ISOLATE and POP DIRECTIONAL
    ISOLATE (<bdi> in plain text), so it cannot reorder the words after it; "(no title)"
    when nothing of it would be seen."""
    shown = shown_title(text)
    if shown != without_controls(text) or not shown.translate(_DIRECTION_CONTROLS).strip():
        return shown_title(None)
    return "\u2068" + shown.translate(_DIRECTION_CONTROLS) + "\u2069"


def _kana(ch: str) -> bool:
    """Hiragana and katakana letters (not the middle dot U+30FB, which Chinese uses too)."""
    code = ord(ch)
    return (0x3041 <= code <= 0x30FF and code != 0x30FB) or 0x31F0 <= code <= 0x31FF \
        or 0xFF66 <= code <= 0xFF9D


def _hangul(ch: str) -> bool:
    """Hangul syllables and jamo (not the fillers, which draw nothing)."""
    code = ord(ch)
    return ch not in _BLANK_LETTERS and (0xAC00 <= code <= 0xD7A3 or 0x1100 <= code <= 0x11FF
                                         or 0x3131 <= code <= 0x318E)


def title_lang(text: object) -> str | None:
    """The language of a title from GitHub as its own script tells it, for the `lang` of the
    element showing it in a page written in English: "zh" for a title `analyzers.language`
    would call Chinese by its ideographs, "ja" with kana, "ko" with Hangul; "" (HTML's
    "unknown") for a title mostly in another script (Arabic, Cyrillic, ...: one script,
    several languages); None (the page's English stands) for a Latin title or one with no
    letters. Nothing else is guessed: a Latin title may be French, and is left English."""
    from analyzers.language import cjk_share

    title = "" if text is None else str(text)[:1000]
    if any(_kana(ch) for ch in title):
        return "ja"
    if any(_hangul(ch) for ch in title):
        return "ko"
    ideographs, share = cjk_share(title)
    if ideographs >= 2 and share >= 0.4:  # detect_language's rule for a title
        return "zh"
    latin = other = 0
    for ch in title:
        if not ch.isalpha() or ch in _BLANK_LETTERS:
            continue
        if ch.isascii() or unicodedata.name(ch, "").startswith("LATIN"):
            latin += 1
        elif cjk_share(ch)[0] == 0:
            other += 1
    return "" if other > latin else None


# In a page, every control character but tab, line feed and carriage return: a parse error in
# every browser, and invalid in XML. GitHub's text shown anywhere (labels, a category, the
# app's comments quoting a reporter's setup) is written without them (`_finalize`).
_HTML_CONTROLS: dict[int, None] = dict.fromkeys(
    [*(c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)), *range(0x7F, 0xA0)])


def _finalize(value: object) -> object:
    """Every value a page writes (`{{ ... }}`), without `_HTML_CONTROLS`; Markup stays
    Markup (escaped already)."""
    if isinstance(value, Markup):
        return Markup(str.translate(value, _HTML_CONTROLS))
    if isinstance(value, str):
        return value.translate(_HTML_CONTROLS)
    return value


# The site's icon: a small SVG (a rising line on the accent colour). Pages name it inline
# (`favicon_href`, a data: URL the CSP's img-src allows: no request), and /favicon.ico, which
# browsers and feed readers ask for anyway, answers it (bot.site.pages): it was the site's
# whole 3 KiB "Not found" page on every visit (left80).
FAVICON_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
               '<rect width="16" height="16" rx="3" fill="#0b57d0"/>'
               '<path d="M3 12l3-4 3 2 4-6" fill="none" stroke="#fff" stroke-width="2" '
               'stroke-linecap="round" stroke-linejoin="round"/></svg>')


@cache
def html_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown_title"] = shown_title
    env.filters["title_lang"] = title_lang
    env.filters["plain_title"] = plain_title
    env.filters["without_direction_controls"] = without_direction_controls
    env.filters["without_controls"] = without_controls
    env.filters["isolated"] = isolated
    env.globals["favicon_href"] = "data:image/svg+xml," + quote(FAVICON_SVG)
    return env


@cache
def markdown_env() -> jinja2.Environment:
    # Comments never carry text from GitHub (only catalog data and numbers), so no escaping
    # is needed; StrictUndefined makes a missing value an error instead of an empty string.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
