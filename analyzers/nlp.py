"""Shared text machinery for the analyzers: one cached blank English spaCy pipeline, sentence
splitting, Matcher / PhraseMatcher builders fed from data tables, plain substring tables for
Chinese, and a Markdown splitter that separates prose from code blocks and logs.

Why a blank pipeline: no model download, start-up in well under a second, and tokenisation is
linear in the input. The lemmatizer is a lookup table (spacy-lookups-data) applied to the
lower-cased token, so "Collapsed", "collapses" and "collapsing" all become "collapse" (spaCy's
own lookup mode keys on the exact text, which misses capitalised words at sentence start).

Chinese: spaCy's blank "zh" needs jieba or pkuseg for word segmentation. We avoid that: CJK
phrases are matched as exact substrings (`SubstringTable`), which is linear and exact because
Chinese phrases carry no inflection.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy
import yaml
from spacy.attrs import IS_PUNCT, LEMMA, LOWER, ORTH, SENT_START
from spacy.language import Language
from spacy.matcher import Matcher, PhraseMatcher
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc

from analyzers.learned import cached_map
from analyzers.text import strip_html_comments

# libyaml's C loader when present: the pattern files load in ~15 ms instead of ~220 ms of
# start-up, to the same data. A safe loader either way.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_patterns(path: Path) -> Any:
    """A vocabulary file (YAML) shipped beside an analyzer: what yaml.safe_load gives."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)  # noqa: S506


# Bodies are capped at 64 KiB by the contract; longer input is cut so every caller stays bounded.
MAX_CHARS = 65_536


@lru_cache(maxsize=1)
def _lemma_table() -> dict[str, str]:
    """spaCy's English lemma lookup table (spacy-lookups-data), word -> lemma, as the plain
    dict its data file holds. (spacy.lookups.load_lookups gives the same pairs as a Table
    keyed by string hash, but hashing its 41,582 keys into a Table and a Bloom filter costs
    ~0.1 s of start-up; the answers are the same, tested over every key.)"""
    from spacy.util import load_language_data, registry

    return load_language_data(registry.lookups.get("en")["lemma_lookup"])


# lower-case hash -> lemma hash; filled as words are first seen (bounded by the vocabulary).
_LEMMA_OF: dict[int, int] = {}
# The lookup table knows "does" as the plural of "doe" and splits "can't" into "ca" + "n't";
# function words matter to negation and phrase patterns, so they are fixed here.
_LEMMA_OVERRIDES = {"does": "do", "doe": "do", "ca": "can", "wo": "will", "n't": "not", "sha": "shall"}


def lemma_of_lower(low: str) -> str:
    """The lemma the pipeline gives a token whose lower-case form is `low`."""
    return _LEMMA_OVERRIDES.get(low) or _lemma_table().get(low, low)


def lower_forms(lemmas: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each of `lemmas`, every lower-case form of a token the pipeline gives that lemma:
    the words lemma_of_lower maps to it (a word the table does not know is its own lemma).
    One pass over the table for all of them."""
    forms: dict[str, set[str]] = {lemma: {lemma} for lemma in lemmas}
    for low, lemma in itertools.chain(_lemma_table().items(), _LEMMA_OVERRIDES.items()):
        if lemma in forms and lemma_of_lower(low) == lemma:
            forms[lemma].add(low)
    return {lemma: frozenset(words) for lemma, words in forms.items()}


def lemma_hashes(lowers: list[int]) -> list[int]:
    """The lemma (hash) the pipeline gives each token whose lower-case form has these hashes:
    what rlt_lower_lemmatizer sets, for a caller that reads integer arrays anyway."""
    strings = nlp().vocab.strings

    def lemma_of(h: int) -> int:
        return strings.add(lemma_of_lower(strings[h]))

    return cached_map(lowers, _LEMMA_OF, lemma_of, 500_000)


def doc_lemmas(document: Doc) -> list[int]:
    """The lemma (hash) the pipeline gives each token of `document`, read from its lower-case
    forms (not from the document's LEMMA column: it need not be set)."""
    return lemma_hashes(document.to_array([LOWER]).reshape(-1).tolist()) if len(document) else []


def set_lemmas(document: Doc, lemmas: list[int]) -> Doc:
    """`document` with its LEMMA column set to `lemmas` (doc_lemmas: what the pipeline sets)."""
    if lemmas:
        document.from_array([LEMMA], numpy.asarray(lemmas, dtype="uint64").reshape(-1, 1))
    return document


@Language.component("rlt_lower_lemmatizer")
def _lower_lemmatizer(doc: Doc) -> Doc:
    return set_lemmas(doc, doc_lemmas(doc))


@lru_cache(maxsize=1)
def _sentence_final() -> frozenset[int]:
    """Hashes of the characters spaCy's Sentencizer ends a sentence on (its defaults)."""
    from spacy.pipeline import Sentencizer

    strings = nlp().vocab.strings
    return frozenset(strings.add(c) for c in Sentencizer.default_punct_chars)


_NOT_SENT_START = numpy.iinfo(numpy.uint64).max  # -1, as a uint64 array holds it


def sentence_starts(document: Doc) -> list[int]:
    """The first token of each sentence as the pipeline's sentencizer splits `document`
    ([s.start for s in doc(text).sents]), found from the token arrays: `document` needs no
    sentence flags (a `lemmatized` one has none) and no Span object is made per sentence.
    spaCy's Sentencizer rule: a sentence starts at the first token and at the first token
    after a sentence-final character ("." "?" "。") that is neither punctuation nor another
    such character."""
    if not len(document):
        return []
    orths, puncts = document.to_array([ORTH, IS_PUNCT]).T.tolist()
    return sentence_starts_of(orths, puncts)


def sentence_starts_of(orths: list[int], puncts: list[int]) -> list[int]:
    """sentence_starts of a document whose tokens have these ORTH hashes and IS_PUNCT flags
    (for a caller that reads those arrays anyway); [] for no tokens."""
    n = len(orths)
    if not n:
        return []
    final = _sentence_final()
    ends = list(map(final.__contains__, orths))
    starts = [0]
    if True in ends:
        j = 0
        for i in itertools.compress(range(n), ends):
            if i < j:
                continue  # in the punctuation that follows an earlier end
            j = i + 1
            while j < n and (ends[j] or puncts[j]):
                j += 1
            if j < n:
                starts.append(j)
    return starts


@Language.component("rlt_sentencizer")
def _sentencizer(doc: Doc) -> Doc:
    """The sentence flags of a new Doc, at sentence_starts (spaCy's Sentencizer makes a Token
    object per token to find the same; the flags it sets are the same, tested)."""
    if len(doc):
        flags = numpy.full(len(doc), _NOT_SENT_START, dtype="uint64")
        flags[sentence_starts(doc)] = 1
        doc.from_array([SENT_START], flags)
    return doc


# The tokenizer's affix and URL expressions, remembered per string. spaCy caches the tokens
# of a whitespace-free chunk, but never those of a chunk in which a special case was found
# on the way ("it's,", "(e.g.", "don't."): such chunks, common in English, go through the
# prefix, suffix and infix expressions again every time they are seen, and the suffix
# expression is a long alternation. The answers depend on the string alone, so remembering
# them changes no token (tested on every text the analyzers tokenize in the labelled threads).
_MEMO_ENTRIES = 50_000  # per expression; past it, strings are looked up as before
_MEMO_LENGTH = 80  # longer strings (rare: text is cut into runs of 80) are not kept


class _Memo(dict):  # type: ignore[type-arg]
    """The answers of `compute` per string, kept as they are first asked for (up to
    _MEMO_ENTRIES strings of up to _MEMO_LENGTH characters). The tokenizer calls the memo's
    __getitem__: a string seen before is answered in C, without a Python call."""

    def __init__(self, compute: Any) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, string: str) -> Any:
        found = self._compute(string)
        if len(self) < _MEMO_ENTRIES and len(string) <= _MEMO_LENGTH:
            self[string] = found
        return found


def _remembered(search: Any) -> Any:
    return None if search is None else _Memo(search).__getitem__


def _remembered_all(finditer: Any) -> Any:
    # The matches as a tuple: the tokenizer reads them through list() (Tokenizer.find_infix).
    return None if finditer is None else _Memo(lambda string: tuple(finditer(string))).__getitem__


def _remembering_tokenizer() -> Any:
    """spaCy's default tokenizer factory ("spacy.Tokenizer.v1": the language's special
    cases, affix expressions and URL matchers), built once with the expressions remembered
    per string and without special cases that change no token (_changing_rules).
    (Replacing the expressions of a built tokenizer would load its special cases again,
    ~0.1 s of start-up for each one replaced.)"""
    from spacy import util

    def make(pipeline: Language) -> Tokenizer:
        defaults = pipeline.Defaults
        prefixes, suffixes, infixes = defaults.prefixes, defaults.suffixes, defaults.infixes
        expressions = {
            "prefix_search": _remembered(util.compile_prefix_regex(prefixes).search if prefixes else None),
            "suffix_search": _remembered(util.compile_suffix_regex(suffixes).search if suffixes else None),
            "infix_finditer": _remembered_all(util.compile_infix_regex(infixes).finditer if infixes else None),
            "token_match": _remembered(defaults.token_match),
            "url_match": _remembered(defaults.url_match),
        }
        without_rules = Tokenizer(pipeline.vocab, rules={}, **expressions)
        return Tokenizer(pipeline.vocab, rules=_changing_rules(defaults.tokenizer_exceptions, without_rules), **expressions)

    return make


def _changing_rules(rules: Mapping[str, Any], without_rules: Tokenizer) -> dict[str, Any]:
    """`rules` less the special cases of white space that give the one token the tokenizer
    gives without them (" ", "\\t", "\\n"). Such a case changes no token but costs: spaCy
    remembers no chunk of a text after the first special case it meets there (has_special,
    spaCy #1250), so after the first line break every word of a text went through the affix
    expressions again, in every text. A text's chunks are either all white space or hold
    none, so a white-space string is only ever met as a whole chunk, never left over from
    splitting affixes off a longer one: without its rule, it is the one token checked here."""
    kept: dict[str, Any] = {}
    for string, tokens in rules.items():
        if not (string.isspace() and tokens == [{ORTH: string}] and [t.text for t in without_rules(string)] == [string]):
            kept[string] = tokens
    return kept


_PIPELINE: list[Language] = []  # the one pipeline, once built
_PIPELINE_LOCK = threading.Lock()


def nlp() -> Language:
    """The shared pipeline: tokenizer, sentencizer, lower-case lookup lemmatizer.

    Built once per process under a lock: the app's first calls can come from several threads
    at once (a page summarising rules in a worker thread while the analysis starts), and
    lru_cache does not serialise the first call, so each thread built its own pipeline. A
    matcher compiled on one pipeline's vocabulary then met another's StringStore (KeyError
    E018 on /frameworks/verl at start-up)."""
    if not _PIPELINE:
        with _PIPELINE_LOCK:
            if not _PIPELINE:
                _PIPELINE.append(_build_pipeline())
    return _PIPELINE[0]


def _build_pipeline() -> Language:
    from spacy.lang.en import English

    # What spacy.blank("en") makes, with the tokenizer built by the factory above, passed to
    # the constructor directly: spacy.blank would first resolve and validate a whole config
    # to find it (~20 ms of start-up).
    pipeline = English(create_tokenizer=_remembering_tokenizer())
    pipeline.add_pipe("rlt_sentencizer", name="sentencizer")
    pipeline.add_pipe("rlt_lower_lemmatizer")
    _lemma_table()  # load now: start-up cost, not the first thread's
    # Long pasted logs would otherwise hit spaCy's max_length guard (1,000,000 chars); our own
    # cap is far below it, so keep the default.
    return pipeline


_LOWER_LETTERS = re.compile(r"[a-z]+")


def one_token(text: str) -> bool:
    """Whether the tokenizer makes one token of `text` (len(nlp().make_doc(text)) == 1).
    A run of lower-case ASCII letters is one token unless a special case splits it ("cannot",
    "gonna"): none of the English tokenizer's prefix, suffix and infix expressions matches
    inside such a run (each needs a punctuation mark, a digit or an upper-case letter), and
    a URL or token match keeps a chunk whole anyway. Such a run is answered without
    tokenizing it, which makes a lexeme of each new word (~40 µs: ~800 review pattern words
    at start-up; a text meeting the word later makes it then, as for any other word). The
    same answers for every pattern word (tested)."""
    tokenizer = nlp().tokenizer
    if _LOWER_LETTERS.fullmatch(text) and text not in tokenizer.rules:
        return True
    return len(tokenizer(text)) == 1


# spaCy's tokenizer peels prefixes/suffixes off each whitespace-free chunk one at a time, which
# is quadratic on hostile chunks ("[[[[...", "1.1.1...": 10,000 brackets took 23 s). Natural
# language never has 80-character words, so long runs get a space every 80 characters.
_LONG_RUN = re.compile(r"\S{80}")


def has_run(text: str, length: int) -> bool:
    r"""Whether `text` holds `length` or more non-space characters in a row (what a search
    for `\S{length}` finds: str.split and `\s` agree on what a space is). Most texts hold no
    such run and are left as they are; one C-level split finds out about 30 % cheaper than a
    regular expression, which re tries at every position (no literal to skip ahead to)."""
    return len(text) >= length and max(map(len, text.split()), default=0) >= length


def _bounded(text: str | None) -> str:
    text = (text or "")[:MAX_CHARS]
    if not has_run(text, 80):
        return text
    return _LONG_RUN.sub(r"\g<0> ", text)


@lru_cache(maxsize=1)
def _components() -> tuple[Any, ...]:
    return tuple(component for _, component in nlp().pipeline)


def annotate(text: str) -> Doc:
    """nlp()(text), calling the tokenizer and each component directly: Language.__call__'s
    checks and error handling cost about as much as the sentencizer on a short text."""
    document = nlp().tokenizer(text)
    for component in _components():
        document = component(document)
    return document


def lemmatized(text: str | None) -> Doc:
    """doc(text) without the sentence flags (sentence_starts finds them when they are needed):
    the tokens and their lemmas."""
    return _lower_lemmatizer(tokens(text))


def tokens(text: str | None) -> Doc:
    """The tokens of `text` as `lemmatized` makes them, without the lemmas (doc_lemmas and
    set_lemmas add them, for a caller that reads them first)."""
    return nlp().tokenizer(_bounded(text))


def doc(text: str | None) -> Doc:
    """Run the whole pipeline on `text` (cut to MAX_CHARS, long runs broken up)."""
    return annotate(_bounded(text))


def sentences(text: str | None) -> list[str]:
    """Sentences of `text`, stripped, empty ones dropped."""
    return [s.text.strip() for s in doc(text).sents if s.text.strip()]


def pattern_docs(table: Mapping[str, Iterable[str]], attr: str = "LEMMA") -> dict[str, list[Doc]]:
    """The docs phrase_matcher matches for each key of `table` (key -> phrases; blank phrases
    and keys without a phrase left out): lemmatised for attr="LEMMA", tokens alone else."""
    # The tokenizer and the lemmatizer alone, not nlp().pipe: a matcher reads no sentence
    # flags, and Language.pipe's checks and the sentencizer cost about as much as the tokens
    # (~2,100 phrases at start-up). The tokens and lemmas are the same.
    tokenizer = nlp().tokenizer
    make = (lambda p: _lower_lemmatizer(tokenizer(p))) if attr == "LEMMA" else tokenizer
    docs: dict[str, list[Doc]] = {}
    for label, phrases in table.items():
        kept = [p for p in phrases if p and p.strip()]
        if kept:
            docs[label] = list(map(make, kept))
    return docs


def phrase_matcher(table: Mapping[str, Iterable[str]], attr: str = "LEMMA") -> PhraseMatcher:
    """A PhraseMatcher with one rule per key of `table` (key -> phrases).

    attr="LEMMA" matches inflected forms ("collapsed" for "collapse"); "LOWER" matches words
    exactly, ignoring case."""
    return docs_matcher(pattern_docs(table, attr), attr)


def docs_matcher(docs: Mapping[str, list[Doc]], attr: str = "LEMMA") -> PhraseMatcher:
    """phrase_matcher of a table whose pattern_docs are `docs` (for a caller that reads them too)."""
    matcher = PhraseMatcher(nlp().vocab, attr=attr)
    for label, label_docs in docs.items():
        matcher.add(label, label_docs)
    return matcher


def token_matcher(table: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]]) -> Matcher:
    """A Matcher with one rule per key of `table` (key -> list of token patterns)."""
    matcher = Matcher(nlp().vocab)
    for label, patterns in table.items():
        if patterns:
            matcher.add(label, [list(p) for p in patterns])
    return matcher


@dataclass(frozen=True)
class Hit:
    label: str
    text: str
    start: int  # token index (spaCy) or character offset (SubstringTable)


def matches(matcher: Matcher | PhraseMatcher, document: Doc) -> list[Hit]:
    """Every match of `matcher` in `document`, in text order, as (label, matched text)."""
    strings = document.vocab.strings
    return [
        Hit(strings[match_id], document[start:end].text, start)
        for match_id, start, end in sorted(matcher(document), key=lambda m: (m[1], m[2]))
    ]


def has_cjk(text: str) -> bool:
    return not text.isascii() and _CJK.search(text) is not None  # isascii: one C pass, no regex


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


class SubstringTable:
    """Exact, case-insensitive substring lookup for phrases that need no tokenizer (Chinese,
    or fixed English strings). Cost is one C-level `str.find` per phrase: linear in the text."""

    def __init__(self, table: Mapping[str, Iterable[str]]) -> None:
        self._entries: list[tuple[str, str]] = [
            (label, phrase.lower())
            for label, phrases in table.items()
            for phrase in phrases
            if phrase and phrase.strip()
        ]

    def find(self, text: str, lowered: bool = False) -> list[Hit]:
        hay = text if lowered else text.lower()
        hits = []
        for label, phrase in self._entries:
            pos = hay.find(phrase)
            if pos >= 0:
                hits.append(Hit(label, phrase, pos))
        hits.sort(key=lambda h: h.start)
        return hits

    def __len__(self) -> int:
        return len(self._entries)


# --- Markdown: prose versus code / logs / template comments -------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`[^`\n]{1,400}`")



@dataclass(frozen=True)
class SplitText:
    prose: str  # what people wrote, code blocks and HTML comments removed
    code: str  # fenced / indented blocks: pasted logs, configs, tracebacks


@lru_cache(maxsize=8)  # failures and proposals both split the same opening post
def split_markdown(text: str | None, keep_inline_code: bool = True) -> SplitText:
    """Separate prose from code. Line-based and linear: fenced blocks (``` or ~~~, closed by
    the same fence or by the end of the text), 4-space-indented blocks after a blank line, and
    HTML comments (issue templates put their instructions there)."""
    text = (text or "")[:MAX_CHARS]
    if "<!--" in text:
        text = strip_html_comments(text)
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    prev_blank = True
    in_indented = False
    for line in text.split("\n"):
        if not line and fence is None:
            # An empty line: prose, ends an indented block (64 KiB of newlines stays cheap).
            in_indented = False
            prev_blank = True
            prose.append(line)
            continue
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            else:
                code.append(line)
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            in_indented = False
            continue
        if (line.startswith("    ") or line.startswith("\t")) and (prev_blank or in_indented):
            in_indented = True
            code.append(line)
            continue
        in_indented = False
        prev_blank = not line.strip()
        prose.append(line)
    prose_text = "\n".join(prose)
    if not keep_inline_code:
        prose_text = _INLINE_CODE.sub(" ", prose_text)
    return SplitText(prose_text, "\n".join(code))


def strip_code(text: str | None) -> str:
    """Prose only (see split_markdown)."""
    return split_markdown(text).prose


# Characters that re's IGNORECASE matches to an ASCII letter while str.lower() does not map
# them to that letter (or changes their length): "İ" (U+0130), "ı", "ſ", the Kelvin sign.
_FOLD_SPECIAL = ("\u0130", "\u0131", "\u017f", "\u212a")


def lowered_matches_alike(text: str) -> bool:
    """Whether a pattern whose letters are lower case finds, without IGNORECASE, in
    `text.lower()` what it finds with IGNORECASE in `text`, at the same offsets: true unless
    the text holds one of _FOLD_SPECIAL (see CaselessPattern)."""
    return text.isascii() or not any(c in text for c in _FOLD_SPECIAL)


# Unicode's \s counts these four ASCII control characters as space, re.ASCII's does not.
_CONTROL_SPACES = ("\x1c", "\x1d", "\x1e", "\x1f")


def ascii_alike(text: str) -> bool:
    r"""Whether a pattern compiled with re.ASCII finds in `text` what the same pattern finds
    without it, at the same offsets: `text` is ASCII and holds none of _CONTROL_SPACES (\w,
    \b, \d, \s and IGNORECASE agree on every other ASCII character, and a pattern's
    non-ASCII literals match nothing there either way). The re.ASCII twin's tests skip the
    Unicode tables (a `\b` costs four table look-ups per character tried), and most posts
    and comments are ASCII."""
    return text.isascii() and not any(c in text for c in _CONTROL_SPACES)


def ascii_twin(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`pattern` compiled with re.ASCII (the same matches on text that is ascii_alike)."""
    return re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII)


def _lower_case_only(pattern: str, literals: Iterable[str] = ()) -> None:
    if any(c.isascii() and c.isupper() for c in re.sub(r"\\.", "", pattern) + "".join(literals)):
        raise ValueError(f"write the pattern and its literals in lower case: {pattern!r}")


@lru_cache(maxsize=64)
def without_ignorecase(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`pattern` (case-insensitive, written in lower case) without IGNORECASE: for texts where
    `lowered_matches_alike`, the same matches over the lower-cased text, found without
    folding every character's case at every position tried."""
    if not pattern.flags & re.IGNORECASE:
        raise ValueError(f"not a case-insensitive pattern: {pattern.pattern!r}")
    source = pattern.pattern.removeprefix("(?i)")
    _lower_case_only(source)
    if "(?i" in source:
        raise ValueError(f"IGNORECASE inside the pattern: {pattern.pattern!r}")
    return re.compile(source, pattern.flags & ~re.IGNORECASE)


def _alternatives(source: str) -> list[str]:
    """The top-level alternatives of a regular expression's source ("a|b(c|d)" -> "a",
    "b(c|d)"): a `|` outside groups, character classes and escapes."""
    parts: list[str] = []
    depth = start = i = 0
    in_class = False
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 + (source[i + 1 : i + 2] == "^")
            i += source[i : i + 1] == "]"  # a "]" first in a class is a literal
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and not depth:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    return parts


def _contained(items: Any) -> frozenset[str] | None:
    """Strings one of which every match of a parsed expression (re._parser items) contains:
    the longest run of literals, or the choices of a group of alternatives (None: none known)."""
    from re import _constants as sre  # type: ignore[attr-defined]

    best: frozenset[str] | None = None

    def consider(choices: frozenset[str] | None) -> None:
        nonlocal best
        # Longer strings are rarer; on a tie the later (the pattern's distinctive words
        # usually come after its function words: "is ... normal", "what ... mean").
        if choices and all(choices) and (best is None or min(map(len, choices)) >= min(map(len, best))):
            best = choices

    run: list[str] = []
    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        if op is sre.AT:
            continue  # zero-width: the literals on both sides are adjacent in the text
        consider(frozenset({"".join(run)}))
        run = []
        if op is sre.SUBPATTERN:
            consider(_contained(av[-1]))
        elif op is sre.BRANCH:
            choices = [_contained(alt) for alt in av[1]]
            if all(c is not None for c in choices):
                consider(frozenset().union(*choices))  # type: ignore[arg-type]
        elif op is sre.IN and all(o is sre.LITERAL for o, _ in av):
            consider(frozenset(chr(v) for _, v in av))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            consider(_contained(av[2]))
    consider(frozenset({"".join(run)}))
    return best


_MAX_LED = 64  # alternatives written out by _literal_led; past it the pattern is compiled as it is


def _led(seq: list[Any], state: Any) -> list[list[Any]] | None:
    """`seq` (re._parser items) as alternatives, in order, each led by a literal character:
    a leading alternation is written out, its tail repeated in each alternative
    ("\\b(?:hang|stuck)\\b" -> "hang\\b|stuck\\b" with the \\b moved, below); None when some
    alternative cannot be led so."""
    from re import _constants as sre  # type: ignore[attr-defined]
    from re._parser import SubPattern  # type: ignore[import-not-found]

    if not seq:
        return None
    op, av = seq[0]
    if op is sre.LITERAL:
        return [seq]
    if op is sre.AT and av is sre.AT_BOUNDARY and len(seq) > 1:
        op2, av2 = seq[1]
        if op2 is sre.LITERAL:
            # "\\bc..." as "c(?<=\\bc)...": a boundary before c at the start is a boundary
            # before the c just taken, looked behind for.
            behind = SubPattern(state, [seq[0], seq[1]])
            return [[seq[1], (sre.ASSERT, (-1, behind)), *seq[2:]]]
        if op2 is sre.BRANCH:
            return _written_out(av2[1], [seq[0]], seq[2:], state)
        return None
    if op is sre.BRANCH:
        return _written_out(av[1], [], seq[1:], state)
    return None


def _written_out(alternatives: list[Any], head: list[Any], tail: list[Any], state: Any) -> list[list[Any]] | None:
    """head + (a|b|...) + tail as [head + a + tail, head + b + tail, ...], each _led. The same
    matches in the same order: re tries a then b, each with the tail, as the alternation does."""
    out: list[list[Any]] = []
    for alternative in alternatives:
        led = _led([*head, *alternative.data, *tail], state)
        if led is None or len(out) + len(led) > _MAX_LED:
            return None
        out += led
    return out


def _literal_led(source: str, flags: int) -> re.Pattern[str]:
    """re.compile(source, flags), written so that each top-level alternative starts with a
    literal character where that is possible without changing a match. re then skips in C to
    the positions holding one of those characters (a charset prefix), where an alternation
    led by "\\b" is tried at every position: the failure analyzer's anchors and caseless
    patterns ("\\b(?:hang|hangs|stuck|...)\\b", "\\bwhat\\s...") are such alternations. Only for
    patterns without groups (nothing to renumber) and without IGNORECASE (re skips ahead to
    no cased literal then); others compile as they are."""
    from re import _compiler, _parser  # type: ignore[attr-defined]
    from re import _constants as sre  # type: ignore[attr-defined]

    tree = _parser.parse(source, flags)
    if tree.state.groups > 1 or not tree.data or (flags | tree.state.flags) & re.IGNORECASE:
        return re.compile(source, flags)
    led = _led(list(tree.data), tree.state)
    if led is None or (len(led) == 1 and led[0] == list(tree.data)):
        return re.compile(source, flags)
    rewritten = _parser.SubPattern(tree.state, [(sre.BRANCH, (None, [_parser.SubPattern(tree.state, s) for s in led]))])
    return _compiler.compile(rewritten, flags)


class _Alternation:
    """Top-level alternatives of a regular expression matched without IGNORECASE over
    lower-cased text, each with strings one of which any match of it contains (None: not
    known, always tried). An alternative none of whose strings is in the text cannot match
    there, and leaving it out of the alternation changes no match (the others keep their
    order): most texts leave one or two of a dozen alternatives to try at every position."""

    def __init__(self, alternatives: Sequence[str], needs: Sequence[Sequence[str] | None], flags: int = 0) -> None:
        self.alternatives = list(alternatives)
        self.needs = [None if n is None else tuple(n) for n in needs]
        self.flags = flags
        self._pruned: dict[tuple[tuple[int, ...], bool], re.Pattern[str] | None] = {}

    def pruned(self, low: str, ascii: bool = False) -> re.Pattern[str] | None:
        """The alternation of the alternatives that can match in `low` (None: none can),
        compiled with re.ASCII when `ascii` (for text that is ascii_alike)."""
        kept: list[int] = []
        for i, needs in enumerate(self.needs):
            if needs is None:
                kept.append(i)
                continue
            for n in needs:  # (a loop: stops at the first string found)
                if n in low:
                    kept.append(i)
                    break
        key = (tuple(kept), ascii)
        rx = self._pruned.get(key, self)  # `self`: not compiled yet
        if rx is self:
            flags = (self.flags & ~re.UNICODE) | re.ASCII if ascii else self.flags
            rx = _literal_led("|".join(self.alternatives[i] for i in kept), flags) if kept else None
            if len(self._pruned) < 256:
                self._pruned[key] = rx
        return rx  # type: ignore[return-value]

    def finditer(self, low: str, ascii: bool = False) -> Iterator[re.Match[str]]:
        rx = self.pruned(low, ascii)
        return iter(()) if rx is None else rx.finditer(low)


def _lowered_alternation(pattern: re.Pattern[str]) -> _Alternation:
    """without_ignorecase(pattern) as an _Alternation, the strings of each alternative found
    by parsing it. A pattern with numbered groups is tried whole (a back-reference counts
    groups)."""
    from re import _parser  # type: ignore[attr-defined]

    lowered = without_ignorecase(pattern)
    alternatives = _alternatives(lowered.pattern)
    numbered = lowered.groups > 0
    contained = [None if numbered else _contained(_parser.parse(alt, lowered.flags)) for alt in alternatives]
    return _Alternation(alternatives, [None if c is None else sorted(c) for c in contained], lowered.flags)


# pattern's id -> (pattern, its _lowered_alternation): the one cache of them. Looked up by id:
# an lru_cache's key would hash a compiled pattern, which hashes its whole code (0.4-1.6 µs,
# ~8 calls per post). The pattern is kept in the entry, so its id cannot be reused while the
# entry exists.
_ALTERNATION_OF: dict[int, tuple[re.Pattern[str], _Alternation]] = {}


def lowered_finditer(pattern: re.Pattern[str], low: str) -> Iterator[re.Match[str]]:
    """without_ignorecase(pattern).finditer(low), trying only the top-level alternatives that
    can match in `low` (the same matches)."""
    entry = _ALTERNATION_OF.get(id(pattern))
    if entry is None or entry[0] is not pattern:
        entry = (pattern, _lowered_alternation(pattern))
        if len(_ALTERNATION_OF) < 256:  # the analyzers' own patterns; a caller's extra ones are not kept
            _ALTERNATION_OF[id(pattern)] = entry
    return entry[1].finditer(low)


class CaselessPattern:
    """A case-insensitive alternation of regular expressions, made cheap to count.

    IGNORECASE makes re compare every character case-folded, at every position it tries,
    and every alternative is tried at every position. So: (1) the lower-cased text is
    matched without IGNORECASE, which gives the same matches when the pattern's letters
    are lower case and the text holds none of _FOLD_SPECIAL (lower() then keeps every
    character's length and word/space class, and maps exactly the characters IGNORECASE
    equates with an ASCII letter to it); other texts are matched the slow way. (2) Each
    alternative names literals one of which any match of it contains; an alternative whose
    literals are all absent from the text cannot match there, so leaving it out of the
    alternation changes no match (the others keep their order). (3) On text that is
    ascii_alike the alternation is compiled with re.ASCII (the same matches, no Unicode
    table look-ups: -13 % on the failure analyzer's caseless patterns)."""

    def __init__(self, *alternatives: tuple[str, tuple[str, ...]]) -> None:
        for pattern, needs in alternatives:
            _lower_case_only(pattern, needs)
        self.ignorecase = re.compile("|".join(p for p, _ in alternatives), re.IGNORECASE)
        self._lowered = _Alternation([p for p, _ in alternatives], [needs for _, needs in alternatives])

    def count(self, text: str | CaselessText, limit: int) -> int:
        """How many matches finditer gives, up to `limit`. A text counted by several patterns
        is best passed as one CaselessText (lower-cased and tested once)."""
        if isinstance(text, str):
            text = CaselessText.of(text)
        if text.low is not None:
            found = self._lowered.finditer(text.low, text.ascii)
        else:
            found = self.ignorecase.finditer(text.text)
        return len(list(itertools.islice(found, limit)))


class CaselessText(NamedTuple):
    """A text as CaselessPattern.count reads it: its lower-cased form when that gives the
    same matches (lowered_matches_alike; else None) and whether it is ascii_alike. Made once
    for a text that several patterns count (the failure analyzer's opening post: four)."""

    text: str
    low: str | None
    ascii: bool

    @classmethod
    def of(cls, text: str) -> CaselessText:
        alike = lowered_matches_alike(text)
        return cls(text, text.lower() if alike else None, alike and ascii_alike(text))


class TermSet:
    """Literal terms found with `str.find` (C speed; a regex alternation of many literals
    tries every alternative at every position). Terms whose ends are ASCII letters or digits
    only match as whole words ("hang" is not found in "change"); CJK terms match anywhere.
    Texts are expected lower-case; terms are lower-cased here."""

    def __init__(self, terms: Iterable[str]) -> None:
        self.terms: list[tuple[str, bool, bool]] = [
            (t, t[0].isascii() and t[0].isalnum(), t[-1].isascii() and t[-1].isalnum())
            # longest first; equal lengths in alphabetical order, so that which term is reported
            # does not depend on the set's (hash-seeded) order
            for t in sorted({str(x).lower() for x in terms if x and str(x).strip()}, key=lambda t: (-len(t), t))
        ]

    def _hits(self, text: str, term: str, left: bool, right: bool, limit: int) -> Iterable[int]:
        pos = text.find(term)
        n = len(term)
        found = 0
        while pos >= 0 and found < limit:
            ok = not (left and pos > 0 and (text[pos - 1].isascii() and text[pos - 1].isalnum()))
            end = pos + n
            if ok and right and end < len(text) and text[end].isascii() and text[end].isalnum():
                ok = False
            if ok:
                found += 1
                yield pos
            pos = text.find(term, pos + 1)

    def search(self, text: str) -> str | None:
        """The first term (longest terms tried first) found in `text`, or None."""
        if not text:
            return None  # (a follow-up has no title)
        for term, left, right in self.terms:
            # `in` first: most terms are absent, and a generator per term costs more.
            if term in text:
                for _ in self._hits(text, term, left, right, 1):
                    return term
        return None

    def count(self, text: str, limit: int = 2) -> tuple[int, str | None]:
        """How many hits (up to `limit`, over all terms) and the first term found."""
        total = 0
        first = None
        if not text:
            return total, first
        for term, left, right in self.terms:
            if term not in text:
                continue
            for _ in self._hits(text, term, left, right, limit - total):
                total += 1
                first = first or term
            if total >= limit:
                break
        return total, first

    def __bool__(self) -> bool:
        return bool(self.terms)
