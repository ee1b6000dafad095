"""arXiv identifiers in free text: every way people write them, and nothing that only looks like one.

Recognised (each normalised to the bare id without version, each paper once, in order of
first appearance):

- new-style ids ``YYMM.NNNNN`` (five digits after the dot from 1501 on, four before; months
  01-12, from 0704 on), with an optional ``v2`` version;
- old-style ids ``archive/YYMMNNN`` and ``archive.XX/YYMMNNN`` for the pre-2007 archives,
  normalised to ``archive/YYMMNNN`` (the subject class is not part of the identifier);
- links to arxiv.org (``abs``, ``pdf``, ``html``, also ``www.`` and ``export.``), ar5iv,
  alphaXiv, Hugging Face papers pages, and DOIs ``10.48550/arXiv.<id>`` (old-style ids too);
- ``arXiv:<id>``, ``arXiv <id>``, ``arxiv.<id>``.

A bare new-style id with no such context is accepted only on a clean token boundary
(not glued to letters, digits, dots, slashes, ``#`` ...) and not in a line of other decimal
numbers, because version strings (``0.10.1``), dotted numbers (``2503.14476.1``), decimals
(``1.2345``, ``2023.12345``), IP addresses and metric tables otherwise produce false links;
nor after a version or log word (``version 2401.12345``), as the value of a key that is not a
paper (``loss: 2401.12345``), before a unit (``2401.12345 MiB``), or in a line with a time
of day (a log line).

Every pattern is a fixed-width scan or a bounded look at a small window, so the work stays
linear in the length of the text, also on 64 KiB of digits and dots.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Container
from typing import NamedTuple

# The pre-2007 archives that had their own identifier namespace.
OLD_ARCHIVES: tuple[str, ...] = (
    "acc-phys", "adap-org", "alg-geom", "ao-sci", "astro-ph", "atom-ph", "bayes-an",
    "chao-dyn", "chem-ph", "cmp-lg", "comp-gas", "cond-mat", "cs", "dg-ga", "funct-an",
    "gr-qc", "hep-ex", "hep-lat", "hep-ph", "hep-th", "math", "math-ph", "mtrl-th", "nlin",
    "nucl-ex", "nucl-th", "patt-sol", "physics", "plasm-ph", "q-alg", "q-bio", "quant-ph",
    "solv-int", "supr-con",
)  # fmt: skip

# One scan for everything id-shaped; context is judged per match afterwards.
# Four \d rather than \d{4}: a pattern that begins with a character class lets re skip
# ahead to the next digit, one that begins with a repeat makes it try every position.
_NEW = r"(?P<new>\d\d\d\d\.\d{4,5})"
# Old style: a generic archive-shaped word checked against OLD_ARCHIVES afterwards (a
# character class scans faster than a 34-way alternation tried at every position).
# Not glued to a word, path or number before it, except "arXiv." (the DOI 10.48550/arXiv.math/...).
_OLD = r"(?P<old>(?<![\w\-])(?:(?<!\.)|(?<=arxiv\.))(?!arxiv\.)[A-Za-z]{2,8}(?:-[A-Za-z]{2,5})?(?:\.[A-Za-z]{2})?/\d{7})"
_OLD_SET = frozenset(OLD_ARCHIVES)
_TOKEN_RE = re.compile(rf"{_NEW}|{_OLD}", re.IGNORECASE)
_NEW_ONLY_RE = re.compile(_NEW)  # for text where no old-style id can occur:
_OLD_TAIL_RE = re.compile(r"/\d{7}")  # what every old-style id ends with
# What every new-style id holds. Searched first: `re` skips ahead to a literal first
# character (the dot) faster than to a digit, and most texts have no dot before four digits.
_NEW_TAIL_RE = re.compile(r"\.\d{4}")
_VERSION_RE = re.compile(r"v\d{1,3}")

# What may stand right before the id for it to count as an arXiv reference: the tail of a
# link or prefix. Matched against a window of at most _WINDOW characters, and only when
# the last _HINT characters hold "xiv", "5iv" or "papers" (every context ends with one of them,
# followed by at most ".org", a 9-character path and 3 separators).
_WINDOW = 48
_HINT = 24
_CONTEXT_RE = re.compile(
    r"(?:arxiv|ar5iv|alphaxiv|huggingface\.co/papers|hf\.co/papers|papers\.cool/arxiv|"
    r"semanticscholar\.org/arxiv|10\.48550/arxiv)"
    r"(?:\.org)?(?:/(?:abs|pdf|html|format|ps|overview|papers))?[ \t:/._-]{0,3}$",
    re.IGNORECASE,
)
# The same contexts found in one pass over a lower-cased ASCII text: a token has context
# when one of these ends exactly where it starts. Separators are never letters or digits,
# so the greedy match ends where the anchored one would; one scan beats thousands of window
# searches on 64 KiB of links.
_CONTEXT_SCAN_RE = re.compile(_CONTEXT_RE.pattern.removesuffix("$"))
# Characters that glue a bare id to something else (a path, a version, a hash, a number).
_LEFT_GLUE = frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-/\\@#=+$%:^~"
)
_RIGHT_GLUE = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_%$")
# Bounded quantifiers: an unbounded \\d+ would go quadratic on long digit runs.
_DECIMAL_RE = re.compile(r"\d{1,12}\.\d{1,12}")
# A bare id is a measurement or a version, not a paper, when the word before it names a
# version or a log record ("version 2401.12345", "INFO 2401.12345"), when it is the value of
# a key that is not a paper ("loss: 2401.12345", "grad_norm: 1203.4567"), when a unit
# follows it ("2401.12345 MiB", "took 2401.12345 seconds"), or when its line holds a time
# of day (a log line).
_VERSION_WORDS = frozenset(
    "version versions ver release released build tag v step steps epoch iter iteration "
    "debug info warn warning error critical trace".split()
)
# Keys of a logged value even when capitalised ("Loss: …"); a lower-case key or one with "_"
# is a log key anyway, a name ("GSPO: 2507.18071") is a list of papers.
_METRIC_KEYS = _VERSION_WORDS | frozenset(
    "loss losses reward rewards return time lr kl entropy score acc accuracy value mean std "
    "max min avg total count norm speed throughput latency memory mem size length len ppl "
    "perplexity".split()
)
_PAPER_KEYS = frozenset(
    "paper papers ref refs reference references cite citation citations cf see link source "
    "eprint id arxiv".split()
)
_UNITS = frozenset(
    "s sec secs second seconds ms msec us ns min mins minute minutes h hr hrs hour hours "
    "b kb mb gb tb kib mib gib tib byte bytes tokens tok tflops gflops flops "
    "it/s s/it tok/s tokens/s samples/s steps/s".split()
)
_WORD_BEFORE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]{0,30})[ \t]{0,3}([:=\uff1a]?)[ \t]{0,3}$")
_WORD_AFTER_RE = re.compile(r"[ \t]?([A-Za-z%]{1,8}(?:/[A-Za-z]{1,7})?)(?![A-Za-z0-9_])")
_TIME_OF_DAY_RE = re.compile(r"\d:\d\d:\d\d")
_MAX_YEAR = 40  # new-style ids up to 40MM; far enough ahead, and rejects 2023.12345-style years


class ArxivMention(NamedTuple):
    # A named tuple, not a dataclass: 64 KiB of ids makes thousands, and tuples are cheap.
    arxiv_id: str
    start: int
    end: int
    # "link" (URL / DOI / alphaXiv / HF papers), "prefixed" (arXiv:...), or "bare"
    form: str


def _yymm_table() -> tuple[frozenset[str], frozenset[str]]:
    """(months with four-digit numbers, months with five-digit numbers) as "YYMM"."""
    four: set[str] = set()
    five: set[str] = set()
    for yy in range(7, _MAX_YEAR + 1):
        for mm in range(1, 13):
            if yy == 7 and mm < 4:
                continue
            yymm = f"{yy:02d}{mm:02d}"
            (five if int(yymm) >= 1501 else four).add(yymm)
    return frozenset(four), frozenset(five)


_YYMM4, _YYMM5 = _yymm_table()


def valid_new_style(ident: str) -> bool:
    """YYMM.NNNN(N) with a real month, from 0704 on, with the right number of digits."""
    if ident.isascii():
        # Table lookup: this runs for every decimal number of a 64 KiB body.
        n = len(ident)
        if (n != 9 and n != 10) or ident[4] != "." or not ident[5:].isdigit():
            return False
        return ident[:4] in (_YYMM5 if n == 10 else _YYMM4)
    yymm, _, num = ident.partition(".")
    if len(yymm) != 4 or not yymm.isdigit() or not num.isdigit():
        return False
    yy, mm = int(yymm[:2]), int(yymm[2:])
    if not 1 <= mm <= 12 or yy < 7 or yy > _MAX_YEAR or (yy == 7 and mm < 4):
        return False
    return len(num) == (5 if int(yymm) >= 1501 else 4)


def valid_old_style(ident: str) -> bool:
    archive, _, num = ident.rpartition("/")
    if archive.partition(".")[0].lower() not in _OLD_SET:
        return False
    if len(num) != 7 or not num.isdigit():
        return False
    yy, mm = int(num[:2]), int(num[2:4])
    if not 1 <= mm <= 12:
        return False
    # Old-style ids ran from 1991 to March 2007.
    return yy >= 91 or yy <= 7


def _normalise_old(ident: str) -> str:
    """archive/YYMMNNN: a subject class (math.PR/0601001) is not part of the identifier,
    and arXiv's metadata, the pool and links all name the paper math/0601001."""
    archive, _, num = ident.rpartition("/")
    return f"{archive.partition('.')[0].lower()}/{num}"


def _skip_version(text: str, pos: int) -> int:
    m = _VERSION_RE.match(text, pos)
    return m.end() if m else pos


def _number_starts(text: str) -> tuple[list[int], list[int]]:
    """Start offsets of decimal numbers in `text`: (not arXiv ids, four-digit-era ids).
    Five-digit-era ids are left out: they are almost never measurements."""
    plain: list[int] = []
    old: list[int] = []
    for m in _DECIMAL_RE.finditer(text):
        tok = m.group(0)
        if text.startswith("/", m.end()):
            continue  # a DOI prefix (10.48550/) or a path, not a measurement
        if valid_new_style(tok):
            if len(tok) == 9:
                old.append(m.start())
            continue
        plain.append(m.start())
    return plain, old


def _measured(text: str, start: int, end: int) -> bool:
    """True when a bare id at [start, end) reads as a version, a log value or a measurement
    (see _VERSION_WORDS): a look at 40 characters before it and 18 after."""
    m = _WORD_BEFORE_RE.search(text, max(0, start - 40), start)
    if m is not None:
        key = m.group(1)
        word = key.lower()
        if m.group(2):
            if word not in _PAPER_KEYS and (key == word or "_" in key or word in _METRIC_KEYS):
                return True  # "loss: 2401.12345"; "paper: …" and "GSPO: …" are citations
        elif word in _VERSION_WORDS:
            return True
    m = _WORD_AFTER_RE.match(text, end, end + 18)
    return m is not None and m.group(1).lower() in _UNITS


def _line_has_time(text: str, times: list[int], start: int, end: int) -> bool:
    """True when the line of [start, end) holds a time of day (`times`: where they start)."""
    k = bisect.bisect_left(times, max(0, start - 200))
    if k == len(times) or times[k] >= end + 200:
        return False
    nl = text.rfind("\n", max(0, start - 200), start)
    ls = nl + 1 if nl >= 0 else max(0, start - 200)
    le = text.find("\n", end, end + 200)
    if le < 0:
        le = min(len(text), end + 200)
    return _count(times, ls, le) > 0


def _count(starts: list[int], lo: int, hi: int) -> int:
    return bisect.bisect_left(starts, hi) - bisect.bisect_left(starts, lo)


def _numeric_line(text: str, numbers: tuple[list[int], list[int]], start: int, end: int) -> bool:
    """True when the line around [start, end) (at most 200 characters each way) reads as a
    metrics table or log line: two other plain decimals, or one plus a 1203.4567-style number
    (which is more often a value than a 2012 paper)."""
    plain, old = numbers
    # Both rules need a plain decimal nearby; 64 KiB of ids has none, so one bisect ends it.
    lo = max(0, start - 200)
    k = bisect.bisect_left(plain, lo)
    if k == len(plain) or plain[k] >= end + 200:
        return False
    nl = text.rfind("\n", lo, start)
    ls = nl + 1 if nl >= 0 else lo
    le = text.find("\n", end, end + 200)
    if le < 0:
        le = min(len(text), end + 200)
    n_plain = _count(plain, ls, le) - _count(plain, start, end)
    if n_plain != 1:
        return n_plain >= 2
    return _count(old, ls, le) - _count(old, start, end) >= 1


class _Contexts:
    """The link or prefix ("arxiv.org/abs/", "arXiv:") that ends at an offset of one text."""

    __slots__ = ("text", "ends")

    def __init__(self, text: str) -> None:
        self.text = text
        # ASCII text: one scan (lower() keeps offsets). Other text: a look per token.
        self.ends: dict[int, bool] | None = None
        if text.isascii():
            self.ends = {}
            for m in _CONTEXT_SCAN_RE.finditer(text.lower()):
                end = m.end()
                self.ends.setdefault(end, "/" in m.group(0))
                if text.startswith("\n", end):
                    # The anchored pattern's "$" also matches before a final newline, so
                    # "arXiv:" at the end of a line prefixes an id on the next.
                    self.ends.setdefault(end + 1, "/" in m.group(0))

    def form(self, start: int) -> str | None:
        """The form of a token at `start`: "link", "prefixed", or None (no context)."""
        if self.ends is not None:
            link = self.ends.get(start)
            return None if link is None else ("link" if link else "prefixed")
        tail = self.text[max(0, start - _HINT) : start]
        if tail.isascii():
            # Every context ends in "xiv" or "papers" plus at most 16 characters.
            low = tail.lower()
            if "xiv" not in low and "5iv" not in low and "papers" not in low:
                return None
        ctx = _CONTEXT_RE.search(self.text[max(0, start - _WINDOW) : start])
        if ctx is None:
            return None
        return "link" if "/" in ctx.group(0) else "prefixed"


def find_arxiv_mentions(
    text: str | None,
    *,
    unique: bool = False,
    bare: bool = True,
    skip: Container[str] = (),
) -> list[ArxivMention]:
    """Every arXiv reference in `text`, in order, with position and form.

    Duplicates are kept unless `unique` (then only the first mention of each id, which
    spares the per-mention checks on text that repeats one id thousands of times); `bare`
    False leaves out bare ids (no link or prefix); ids in `skip` (found before, in another
    text) are left out."""
    if not text:
        return []
    out: list[ArxivMention] = []
    numbers: tuple[list[int], list[int]] | None = None  # computed for the first bare id only
    times: list[int] | None = None  # where times of day start (for the first bare id)
    contexts: _Contexts | None = None  # built at the first id-shaped token
    emitted: set[str] = set()  # raw tokens already returned (with `unique`)
    scan = _TOKEN_RE if "/" in text and _OLD_TAIL_RE.search(text) else _NEW_ONLY_RE
    if scan is _NEW_ONLY_RE and not _NEW_TAIL_RE.search(text):
        return out  # no new-style id can be there either
    for m in scan.finditer(text):
        raw = m.group(0)
        if (unique and raw in emitted) or raw in skip:
            continue
        start = m.start()
        if m.group("new"):
            if not valid_new_style(raw):
                continue
            end = m.end()
            if text[end : end + 1] == "v":
                end = _skip_version(text, end)
            after = text[end : end + 2]
            # 2503.14476.1 or 2503.144761 are something else; ".pdf" after a link is fine.
            if after[:1] in _RIGHT_GLUE or (after[:1] == "." and after[1:2].isdigit()):
                continue
            if after[:1] == "-" and after[1:2].isdigit():
                continue
            if contexts is None:
                contexts = _Contexts(text)
            form = contexts.form(start)
            if form is not None:
                out.append(ArxivMention(raw, start, end, form))
                emitted.add(raw)
                continue
            if not bare:
                continue
            left = text[start - 1] if start else ""
            # "paper:2503.14476" is a label and an id; "12:2503.1234" or "x.2503.14476" is not.
            labelled = left == ":" and start >= 2 and text[start - 2].isalpha()
            if left and left in _LEFT_GLUE and not labelled:
                continue
            if numbers is None:
                numbers = _number_starts(text)
                times = [t.start() for t in _TIME_OF_DAY_RE.finditer(text)]
            assert times is not None
            if _numeric_line(text, numbers, start, end) or _line_has_time(text, times, start, end):
                continue
            if _measured(text, start, end):
                continue
            out.append(ArxivMention(raw, start, end, "bare"))
            emitted.add(raw)
        else:
            if not valid_old_style(raw):
                continue
            end = _skip_version(text, m.end())
            if text[end : end + 1] in _RIGHT_GLUE and end < len(text):
                continue
            if contexts is None:
                contexts = _Contexts(text)
            form = "bare" if contexts.form(start) is None else "link"
            if form == "bare" and not bare:
                continue
            ident = _normalise_old(raw)
            if ident in skip:
                continue
            out.append(ArxivMention(ident, start, end, form))
            emitted.add(raw)
    return out


def normalise_arxiv_id(value: str | None) -> str | None:
    """The bare id of one identifier as written alone ("arXiv:2503.14476v2",
    "https://arxiv.org/pdf/2503.14476v2.pdf", "math.PR/0601001" -> "math/0601001"), the
    form find_arxiv_ids gives; None when `value` is not one valid arXiv identifier."""
    text = (value or "").strip()
    if not text or len(text) > 200:
        return None
    if valid_new_style(text):
        return text  # already bare (most of a pool of 100,000): no scan
    ids = find_arxiv_ids(text)
    if len(ids) != 1:
        return None
    m = find_arxiv_mentions(text)[0]
    # The id must be all there is besides a prefix or link before it and a version/".pdf"/"/"
    # after it: "see 2503.14476" or "2503.14476 and more" is a sentence, not an identifier.
    head, tail = text[: m.start], text[m.end :].lower()
    if head and m.form == "bare":
        return None
    if tail not in ("", ".pdf", "/"):
        return None
    return ids[0]


def find_arxiv_ids(text: str | None) -> list[str]:
    """arXiv ids in `text`: ordered by first appearance, unique, versions dropped."""
    seen: dict[str, None] = {}
    for mention in find_arxiv_mentions(text, unique=True):
        seen.setdefault(mention.arxiv_id, None)
    return list(seen)


_LINK_KINDS = (
    ("alphaxiv.org", "alphaxiv"),
    ("huggingface.co/papers", "huggingface"),
    ("hf.co/papers", "huggingface"),
    ("10.48550/", "doi"),
    ("arxiv.org", "arxiv"),
    ("ar5iv.", "arxiv"),
)


def classify_link(url: str) -> tuple[str, str] | None:
    """(kind, arxiv_id) for a URL that points at an arXiv paper, else None.

    kind is "arxiv", "alphaxiv", "huggingface" or "doi"."""
    low = url.lower()
    for needle, kind in _LINK_KINDS:
        if needle in low:
            ids = find_arxiv_ids(url)
            if ids:
                return kind, ids[0]
            return None
    return None


__all__ = [
    "ArxivMention",
    "classify_link",
    "find_arxiv_ids",
    "find_arxiv_mentions",
    "normalise_arxiv_id",
    "valid_new_style",
    "valid_old_style",
]
