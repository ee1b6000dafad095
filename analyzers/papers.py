"""Link a thread to the papers it cites: by arXiv identifier, by title, or by method name.

The pool is the project's catalog plus, optionally, a paper pool (contract `paper` dicts;
tens of thousands in production). `PaperIndex.build` indexes it once:

- arXiv id -> paper;
- titles: an inverted index from each title's rarest features (content words, adjacent
  word pairs, pairs that skip one word) to the title. A title becomes a candidate only when
  two of its keys occur in the thread where the title would put them (or one very rare key
  occurs), so a thread looks at a handful of titles, never the pool; each candidate gets one
  rapidfuzz check on a token window around that place, and where near-identical titles match
  the same words only the best one counts;
- method names and aliases, squashed ("Dr. GRPO" = "Dr.GRPO"), found by a prefix-pruned
  scan of the thread's tokens with case and boundary rules: acronyms of three letters or
  fewer (PPO, TIS) and acronyms that are English words (SPIN) only in exact case, longer
  ones (GRPO) in any case; never inside identifiers, paths or URLs; config-key spellings
  never count, config values alone in inline code do.

`link_papers` returns contract `papers` entries, each paper once, strongest evidence first
(arxiv_id > title > method_name). Text comes from title, body and human comments with code
blocks, inline code, HTML comments and template boilerplate removed; arXiv links inside code
blocks still count, bare numbers there do not.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import itertools
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from analyzers.accounts import by_bot
from analyzers.arxiv import find_arxiv_mentions, normalise_arxiv_id
from analyzers.text import strip_code, strip_html_comments, strip_inline_code, visible_text

# Tokens: ASCII words (with a trailing ++ as in REINFORCE++). CJK text separates tokens.
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:\+\+)?")
_TOKEN_SPLIT_RE = re.compile(f"({_TOKEN_RE.pattern})")

# Words too common in paper titles to identify one. Rarity in the pool decides the rest.
TITLE_STOPWORDS: frozenset[str] = frozenset(
    """a an the of for with via on in to and by from is are at as its it be or not no
    towards toward using use learning reinforcement language model models large llm llms
    policy optimization optimisation training train trained approach method methods
    based efficient effective simple scalable scaling study analysis improving improved
    better beyond through than what when how why can do does your you we our all one
    new deep neural network networks reasoning""".split()
)

# Aliases that name a general technique rather than one paper's method; they never link by
# themselves (a failure report saying "KL loss" does not cite Ziegler et al.).
GENERIC_ALIASES: frozenset[str] = frozenset(
    s.lower()
    for s in (
        "KL loss", "entropy loss", "KL penalty", "reference KL", "target KL", "KL controller",
        "KL regularization", "in-reward KL", "adaptive KL controller", "entropy regularization",
        "entropy regularisation", "entropy bonus", "decoupled loss", "decoupled mode",
        "token-mean", "rollout correction", "adaptive entropy", "target entropy",
        "overlong penalty", "off-policy masking", "soft gating", "keep routing",
        "k3", "low-variance KL", "GAE", "importance sampling", "max staleness",
        "staleness threshold", "freshness control", "unbiased KL", "geometric masking",
        "entropy mechanism", "process supervision", "temperature-controlled gate",
        "global token normalisation", "group-normalized advantage", "leave-one-out baseline",
        "clipped surrogate objective", "LoRA", "group filtering", "dynamic filtering",
        "sequence-level importance sampling", "sequence-level importance ratio",
    )
)  # fmt: skip

_SCORE_METHOD_EXACT = 0.9  # a multi-word name or a distinctive single word
_SCORE_METHOD_ACRONYM = 0.8  # a short acronym in exact case
_TITLE_MIN_SCORE = 90.0  # rapidfuzz ratio for a fuzzy title
_TITLE_KEYS = 4  # rarest features (words, word pairs) of a title in the inverted index
_SOLO_MAX_DF = 2  # a word in at most this many titles is a candidate trigger by itself


@dataclass
class Paper:
    key: str  # arxiv id, or "title:<normalised title>"
    arxiv_id: str | None
    title: str
    method: str | None
    first_public: str | None
    aliases: list[str] = field(default_factory=list)


@dataclass
class _Alias:
    squashed: str  # letters and digits only, as written (for case-sensitive aliases)
    ntokens: int
    nwords: int  # whitespace-separated words: "SPPO" is one, so "'s PPO" is not it
    case_sensitive: bool
    papers: list[tuple[int, str | None]]  # (paper, method); several = ambiguous
    score: float
    from_catalog: bool


@dataclass(frozen=True)
class _Title:
    paper: int
    tokens: tuple[str, ...]
    text: str  # tokens joined by one space
    keys: tuple[str, ...]
    offsets: tuple[int, ...]  # index in `tokens` where each key starts
    covers: tuple[tuple[int, ...], ...]  # indices in `tokens` of the words of each key
    need: int
    # Rare single words (coined names such as "Bika") with their offsets: one of them alone
    # makes the title a candidate, so a typo in another word cannot hide the title.
    solo: tuple[
        tuple[str, int], ...
    ] = ()  # how many keys a thread must contain to make this a candidate


# Every byte that is not an ASCII letter, digit or "+" becomes a space. Text is first
# encoded with each non-ASCII character as one "?", so the result is as long as the text,
# holds the tokens' characters at their places, and spaces everywhere else.
_TOKEN_BYTES = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or chr(c) == "+") else ord(" ") for c in range(256)
)


class _Toks:
    """The tokens of a text: words and lower-case words (64 KiB of text makes tens of
    thousands of tokens, so both come from C-level splits), and their offsets, found only
    when a method name's candidate needs them."""

    __slots__ = ("text", "token_chars", "words", "lows", "_offsets")

    def __init__(self, text: str) -> None:
        self.text = text
        # The text with every character that can be in no token made a space (same length).
        # Its runs of letters, digits and "+" hold every token and nothing else: a token
        # never crosses another character, and where a run has a "+" the expression
        # decides which "++" ends a token ("REINFORCE++", not "a+b"). The same tokens as
        # _TOKEN_RE.findall(text) (tested).
        self.token_chars = text.encode("ascii", "replace").translate(_TOKEN_BYTES).decode("ascii")
        words = self.token_chars.split()
        if "+" in text:
            words = [tok for run in words for tok in (_TOKEN_RE.findall(run) if "+" in run else (run,))]
        self.words: list[str] = words
        # Tokens are ASCII letters, digits and "+": one lower() over the joined words is
        # the same as one per word, and much cheaper.
        self.lows: list[str] = "\n".join(words).lower().split("\n") if words else []
        self._offsets: tuple[list[int], list[int]] | None = None

    def offsets(self) -> tuple[list[int], list[int]]:
        """(start offsets, end offsets) of the tokens, made in C the first time they are
        asked for."""
        if self._offsets is None:
            if "+" in self.text:
                # [gap, token, gap, token, ..., gap]: the same tokens as findall.
                parts = _TOKEN_SPLIT_RE.split(self.text)
                bounds = list(itertools.accumulate(map(len, parts)))
                self._offsets = (bounds[0:-1:2], bounds[1::2])
            else:
                # Split on single spaces, each token is a non-empty piece (no "+": every
                # run is one token), and a piece starts one character after the end of
                # the one before it.
                pieces = self.token_chars.split(" ")
                piece_starts = itertools.accumulate(
                    map(operator.add, map(len, pieces), itertools.repeat(1)), initial=0
                )
                starts = list(itertools.compress(piece_starts, pieces))
                self._offsets = (starts, list(map(operator.add, starts, map(len, self.words))))
        return self._offsets

    def start(self, i: int) -> int:
        return self.offsets()[0][i]

    def end(self, i: int) -> int:
        return self.offsets()[1][i]

    def __len__(self) -> int:
        return len(self.words)


_TRAILING_NOTE_RE = re.compile(r"\s\([^()]{0,80}\)\s*$")


def _title_for_matching(title: str) -> str:
    """Drop a trailing note such as "(blog post, Liu et al.)": readers never write it."""
    return _TRAILING_NOTE_RE.sub("", title)


def normalise_title(title: str) -> str:
    return " ".join(t.lower() for t in _TOKEN_RE.findall(_title_for_matching(title)))


def _stem(tok: str) -> str:
    """Plural and singular meet ("anchors" / "anchor") for candidate lookup only."""
    if len(tok) > 4 and tok[-1] == "s" and tok[-2] != "s":
        return tok[:-1]
    return tok


def _content_word_before(lows: list[str], pos: int) -> int:
    """Position of the last token before `pos` that is not a stopword or a single character
    (-1: none), as the title scan counts words."""
    pos -= 1
    while pos >= 0 and (lows[pos] in TITLE_STOPWORDS or len(lows[pos]) < 2):
        pos -= 1
    return pos


def _tokens(text: str) -> _Toks:
    return _Toks(text)


def _split_method_name(name: str) -> list[str]:
    """'Clip-Cov / KL-Cov (covariance-based ...)' -> ['Clip-Cov', 'KL-Cov']."""
    base = name.split("(", 1)[0]
    return [p.strip() for p in base.split(" / ") if p.strip()]


def _identifier_like(alias: str) -> bool:
    """Config keys and flags (clip_ratio_high, use-opsm, seq-mask-tis) are not names."""
    if any(c in alias for c in "_=<>()[]{}") or alias.startswith("-"):
        return True
    if " " not in alias and alias == alias.lower():
        parts = alias.split("-")
        if len(parts) >= 3 or parts[0] in {"use", "enable", "disable"}:
            return True
    return False


def _squash(text: str) -> str:
    return "".join(_TOKEN_RE.findall(text))


@functools.cache
def english_words() -> frozenset[str]:
    """Base forms of English words (spaCy's lookup data), to keep acronyms that are also
    words (SPIN, PRIME, APEX) to their exact case. Empty when the data is not installed."""
    import gzip
    import importlib.resources
    import json

    try:
        ref = importlib.resources.files("spacy_lookups_data") / "data" / "en_lemma_index.json.gz"
        with ref.open("rb") as fh:
            data = json.loads(gzip.decompress(fh.read()))
    except (ModuleNotFoundError, FileNotFoundError, OSError, ValueError):
        return frozenset()
    # The words of every part of speech, filtered in C (a generator took ~3 ms more of start-up).
    return frozenset(filter(str.isalpha, itertools.chain.from_iterable(data.values())))


def _case_free_ok(word: str) -> bool:
    """May this acronym-like name match in any case? Only when lower-casing it cannot turn
    it into an ordinary word."""
    low = word.lower()
    words = english_words()
    return len(word) >= 4 and bool(words) and low not in words


def _alias_rules(alias: str) -> tuple[bool, float] | None:
    """(case_sensitive, score) for an alias, or None when it must never link as prose."""
    a = alias.strip()
    if not a or a.lower() in GENERIC_ALIASES or _identifier_like(a):
        return None
    toks = _TOKEN_RE.findall(a)
    if not toks:
        return None
    if " " in a and len(toks) > 1:
        return False, _SCORE_METHOD_EXACT  # a phrase: any case
    word = "".join(toks)
    upper = sum(c.isupper() for c in word)
    if upper >= 2 or any(c.isdigit() for c in word):
        # Acronym-like (GRPO, ReMax, M2PO, R3). Three letters or fewer (PPO, TIS, MIS, R3)
        # only in exact case; longer ones are distinctive enough in any case ("grpo loss").
        letters = sum(c.isalnum() for c in word)
        return not _case_free_ok(word), (
            _SCORE_METHOD_ACRONYM if letters <= 5 else _SCORE_METHOD_EXACT
        )
    if len(word) <= 5:
        return None  # short lower-case words are too ambiguous
    return False, _SCORE_METHOD_EXACT


def _code_value_alias(alias: str) -> bool:
    """A name that, alone in inline code, names the method: a config value (dr_grpo,
    geo_mean, clip_cov) or an acronym written as one (`cispo`, `sapo`)."""
    a = alias.strip()
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+){0,3}", a) or len(a) < 4:
        return False
    return a.lower() not in english_words()


class PaperIndex:
    """The catalog plus a paper pool, indexed once for linking."""

    def __init__(self) -> None:
        self.papers: list[Paper] = []
        self._by_key: dict[str, int] = {}
        self._by_arxiv: dict[str, int] = {}
        self._aliases: dict[str, list[_Alias]] = {}  # lower squashed form -> aliases
        self._alias_prefixes: set[str] = set()  # every prefix of every lower squashed form
        self._longest_alias = 0  # = the longest of those prefixes (read per text part)
        self._alias_seen: dict[tuple[str, bool], _Alias] = {}
        self._adding_catalog = False
        self._code_values: dict[str, tuple[int, str | None]] = {}
        self._config_keys: set[str] = set()
        self._max_alias_tokens = 1
        self._titles: list[_Title] = []
        self._title_need = bytearray()  # keys a thread must hold of each title: 1 or 2
        self._title_exact: dict[str, int] = {}
        self._postings: dict[str, list[int]] = {}
        self._solo_postings: dict[str, list[int]] = {}
        self._title_vocab: frozenset[str] = frozenset()
        self._key_words: dict[str, str] | None = None  # made from _title_vocab when used
        self._df: Counter[str] = Counter()  # titles per feature, for adding titles later
        # A loaded index keeps what only adding needs (key and title lookups, feature
        # counts) unread until something is added.
        self._pending_build: bytes | None = None
        self._title_filled = False  # set when a merge gives a known paper its first title

    # ---- building -------------------------------------------------------------------
    @classmethod
    def build(
        cls, papers: Iterable[dict[str, Any]] = (), *, include_catalog: bool = True
    ) -> PaperIndex:
        """Index the catalog's papers and method names plus `papers` (contract paper dicts)."""
        idx = cls()
        with collector_paused():  # ~1 s of 5 for 100,000 papers (see collector_paused)
            if include_catalog:
                idx._add_catalog()
            for p in papers:
                idx._add_paper(p)
            idx._finish()
        return idx

    def _add_catalog(self) -> None:
        from analyzers.catalog import load_catalog

        self._adding_catalog = True
        cat = load_catalog()
        for m in cat.methods.values():
            for opts in m.options.values():
                for o in opts:
                    self._config_keys.update(k.lstrip("-").split(".")[-1].lower() for k in o.keys)
        for m in cat.methods.values():
            first: int | None = None
            for ref in m.papers:
                i = self._add_paper(
                    {
                        "arxiv_id": ref.arxiv_id,
                        "title": ref.title,
                        "method": m.id,
                        "first_public": m.first_public,
                    }
                )
                if first is None:
                    first = i
            if first is None:
                continue
            names = _split_method_name(m.name) + list(m.aliases)
            for name in names:
                self._add_alias(name, first, m.id)
        # A paper known by the short name before its title's colon ("DAPO: An Open-Source
        # ...") is cited by that name; framework names (AReaL) are not citations.
        framework_names = {f.name.lower() for f in cat.frameworks.values()} | set(cat.frameworks)
        for i, paper in enumerate(list(self.papers)):
            short = paper.title.split(":", 1)[0].strip() if ":" in paper.title else ""
            if _SHORT_NAME_RE.fullmatch(short) and short.lower() not in framework_names:
                # The paper's name names none of its methods (DAPO is four): no method here,
                # so the one a thread names beside it decides (link_papers, `named`).
                self._add_alias(short, i, None)
        self._adding_catalog = False

    def _add_paper(self, p: dict[str, Any]) -> int:
        arxiv_id = (p.get("arxiv_id") or None) and str(p["arxiv_id"]).strip()
        if arxiv_id:
            # The form threads' ids are read in ("arXiv:2503.14476v2" -> 2503.14476,
            # "math.PR/0601001" -> math/0601001); anything else is kept as given.
            arxiv_id = normalise_arxiv_id(arxiv_id) or arxiv_id
        title = str(p.get("title") or "").strip()
        norm = normalise_title(title)
        key = arxiv_id or f"title:{norm}"
        i = self._by_key.get(key)
        if i is None and norm and norm in self._title_exact:
            same_title = self._title_exact[norm]
            # One title under two different arXiv ids is two papers (a resubmission, two
            # "Position paper"s); a title without an id completes the paper that has one.
            other_id = self.papers[same_title].arxiv_id
            if not (arxiv_id and other_id and other_id != arxiv_id):
                i = same_title
        if i is None:
            i = len(self.papers)
            self.papers.append(
                Paper(
                    key,
                    arxiv_id,
                    title,
                    p.get("method"),
                    p.get("first_public"),
                    list(p.get("aliases") or []),
                )
            )
            self._by_key[key] = i
            if arxiv_id:
                self._by_arxiv[arxiv_id] = i
            if norm:
                self._title_exact.setdefault(norm, i)
        else:
            paper = self.papers[i]
            if not paper.title and title:
                paper.title = title
                self._title_filled = True
            if paper.method is None and p.get("method"):
                paper.method = p.get("method")
            if arxiv_id and not paper.arxiv_id:
                paper.arxiv_id = arxiv_id
                self._by_arxiv[arxiv_id] = i
            paper.aliases.extend(a for a in p.get("aliases") or [] if a not in paper.aliases)
        for alias in p.get("aliases") or []:
            self._add_alias(str(alias), i, self.papers[i].method)
        return i

    def _add_alias(self, alias: str, paper: int, method: str | None) -> None:
        a = alias.strip()
        low = a.lower()
        if _code_value_alias(a) and low not in self._config_keys:
            self._code_values.setdefault(low, (paper, method))
        rules = _alias_rules(a)
        if rules is None:
            return
        case_sensitive, score = rules
        squashed = _squash(a)
        ntok = len(_TOKEN_RE.findall(a))
        self._register_alias(squashed, ntok, len(a.split()), case_sensitive, paper, method, score)
        if ntok == 1 and _ACRONYM_RE.fullmatch(squashed):
            # "GRPOs", "PPOs": the plural of an acronym, in exact case only ("grpos" and
            # "PPOS" are not read as it).
            self._register_alias(squashed + "s", 1, 1, True, paper, method, score)

    def _register_alias(
        self, squashed: str, ntok: int, nwords: int, case_sensitive: bool, paper: int,
        method: str | None, score: float,
    ) -> None:
        sig = (squashed if case_sensitive else squashed.lower(), case_sensitive)
        old = self._alias_seen.get(sig)
        if old is not None:
            # The catalog owns its names; among pool papers a shared name is ambiguous
            # (TPO is two different papers) and links only where the thread settles it.
            if not old.from_catalog and all(p != paper for p, _ in old.papers):
                old.papers.append((paper, method))
            return
        self._max_alias_tokens = max(self._max_alias_tokens, ntok + 1)
        al = _Alias(
            squashed,
            ntok,
            nwords,
            case_sensitive,
            [(paper, method)],
            score,
            self._adding_catalog,
        )
        self._alias_seen[sig] = al
        low_sq = squashed.lower()
        self._aliases.setdefault(low_sq, []).append(al)
        self._alias_prefixes.update(low_sq[:k] for k in range(1, len(low_sq) + 1))
        self._longest_alias = max(self._longest_alias, len(low_sq))

    def _finish(self) -> None:
        # Features of a title: its content words (stemmed) and adjacent content-word pairs.
        # The rarest few across the pool are its keys; a thread must contain two of them
        # before rapidfuzz looks at the title at all.
        per_title: list[tuple[int, tuple[str, ...], dict[str, tuple[int, ...]]]] = []
        df: Counter[str] = Counter()
        for i, p in enumerate(self.papers):
            toks = tuple(normalise_title(p.title).split())
            feats = _features(toks)
            per_title.append((i, toks, feats))
            df.update(feats.keys())
        self._df = df
        self._titles = []
        self._title_need = bytearray()
        self._postings = {}
        self._solo_postings = {}
        self._append_titles(per_title, max(50, len(self.papers) // 1000))

    def _append_titles(
        self, per_title: list[tuple[int, tuple[str, ...], dict[str, tuple[int, ...]]]],
        common: int,
    ) -> None:
        """Key these titles (paper, tokens, features) and add them after the others."""
        for i, toks, feats in per_title:
            t = _key_title(i, toks, feats, self._df, common)
            if t is None:
                continue
            ti = len(self._titles)
            self._titles.append(t)
            self._title_need.append(t.need)
            for k in t.keys:
                self._postings.setdefault(k, []).append(ti)
            for f, _ in t.solo:
                self._solo_postings.setdefault(f, []).append(ti)
        self._finish_vocab()

    def _finish_vocab(self) -> None:
        # Every word that is, or is part of, a key: a thread word outside it cannot form
        # one, so the scan skips its lookups (most words of a long body).
        self._title_vocab = frozenset(
            w for k in self._postings for w in k.split(" ") if w != "_"
        ) | frozenset(self._solo_postings)
        self._key_words = None

    def _title_key_words(self) -> dict[str, str]:
        """Lower-case token -> stem, for every token the title scan reads as a word of some
        key: not a stopword, two characters or more, its stem in `_title_vocab`. Made from
        the vocabulary once (a stem is reached only from itself and itself + "s")."""
        if self._key_words is None:
            self._key_words = {
                word: stem
                for stem in self._title_vocab
                for word in (stem, stem + "s")
                if word not in TITLE_STOPWORDS and len(word) >= 2 and _stem(word) == stem
            }
        return self._key_words

    # ---- adding to a built index ------------------------------------------------------
    def add_papers(self, papers: Iterable[dict[str, Any]]) -> None:
        """Add pool papers to a built index; the result equals building from scratch with
        them appended. Only titles sharing a feature with a new title are keyed again
        (their rarest features may have changed), not the whole pool."""
        with collector_paused():
            self._add_papers(papers)

    def _add_papers(self, papers: Iterable[dict[str, Any]]) -> None:
        self._materialise()
        old_n = len(self.papers)
        self._title_filled = False
        for p in papers:
            self._add_paper(p)
        if self._title_filled:
            self._finish()  # a merge gave a known paper a title: its place in order moved
            return
        df = self._df
        changed: set[str] = set()
        new_titles: list[tuple[int, tuple[str, ...], dict[str, tuple[int, ...]]]] = []
        for i in range(old_n, len(self.papers)):
            toks = tuple(normalise_title(self.papers[i].title).split())
            feats = _features(toks)
            new_titles.append((i, toks, feats))
            df.update(feats.keys())
            changed.update(feats)
        if not new_titles:
            return
        common = max(50, len(self.papers) // 1000)
        if common != max(50, old_n // 1000):
            self._finish()  # the threshold for a common feature moved: every title may change
            return
        # Titles holding a changed feature: every feature's words are content words of
        # the title, so the titles of those words are a superset.
        changed_words = {w for f in changed for w in f.split(" ") if w != "_"}
        affected = [
            ti
            for ti, text in enumerate(self._title_texts())
            if any(_stem(x) in changed_words for x in text.split(" "))
        ]
        for ti in affected:
            old = self._titles[ti]
            t = _key_title(old.paper, old.tokens, _features(old.tokens), df, common)
            assert t is not None  # its tokens and features did not change
            if t == old:
                continue
            self._titles[ti] = t
            self._title_need[ti] = t.need
            for k in old.keys:
                self._postings[k].remove(ti)
                if not self._postings[k]:
                    del self._postings[k]
            for f, _ in old.solo:
                self._solo_postings[f].remove(ti)
                if not self._solo_postings[f]:
                    del self._solo_postings[f]
            for k in t.keys:
                bisect.insort(self._postings.setdefault(k, []), ti)
            for f, _ in t.solo:
                bisect.insort(self._solo_postings.setdefault(f, []), ti)
        self._append_titles(new_titles, common)

    # ---- one read from disk -----------------------------------------------------------
    def dumps(self) -> bytes:
        """The index as bytes for `loads`: a header naming the format and `index_tag()`,
        then marshalled columns (lists of strings and numbers: one C-level read)."""
        self._materialise()
        return _dump_state(self._lookup_state(), self._build_state())

    @classmethod
    def loads(cls, data: bytes) -> PaperIndex:
        """The index saved by `dumps`. ValueError when the bytes are not one, or were made
        by another format or another version of the analyzers or catalog: never trusted
        blindly. Titles and papers become objects only when a thread touches them."""
        lookup, build = _load_state(data)
        idx = cls()
        (keys, arxiv_ids, titles, methods, firsts, paper_aliases, idx._by_arxiv, aliases,
         code_values, config_keys, idx._max_alias_tokens, t_paper, t_text, t_keys, t_places,
         t_solo, need, idx._postings, idx._solo_postings, vocab) = lookup
        idx.papers = _Lazy(  # type: ignore[assignment]
            len(keys),
            lambda i: Paper(keys[i], arxiv_ids[i], titles[i], methods[i], firsts[i],
                            list(paper_aliases[i])),
        )
        idx._titles = _Lazy(  # type: ignore[assignment]
            len(t_paper),
            lambda i: _title_from(t_paper[i], t_text[i], t_keys[i], t_places[i], t_solo[i]),
        )
        idx._titles.texts = t_text
        idx._title_need = bytearray(need)
        for sq, ntok, nwords, cs, owners, score, from_cat in aliases:
            al = _Alias(sq, ntok, nwords, cs, [tuple(o) for o in owners], score, from_cat)
            low_sq = sq.lower()
            idx._alias_seen[(sq if cs else low_sq, cs)] = al
            idx._aliases.setdefault(low_sq, []).append(al)
            idx._alias_prefixes.update(low_sq[:k] for k in range(1, len(low_sq) + 1))
            idx._longest_alias = max(idx._longest_alias, len(low_sq))
        idx._code_values = {k: tuple(v) for k, v in code_values.items()}  # type: ignore[misc]
        idx._config_keys = set(config_keys)
        idx._title_vocab = frozenset(vocab)
        idx._pending_build = build  # unread bytes until something is added
        return idx

    def _lookup_state(self) -> tuple[Any, ...]:
        ps, ts = self.papers, self._titles
        return (
            [p.key for p in ps], [p.arxiv_id for p in ps], [p.title for p in ps],
            [p.method for p in ps], [p.first_public for p in ps], [p.aliases for p in ps],
            self._by_arxiv,
            [(a.squashed, a.ntokens, a.nwords, a.case_sensitive, a.papers, a.score,
              a.from_catalog) for a in self._alias_seen.values()],
            self._code_values, sorted(self._config_keys), self._max_alias_tokens,
            [t.paper for t in ts], [t.text for t in ts], ["\t".join(t.keys) for t in ts],
            [_places(t) for t in ts], ["\t".join(f for f, _ in t.solo) for t in ts],
            bytes(self._title_need),
            self._postings, self._solo_postings,
            sorted(self._title_vocab),
        )

    def _build_state(self) -> tuple[Any, ...]:
        return (self._by_key, self._title_exact, dict(self._df))

    def _title_texts(self) -> Sequence[str]:
        titles = self._titles
        if isinstance(titles, _Lazy) and titles.texts is not None:
            return titles.texts  # saved titles are not made into objects to be read
        return [t.text for t in titles]

    def _materialise(self) -> None:
        """Turn a loaded index into a plain one, as `build` makes (before adding to it)."""
        if self._pending_build is None:
            return
        self._by_key, self._title_exact, df = _load_build_state(self._pending_build)
        self._df = Counter(df)
        self._pending_build = None

    def __eq__(self, other: object) -> bool:
        """Same papers, names and title keys: links every thread the same way."""
        if not isinstance(other, PaperIndex):
            return NotImplemented
        self._materialise()
        other._materialise()
        return (
            _canonical(self._lookup_state()) == _canonical(other._lookup_state())
            and _canonical(self._build_state()) == _canonical(other._build_state())
        )

    __hash__ = None  # type: ignore[assignment]

    # ---- lookups --------------------------------------------------------------------
    def paper_for_arxiv(self, arxiv_id: str) -> Paper | None:
        i = self._by_arxiv.get(arxiv_id)
        return self.papers[i] if i is not None else None

    def __len__(self) -> int:
        return len(self.papers)

    def _key_places(self, lows: list[str]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Where the thread's lower-case tokens hold title keys (key -> token positions where
        it starts) and solo words (word -> positions), each key in order of its first place.

        Keys are read from the content words: stopwords and single characters are passed
        over as if absent, the rest stemmed; a word outside every key separates its
        neighbours (no pair spans it). Only the key words are visited, picked out in C (a
        thread holds few); each looks back for the two content words before it, for its
        pairs ("a b") and pairs over one word ("a _ c")."""
        positions: dict[str, list[int]] = {}
        solo_pos: dict[str, list[int]] = {}
        key_words = self._title_key_words()
        if key_words.keys().isdisjoint(lows):
            return positions, solo_pos
        postings = self._postings
        solo_postings = self._solo_postings
        for pos in itertools.compress(range(len(lows)), map(key_words.__contains__, lows)):
            w = key_words[lows[pos]]
            if w in postings:
                positions.setdefault(w, []).append(pos)
            if w in solo_postings:
                solo_pos.setdefault(w, []).append(pos)
            prev_pos = _content_word_before(lows, pos)
            if prev_pos < 0:
                continue
            prev_w = key_words.get(lows[prev_pos])
            if prev_w is not None:
                pair = prev_w + " " + w
                if pair in postings:
                    positions.setdefault(pair, []).append(prev_pos)
            prev2_pos = _content_word_before(lows, prev_pos)
            prev2_w = key_words.get(lows[prev2_pos]) if prev2_pos >= 0 else None
            if prev2_w is not None:
                skip = prev2_w + " _ " + w
                if skip in postings:
                    positions.setdefault(skip, []).append(prev2_pos)
        return positions, solo_pos

    def match_titles(self, toks: _Toks) -> Iterator[tuple[int, float]]:
        """(paper index, rapidfuzz score 0-100) for titles written in the token stream."""
        if not len(toks) or not self._titles:
            return
        lows = toks.lows
        positions, solo_pos = self._key_places(lows)
        if not positions and not solo_pos:
            return
        postings = self._postings
        solo_postings = self._solo_postings
        hits: dict[int, int] = {}
        rare: dict[int, list[str]] = {}  # title -> its keys found that few titles share
        for f in positions:
            plist = postings[f]
            for ti in plist:
                hits[ti] = hits.get(ti, 0) + 1
            if len(plist) <= _SOLO_MAX_DF:
                for ti in plist:
                    rare.setdefault(ti, []).append(f)
        for f in solo_pos:
            for ti in solo_postings[f]:
                rare.setdefault(ti, []).append(f)
        found: list[tuple[float, int, int, int, int]] = []
        need = self._title_need
        for ti in hits.keys() | rare.keys():
            if ti not in rare and hits[ti] < need[ti]:
                continue  # one key of two: not a candidate (and its title is not even read)
            title = self._titles[ti]
            starts = _aligned_starts(title, positions) if hits.get(ti, 0) >= title.need else []
            # One rare key or rare word is enough to look: a typo may have removed the rest.
            for f in rare.get(ti, ()):
                if f in title.keys:
                    offset = title.offsets[title.keys.index(f)]
                    starts.extend(p - offset for p in positions[f][:4])
                else:
                    offset = dict(title.solo)[f]
                    starts.extend(p - offset for p in solo_pos[f][:4])
            if not starts:
                continue
            score, a, b = _verify_title(title, lows, starts)
            if score >= _TITLE_MIN_SCORE and (
                not _reads_as_sentence(title.tokens) or _written_as_title(title, toks, a, b)
            ):
                found.append((score, len(title.tokens), a, b, title.paper))
        # Near-identical titles match the same words; only the best one there counts.
        found.sort(key=lambda f: (-f[0], -f[1]))
        taken: list[tuple[int, int]] = []
        for score, _n, a, b, paper in found:
            if any(a < tb and ta < b for ta, tb in taken):
                continue
            taken.append((a, b))
            yield paper, score

    def match_aliases(
        self, text: str, toks: _Toks, *, code: bool = False, repeats: bool = True
    ) -> Iterator[tuple[_Alias, int]]:
        """(alias, start offset) for method names written in `text` (tokens of `text`).

        Names are compared with spaces, hyphens and dots squashed out ("Dr. GRPO", "Dr.GRPO",
        "Re-max"), longest first. With `code`, only exact-case acronyms of four or more
        characters count (a comment "# use SAPO loss" in a diff). Without `repeats`, a
        name of a single paper is reported at its first place only (the words it covers
        are still consumed, so what follows matches the same)."""
        prefixes = self._alias_prefixes
        aliases = self._aliases
        words, lows = toks.words, toks.lows
        slashes = "/" in text  # without one, no match can sit in a path or URL
        # What is decided at a token depends only on the characters from two before it
        # ("--gspo" is a flag) to `window` after it (longer spans cannot spell a name), except
        # where a "/" makes the whitespace-delimited word around a match matter. So 64 KiB of
        # one phrase over and over is decided once per distinct stretch; key: (characters
        # before it in the text, up to 2; window cut by the text end?; the characters).
        longest = self._longest_alias
        window = 2 * longest + 3 * self._max_alias_tokens + 8
        memo: dict[tuple[int, bool, str], tuple[_Alias, int] | None] = {}
        # Names of one paper already reported (without `repeats`); a name shared by several
        # papers is always reported, as which one it means may depend on what came before.
        reported: set[int] = set()
        tlen = len(text)
        n = len(toks)
        # Most words start no name: the ones that do are picked out in C, and only they are
        # visited (in order; those inside a name already matched are passed over).
        maybe_starts = itertools.compress(range(n), map(prefixes.__contains__, lows))
        offsets: tuple[list[int], list[int]] | None = None  # made at the first candidate
        after_match = 0  # the first token not consumed by a name reported before
        for i in maybe_starts:
            if i < after_match:
                continue
            w = lows[i]
            if w not in aliases and (i + 1 == n or w + lows[i + 1] not in prefixes):
                continue  # starts a name but is none, and the next word does not continue it
            if offsets is None:
                offsets = toks.offsets()
            starts, ends = offsets
            st = starts[i]
            key = (min(st, 2), st + window > tlen, text[max(0, st - 2) : st + window])
            if key in memo:
                hit = memo[key]
                if hit is not None:
                    if repeats or id(hit[0]) not in reported:
                        if len(hit[0].papers) == 1:
                            reported.add(id(hit[0]))
                        yield hit[0], st
                    after_match = i + hit[1]
                continue
            # Spans grow over tight gaps while they still spell the start of some name;
            # the longest span that is a whole name wins.
            spans = [words[i]]
            low = lows[i]
            j = i
            while len(spans) < self._max_alias_tokens and j + 1 < n:
                nxt = low + lows[j + 1]
                if nxt not in prefixes or not _tight(text, toks, j, 2):
                    break
                low = nxt
                spans.append(spans[-1] + words[j + 1])
                j += 1
            decided: tuple[_Alias, int] | None = None
            far = False  # the decision looked at the word around the match (paths, URLs)
            for L in range(len(spans), 0, -1):
                sq = spans[L - 1]
                cands = self._aliases.get(sq.lower())
                if not cands:
                    continue
                for al in cands:
                    if (al.case_sensitive or code) and sq != al.squashed:
                        continue
                    if code and (al.ntokens != 1 or len(sq) < 4 or sq.lower() == sq):
                        continue
                    if L > al.nwords and _spaced(text, toks, i, L) > al.nwords - 1:
                        continue
                    far = far or slashes
                    if not _clean_boundary(text, st, ends[i + L - 1], al.case_sensitive, slashes):
                        continue
                    decided = (al, L)
                    break
                if decided:
                    break
            if not far:
                memo[key] = decided
            if decided is not None:
                if repeats or id(decided[0]) not in reported:
                    if len(decided[0].papers) == 1:
                        reported.add(id(decided[0]))
                    yield decided[0], st
                after_match = i + decided[1]

    def match_code_values(self, text: str) -> Iterator[tuple[int, str | None, int]]:
        """(paper, method, offset) for inline code spans that hold just a method's value
        name (`dr_grpo`, `cispo`)."""
        for m in _CODE_SPAN_RE.finditer(text):
            val = m.group(1).strip().strip("'\"").lower()
            hit = self._code_values.get(val)
            if hit:
                yield hit[0], hit[1], m.start()


_ACRONYM_RE = re.compile(r"[A-Z][A-Z0-9]{2,11}")  # GRPO, PPO, M2PO: takes a plural "s"
_SHORT_NAME_RE = re.compile(r"[A-Z][A-Za-z0-9]{1,15}(?:-[A-Za-z0-9.]{1,8})?")
_CODE_SPAN_RE = re.compile(r"`([^`\n]{1,40})`")


def _features(toks: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Content words (stemmed), adjacent content-word pairs ("a b") and pairs that skip one
    content word ("a _ c", which survive a typo in the middle word) of a title -> the token
    indices they cover (the first is where the feature starts)."""
    feats: dict[str, tuple[int, ...]] = {}
    prev: tuple[str, int] | None = None
    prev2: tuple[str, int] | None = None
    for i, t in enumerate(toks):
        if t in TITLE_STOPWORDS or len(t) < 2:
            continue
        w = _stem(t)
        feats.setdefault(w, (i,))
        if prev is not None:
            feats.setdefault(prev[0] + " " + w, (prev[1], i))
        if prev2 is not None:
            feats.setdefault(prev2[0] + " _ " + w, (prev2[1], i))
        prev2 = prev
        prev = (w, i)
    return feats


def _key_title(
    paper: int,
    toks: tuple[str, ...],
    feats: dict[str, tuple[int, ...]],
    df: Counter[str],
    common: int,
) -> _Title | None:
    """A title with its keys: its rarest features in the pool (`df`), or None when it is too
    short to find by title (aliases cover names like "REINFORCE++")."""
    if len(toks) < 3 or not feats:
        return None
    ranked = sorted(feats, key=lambda f: df[f] * 256 - len(f))  # rarest, then longest
    # Rarest first; a key nested in another (a word inside a chosen pair) adds no
    # evidence, so it is skipped.
    keys_l: list[str] = []
    chosen: list[set[int]] = []
    for f in ranked:
        if df[f] > common and len(keys_l) >= 2:
            break  # a common feature would make every thread that uses it scan a long list
        cover = set(feats[f])
        if any(cover <= c or c <= cover for c in chosen):
            continue
        keys_l.append(f)
        chosen.append(cover)
        if len(keys_l) == _TITLE_KEYS:
            break
    keys = tuple(keys_l)
    solo = tuple(
        (f, feats[f][0])
        for f in ranked[:8]
        if " " not in f and len(f) >= 4 and df[f] <= _SOLO_MAX_DF and f not in keys
    )[:2]
    return _Title(
        paper,
        toks,
        " ".join(toks),
        keys,
        tuple(feats[k][0] for k in keys),
        tuple(feats[k] for k in keys),
        1 if len(keys) == 1 else 2,
        solo,
    )


def _aligned_starts(title: _Title, positions: dict[str, list[int]]) -> list[int]:
    """Where the title may start in the token stream: places where two of its keys, neither
    nested in the other, occur as the title would put them (within two tokens), i.e. the
    words are written as one title, not scattered over the thread. At most three places."""
    starts: list[tuple[int, int]] = []
    for ki, (k, offset) in enumerate(zip(title.keys, title.offsets, strict=True)):
        for pos in positions.get(k, ())[:16]:
            starts.append((pos - offset, ki))
    if title.need == 1:
        return sorted({st for st, _ in starts})[:3]
    if len(starts) < 2:
        return []
    starts.sort()
    covers = title.covers
    found: list[int] = []
    for i, (s1, k1) in enumerate(starts):
        for s2, k2 in starts[i + 1 : i + 6]:
            if s2 - s1 > 2:
                break
            if k1 != k2:
                c1, c2 = set(covers[k1]), set(covers[k2])
                if not (c1 <= c2 or c2 <= c1):
                    if not found or s1 - found[-1] > 2:
                        found.append(s1)
                    break
        if len(found) == 3:
            break
    return found


def _verify_title(title: _Title, lows: list[str], starts: list[int]) -> tuple[float, int, int]:
    """(best rapidfuzz score, start, end) of the title against the text around `starts`.

    One partial_ratio over a window two tokens wider on each side absorbs small shifts
    (a dropped or added word); a window shorter than the title (end of text) gets a plain
    ratio, so a fragment never scores as the whole title."""
    n = len(title.tokens)
    best = (0.0, 0, 0)
    for st in starts:
        a = max(0, st - 2)
        b = min(len(lows), st + n + 2)
        window = " ".join(lows[a:b])
        if len(window) >= len(title.text):
            score = fuzz.partial_ratio(title.text, window, score_cutoff=_TITLE_MIN_SCORE)
        else:
            score = fuzz.ratio(title.text, window, score_cutoff=_TITLE_MIN_SCORE)
        if score > best[0]:
            best = (score, max(0, st), max(0, st) + n)
            if score >= 100.0:
                break
    return best


# Words that make a short title read as a clause of ordinary prose ("Reward is enough",
# "Attention Is All You Need", "Let's Verify Step by Step").
_CLAUSE_WORDS = frozenset(
    """is are was were be am you your we our us i my me it its can do does did let not no
    what when how why all this that just only""".split()
)
_TITLE_OPENERS = frozenset("\"'\u201c\u2018\u00ab\u300a\u300c\u300e\u3008*_")


def _reads_as_sentence(tokens: tuple[str, ...]) -> bool:
    """A title of at most three distinct content words holding a clause word ("Reward is
    enough"), or of one content word in at most four tokens ("Learning to Reason"): written
    in lower case in a sentence, it is the sentence, not a citation."""
    content = {t for t in tokens if t not in TITLE_STOPWORDS and len(t) >= 2}
    if len(content) <= 1 and len(tokens) <= 4:
        return True
    return len(content) <= 3 and not _CLAUSE_WORDS.isdisjoint(tokens)


def _written_as_title(title: _Title, toks: _Toks, a: int, b: int) -> bool:
    """Is the title matched around tokens [a, b) set apart as a title: its content words
    capitalised, or an opening quote or emphasis right before it?"""
    lows, words = toks.lows, toks.words
    lo, hi = max(0, a - 2), min(len(lows), b + 2)
    first = next((j for j in range(lo, hi) if lows[j] == title.tokens[0]), None)
    if first is None:
        return False
    span = range(first, min(len(lows), first + len(title.tokens)))
    content = [words[j] for j in span if lows[j] not in TITLE_STOPWORDS and len(lows[j]) >= 2]
    if content and all(w[0].isupper() or w[0].isdigit() for w in content):
        return True
    st = toks.start(first)
    before = toks.text[max(0, st - 3) : st].rstrip()
    return bool(before) and before[-1] in _TITLE_OPENERS


def _spaced(text: str, toks: _Toks, i: int, length: int) -> int:
    """How many of the gaps between tokens i .. i+length-1 hold whitespace."""
    return sum(
        1
        for j in range(i, i + length - 1)
        if any(c.isspace() for c in text[toks.end(j) : toks.start(j + 1)])
    )


def _tight(text: str, toks: _Toks, i: int, length: int) -> bool:
    """Tokens of a multi-token name are separated only by spaces, hyphens or dots."""
    for j in range(i, i + length - 1):
        gap = text[toks.end(j) : toks.start(j + 1)]
        if len(gap) > 3 or any(c not in " -.\u00a0" for c in gap):
            return False
    return True


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _clean_boundary(text: str, start: int, end: int, strict: bool, slashes: bool = True) -> bool:
    """Not part of an identifier, a path, a URL or a file name (`slashes`: whether the
    text has a "/" at all; without one the path and URL checks are skipped)."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if before in _ID_CHARS or after in _ID_CHARS:
        return False
    if before in "\\.=$@#" or after in "\\=":
        return False
    if after == "." and end + 1 < len(text) and text[end + 1] in _ID_CHARS:
        return False  # grpo.py, GRPO.loss
    if strict and before == "-":
        return False  # DeepSeek-R3 is not the R3 method
    if before == "-" and start >= 2 and text[start - 2] == "-":
        return False  # --gspo is a command-line flag
    if (
        after == "-"
        and end + 1 < len(text)
        and (text[end + 1].isdigit() or text[end + 1].isupper())
    ):
        return False  # DAPO-17K-Math, DeepSeek-R1-Distill-Qwen: a dataset or model name
    if not slashes:
        return True
    # The whitespace-delimited word holding the match (at most 200 characters each way):
    # a URL or path is not prose. split/rsplit find its ends in C.
    left = text[max(0, start - 200) : start]
    if left and not left[-1].isspace():
        left = left.rsplit(None, 1)[-1]
    else:
        left = ""
    right = text[end : end + 200]
    if right and not right[0].isspace():
        right = right.split(None, 1)[0]
    else:
        right = ""
    word = (left + text[start:end] + right).strip("()[]<>*_`'\",;:!?.")
    if "://" in word:
        return False
    if "/" in word:
        # "PPO/GRPO" names two methods; "recipe/dapo" or "examples/grpo" is a path.
        parts = word.split("/")
        return len(parts) <= 3 and all(
            p and any(c.isupper() for c in p) and "." not in p for p in parts
        )
    return True


# ---- the index on disk ------------------------------------------------------------------
# Bumped when the saved layout or the way titles are keyed changes.
INDEX_FORMAT = 1
_MAGIC = b"rltracker-paper-index\n"


@functools.cache
def index_tag(catalog_dir: Path | None = None) -> str:
    """What a saved index depends on besides the pool: the format, the analyzers' version and
    the catalog's files (the index holds the catalog's papers and names). `catalog_dir`: the
    catalog's directory (None: the project's, analyzers.catalog.CATALOG_DIR)."""
    import hashlib

    from analyzers.catalog import CATALOG_DIR
    from analyzers.version import ANALYZER_VERSION

    digest = hashlib.sha256()
    for path in sorted((catalog_dir if catalog_dir is not None else CATALOG_DIR).glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{INDEX_FORMAT}:{ANALYZER_VERSION}:{digest.hexdigest()[:16]}"


def _dump_state(lookup: tuple[Any, ...], build: tuple[Any, ...]) -> bytes:
    import hashlib
    import marshal

    # Version 2: no back-references, twice as fast to write and as fast to read.
    body = marshal.dumps((lookup, marshal.dumps(build, 2)), 2)
    head = _MAGIC + index_tag().encode() + b"\n" + hashlib.sha256(body).hexdigest().encode()
    return head + b"\n" + body


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while an index is built or read: its hundreds of thousands of
    new objects (lists, tuples, dicts, no cycles among them) would set it off over and over,
    each time walking every object alive (it triples the time of reading a saved index)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _unmarshal(data: bytes) -> Any:
    """marshal.loads without the cyclic collector (marshalled data holds no cycles)."""
    import marshal

    with collector_paused():
        try:
            return marshal.loads(data)
        except (EOFError, ValueError, TypeError) as exc:
            raise ValueError(f"the saved index is damaged ({exc})") from None


def _load_state(data: bytes) -> tuple[tuple[Any, ...], bytes]:
    """(lookup state, the build state still marshalled)."""
    import hashlib

    if not data.startswith(_MAGIC):
        raise ValueError("not a saved paper index")
    # The body (tens of MB) is read through a view: slicing or splitting the bytes would
    # copy it, twice (~80 ms for 100,000 papers).
    tag_end = data.find(b"\n", len(_MAGIC))
    digest_end = data.find(b"\n", tag_end + 1) if tag_end >= 0 else -1
    if digest_end < 0:
        raise ValueError("the saved index is damaged")
    tag, digest = data[len(_MAGIC) : tag_end], data[tag_end + 1 : digest_end]
    body = memoryview(data)[digest_end + 1 :]
    if tag.decode(errors="replace") != index_tag():
        raise ValueError("saved by another version of the index or the analyzers")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        raise ValueError("the saved index is damaged")
    state = _unmarshal(body)
    if not (isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], bytes)):
        raise ValueError("the saved index is damaged")
    return state[0], state[1]


def _load_build_state(data: bytes) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    by_key, title_exact, df = _unmarshal(data)
    return by_key, title_exact, df


def _places(title: _Title) -> bytes | None:
    """The token indices of a title's keys and solo words as bytes: each key's covers,
    prefixed by their count, then each solo word's offset. None for a title too long for
    bytes (it is keyed again from its features when read)."""
    out = []
    for cover in title.covers:
        out.append(len(cover))
        out.extend(cover)
    out.extend(offset for _, offset in title.solo)
    return bytes(out) if max(out, default=0) < 256 else None


def _title_from(paper: int, text: str, keys: str, places: bytes | None, solo: str) -> _Title:
    """A saved title as `_key_title` made it."""
    toks = tuple(text.split(" "))
    key_t = tuple(keys.split("\t")) if keys else ()
    solo_t = tuple(solo.split("\t")) if solo else ()
    if places is None:
        feats = _features(toks)
        covers = tuple(feats[k] for k in key_t)
        solo_offsets = tuple(feats[f][0] for f in solo_t)
    else:
        covers_l: list[tuple[int, ...]] = []
        j = 0
        for _ in key_t:
            n = places[j]
            covers_l.append(tuple(places[j + 1 : j + 1 + n]))
            j += 1 + n
        covers = tuple(covers_l)
        solo_offsets = tuple(places[j:])
    return _Title(
        paper,
        toks,
        text,
        key_t,
        tuple(c[0] for c in covers),
        covers,
        1 if len(key_t) == 1 else 2,
        tuple(zip(solo_t, solo_offsets, strict=True)),
    )


class _Lazy(Sequence[Any]):
    """A list whose items are made on first use (a thread touches a handful of 100,000)."""

    __slots__ = ("_items", "_make", "texts")

    def __init__(self, n: int, make: Callable[[int], Any]) -> None:
        self._items: list[Any] = [None] * n
        self._make = make
        self.texts: list[str] | None = None  # titles: their texts, read without making them

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: Any) -> Any:
        item = self._items[i]
        if item is None:
            item = self._items[i] = self._make(i)
        return item

    def __setitem__(self, i: int, item: Any) -> None:
        self._items[i] = item

    def append(self, item: Any) -> None:
        self._items.append(item)
        if self.texts is not None:
            self.texts.append(item.text)


def _canonical(value: Any) -> Any:
    """Tuples and lists compare alike (marshal keeps one, building makes the other)."""
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    return value


@functools.cache
def catalog_index() -> PaperIndex:
    """The catalog alone, indexed once per process."""
    return PaperIndex.build(())


# ---- threads ----------------------------------------------------------------------------
def thread_texts(thread: dict[str, Any]) -> list[str]:
    """Title, opening post and human comments, in order."""
    texts = [str(thread.get("title") or ""), str(thread.get("body") or "")]
    for c in thread.get("comments") or []:
        # A bot's comment (the app's own among them) is told by its author, not by the app's
        # `<!-- rltracker:` marker, which a person's comment may hold too (security71).
        if isinstance(c, dict) and not by_bot(c):
            texts.append(str(c.get("body") or ""))
    return [t for t in texts if t]


def _code_only(raw: str) -> str:
    """The lines of `raw` that visible_text drops (code, template lines), for link search."""
    kept = strip_code(raw).split("\n")
    lines = raw.split("\n")
    return "\n".join(
        line if k == "" and line.strip() else "" for line, k in zip(lines, kept, strict=False)
    )


_HOW_RANK = {"arxiv_id": 0, "title": 1, "method_name": 2}
# "[GRPO] ..." tags and conventional-commit scopes "fix(grpo): ..." name the component.
_TITLE_TAGS_RE = re.compile(
    r"^\s{0,4}(?:(?:\[[^\]\n]{1,40}\]\s{0,4}){1,4}|[A-Za-z]{2,12}\([^)\n]{1,40}\)!?:\s{0,4})"
)


def link_papers(thread: dict[str, Any], pool: PaperIndex | None = None) -> list[dict[str, Any]]:
    """Contract `papers` entries for `thread`: every paper it cites or names, once each."""
    index = pool if pool is not None else catalog_index()
    found: dict[str, dict[str, Any]] = {}
    order: dict[str, tuple[int, int]] = {}  # key -> (text number, offset) of first evidence
    # key -> (place, method) of the first catalog method the thread names for that paper: it
    # wins over the paper's first method (an id cites DAPO; "dynamic sampling" says which).
    named: dict[str, tuple[tuple[int, int], str]] = {}

    def add(key: str, entry: dict[str, Any], where: tuple[int, int]) -> None:
        old = found.get(key)
        if old is None:
            found[key] = entry
            order[key] = where
            return
        if _HOW_RANK[entry["how"]] < _HOW_RANK[old["how"]] or (
            entry["how"] == old["how"] and entry["score"] > old["score"]
        ):
            if old.get("method") and not entry.get("method"):
                entry["method"] = old["method"]
            found[key] = entry
        elif not old.get("method") and entry.get("method"):
            old["method"] = entry["method"]
        order[key] = min(order[key], where)

    def add_method(pi: int, method: str | None, score: float, where: tuple[int, int]) -> None:
        """A paper named by one of its method names (an alias or a value in code)."""
        paper = index.papers[pi]
        entry = {"arxiv_id": paper.arxiv_id, "title": paper.title, "method": method or paper.method}
        add(paper.key, {**entry, "how": "method_name", "score": score}, where)
        if method and (paper.key not in named or where < named[paper.key][0]):
            named[paper.key] = (where, method)

    # Evidence already added: a later identical hit (same id, same name, same code value)
    # changes nothing, because its entry is the same and the earliest place wins; skipping
    # it keeps 64 KiB of one repeated name or id cheap. Places are offsets in the prose or
    # in the code of one text, so a code hit may still come before a prose hit there.
    done: set[object] = set()  # arXiv ids and code values from earlier texts or places
    alias_done: dict[int, tuple[int, bool]] = {}  # id(alias) -> (text, in code?) of first use

    for ti, raw in enumerate(thread_texts(thread)):
        if ti == 0:
            # "[GRPO] Add X": a leading tag names the component touched, not a citation.
            raw = _TITLE_TAGS_RE.sub("", raw)
        raw = strip_html_comments(raw.replace("\r\n", "\n"))
        prose = visible_text(raw, keep_task_items=True)
        code = _code_only(raw) if ("```" in raw or "~~~" in raw or "\n    " in raw) else ""
        # arXiv ids: any form in prose; in code blocks only links and arXiv: prefixes. The
        # first mention of an id in each text is the one that counts (its entry is the same
        # every time and the earliest place wins), so repeats are not even checked.
        mentions = find_arxiv_mentions(prose, unique=True, skip=done)
        if code:
            mentions += find_arxiv_mentions(code, unique=True, bare=False, skip=done)
        # Ids of earlier texts are skipped inside find_arxiv_mentions; an id both in the
        # prose and in the code of this text is seen twice (its earliest place is kept).
        for m in mentions:
            done.add(m.arxiv_id)
            paper = index.paper_for_arxiv(m.arxiv_id)
            entry = {
                "arxiv_id": m.arxiv_id,
                "title": paper.title if paper else "",
                "method": paper.method if paper else None,
                "how": "arxiv_id",
                "score": 1.0,
            }
            add(paper.key if paper else m.arxiv_id, entry, (ti, m.start))
        text = strip_inline_code(prose)
        toks = _tokens(text)
        for pi, score in index.match_titles(toks):
            paper = index.papers[pi]
            add(
                paper.key,
                {
                    "arxiv_id": paper.arxiv_id,
                    "title": paper.title,
                    "method": paper.method,
                    "how": "title",
                    "score": round(score / 100.0, 3),
                },
                (ti, 0),
            )
        hits = list(index.match_aliases(text, toks, repeats=False))
        n_prose_hits = len(hits)
        if code:
            hits += index.match_aliases(code, _tokens(code), code=True, repeats=False)
        for pi, method, start in index.match_code_values(prose):
            if (pi, method) in done:
                continue
            done.add((pi, method))
            add_method(pi, method, _SCORE_METHOD_ACRONYM, (ti, start))
        for k, (al, start) in enumerate(hits):
            place = (ti, k >= n_prose_hits)
            first = alias_done.get(id(al))
            if first is not None and (first[0] < ti or first == place):
                continue
            owners = al.papers
            if len(owners) > 1:
                # Resolved by a paper already found; `found` only grows, so once resolved
                # a later hit resolves the same way (or not at all).
                owners = [o for o in owners if index.papers[o[0]].key in found]
                if len(owners) != 1:
                    continue
            alias_done[id(al)] = place
            pi, method = owners[0]
            add_method(pi, method, al.score, (ti, start))
    for key, (_, method) in named.items():
        found[key]["method"] = method
    keys = sorted(found, key=lambda k: (_HOW_RANK[found[k]["how"]], order[k]))
    return [found[k] for k in keys]


__all__ = [
    "GENERIC_ALIASES",
    "INDEX_FORMAT",
    "Paper",
    "PaperIndex",
    "catalog_index",
    "index_tag",
    "link_papers",
    "normalise_title",
    "thread_texts",
]
