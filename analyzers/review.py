"""Review state of a thread and the concerns others raised in it (contract `review`).

    review_thread(thread) -> {"state": ..., "replied_from_other": bool, "concerns": [...]}

The state comes from the thread's own fields first (merged; open; closed_by; state_reason;
labels) and, where GitHub does not say who closed it or why, from what people wrote:

- merged: a merged pull request.
- open_no_reply / open_replied: open, and whether a human other than the proposer replied.
- closed_by_author: the proposer closed it (closed_by == author, or, with the closer unknown,
  the proposer says so in a comment or in the edited opening post).
- lapsed: closed by a bot, closed with a stale label, the closing comment says the thread
  went stale / saw no activity, or a "still working on this?" went unanswered by the proposer.
- redirected: closed by someone else who points elsewhere (another repository, a recipe or
  examples folder, trl.experimental, a plugin, a feature that already covers it).
- declined: closed by someone else with a stated reason against it.
- closed_other: closed otherwise (done, duplicate, answered, or no reason known); GitHub's
  state_reason `duplicate` (issues and discussions) decides it, unless the proposer closed it.

Bots never count, neither as replies nor as activity: `author_is_bot`, `[bot]` logins, known
automation logins, and text only automation writes (stale sweeps, CLA / CI reports, the app's
own marker). Missing optional keys mean "not known": closed_by missing is not "closed by
someone else", author missing is not "the commenter is someone else" (we cannot tell, so a
human comment counts as a reply but can never be the proposer closing).

Concerns are found with spaCy token matchers over lemmas, sentence by sentence, in what people
other than the proposer wrote, code blocks and quoted lines (`> `, usually the proposer's
words) removed; Chinese through substring tables and request+topic word pairs. Phrasings that
are as often plain technical advice ("X is slower than Y") are "weak": they count only in a
comment that also refuses, closes or points elsewhere. A reviewer's remark on a changed file
(review threads rendered as "path:line" + "**login**:" replies, or a comment with a `path`
key) that asks for a change is a docs/tests or design concern by the file it is on.
The vocabularies live in review_patterns.yaml beside this file.

What the rules read is evidence, not the verdict (`review_evidence`): fitted models
(analyzers/models/review_*.json, `make train`, training/review.py) weigh it. A closed thread no
structural fact decides (merged, open, closed_by, GitHub's duplicate close, a bot or stale
label closing it) gets its state from a multiclass model over the rules' answer, reasons and
signals, when grouped cross-validation found that model better than the rules alone
(`meta.use`). Concerns come
from one binary model over (thread, kind) rows: the kind's strong, weak and paired phrase
hits, request sentences naming its topic, remarks on changed files, the review's shape (and
the others' n-grams, when a model carries weights for them); thresholds per kind from
cross-validated probabilities. Everything is linear in the text: line scans, spaCy's
tokenizer, Matcher patterns with bounded optional gaps, and plain `str.find`; prose matched
per comment and per thread is capped (_SCAN_CHARS, _THREAD_SCAN_CHARS) so hostile input
costs a bounded, small amount.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import compress, repeat
from operator import is_not, mul, or_
from pathlib import Path
from typing import Any

import numpy
from spacy.attrs import IDX, IS_PUNCT, IS_SPACE, LEMMA, LENGTH, LOWER, ORTH

from analyzers import learned
from analyzers.catalog import CONTRACT_CONCERN_KEYS
from analyzers.nlp import (
    has_cjk,
    has_run,
    lemma_hashes,
    lemma_of_lower,
    load_patterns,
    lower_forms,
    lowered_finditer,
    lowered_matches_alike,
    one_token,
    sentence_starts_of,
)
from analyzers.text import strip_html_comments

STATES = (
    "merged",
    "open_no_reply",
    "open_replied",
    "declined",
    "redirected",
    "lapsed",
    "closed_by_author",
    "closed_other",
)
CONCERNS = CONTRACT_CONCERN_KEYS  # titled for people in analyzers/catalog/concerns.yaml

_PATTERNS_FILE = Path(__file__).with_name("review_patterns.yaml")
_MAX_CHARS = 65_536  # contract cap per body; anything longer is cut so work stays bounded
# Prose matched per person's comment, and per thread: concerns are stated in words people
# write, not in 60 KiB pastes, and the caps keep hostile input to a bounded cost.
_SCAN_CHARS = 16_384
_THREAD_SCAN_CHARS = 262_144

# --- configuration ---------------------------------------------------------------------------


# What a text holds whenever a label is found in it: one of its substrings, or for one of its
# patterns every required token as one of its lower-case forms (_label_needs).
_Needs = tuple[tuple[str, ...], tuple[tuple[tuple[str, ...], ...], ...]]


@dataclass(frozen=True)
class _Rules:
    bot_logins: frozenset[str]
    bot_suffixes: tuple[str, ...]
    automation_sub: tuple[str, ...]
    stale_labels_sub: tuple[str, ...]
    decline_labels_sub: tuple[str, ...]
    # label -> substrings (lower case); labels are signal names and "c:<concern>"
    sub: dict[str, tuple[str, ...]]
    veto_sub: dict[str, tuple[str, ...]]
    matchers: _KeyedMatchers  # labels as above plus "veto:<concern>"
    # label -> (words, words): one of each in the same Chinese sentence
    pairs: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]
    # concern kind -> (lemma hashes, lemma hashes): a request word and a topic word in the
    # same English sentence ("could you add a few details to the docstrings"). A feature only:
    # the fitted concern model decides what such a pair is worth.
    en_pairs: dict[str, list[tuple[frozenset[int], frozenset[int]]]]
    pair_words: frozenset[int]  # every word of en_pairs, to collect per sentence
    # A sentence that asks for something ("could you ...?", "please ...", "let's ...", "maybe
    # ...", an imperative first word) and names one of a kind's request_topics: a feature of
    # that kind ("req:<kind>"), whatever the request verb.
    topics: dict[str, frozenset[int]]
    ask_words: frozenset[int]  # a request anywhere in the sentence (as is a question mark)
    ask_imperatives: frozenset[int]  # a request as the sentence's first (or second) word
    asks_anywhere: frozenset[int]  # ask_words and the lower-case forms "?" and "？"
    # `sub` as two parallel tuples (label of each substring, the substrings), in its order,
    # and every veto substring: tried in C over a text
    sub_flat: tuple[tuple[str, ...], tuple[str, ...]]
    # positions in sub_flat's substrings of the ASCII ones (most are Chinese): all an ASCII
    # text can hold
    sub_ascii: tuple[int, ...]
    # the key words of `matchers` by attribute: hashes of lemmas, of lower-case forms
    lemma_keys: frozenset[int]
    lower_keys: frozenset[int]
    veto_flat: tuple[str, ...]
    # label -> what a text holds whenever _scan finds the label (_label_needs), filled as asked
    label_needs: dict[str, _Needs | None] = field(default_factory=dict)


# Words too common to file a pattern under (see _KeyedMatchers): function words and the
# generic verbs most requests are made of (as lemmas: "more" is "much", "better" is "good").
_COMMON = frozenset(
    "be not to in a an the you we i it this that have do for of with on can will would could "
    "should no any much as by at or and but if so what there than add use make get go work "
    "see find show need provide run keep put move one other our your my out good well new "
    "long let how many few same only still from right 3".split()
)


class _LazyMatcher:
    """spaCy's Matcher of one key word's patterns, built when it is first called. The review
    finds its matches from integer columns (_TokenPattern) and asks spaCy's Matcher only for
    the order of several labels found in one sentence: most of ~1,200 key words never need
    theirs, and building them all was ~60 ms of start-up. Built once, under a lock (the app
    analyses in threads); no pattern is added after the rules are built."""

    __slots__ = ("_vocab", "_patterns", "_matcher")

    def __init__(self, vocab: Any) -> None:
        self._vocab = vocab
        self._patterns: list[tuple[str, list[dict[str, Any]]]] = []
        self._matcher: Any = None

    def add(self, label: str, pattern: list[dict[str, Any]]) -> None:
        self._patterns.append((label, pattern))

    def __call__(self, doclike: Any) -> Any:
        matcher = self._matcher
        if matcher is None:
            with _LAZY_MATCHER_LOCK:
                matcher = self._matcher
                if matcher is None:
                    from spacy.matcher import Matcher

                    # Unvalidated: spaCy's schema check of each pattern is ~30 ms of start-up;
                    # the shipped patterns are checked with it by a test instead.
                    matcher = Matcher(self._vocab, validate=False)
                    for label, pattern in self._patterns:
                        matcher.add(label, [pattern])
                    self._matcher = matcher
        return matcher(doclike)


_LAZY_MATCHER_LOCK = threading.Lock()


class _KeyedMatchers:
    """spaCy Matchers grouped by one required word of each pattern.

    One Matcher holding every pattern tests every pattern at every token, and each call walks
    the whole text. Here each pattern is filed under its rarest required word, and only the
    sentences that contain that word are handed to that small matcher: the same matches for a
    fraction of the work (most sentences contain no key word at all)."""

    def __init__(self, vocab: Any) -> None:
        self._vocab = vocab
        # (attr name, hash of the word) -> matcher (built when first called)
        self.by_key: dict[tuple[str, int], _LazyMatcher] = {}
        # (attr name, hash of the word) -> per pattern of its matcher, the words each of the
        # pattern's required tokens may be: (True for a lemma / False for a lower-case form,
        # their hashes). A text lacking every word of one of them holds no match of it.
        self.needs: dict[tuple[str, int], set[tuple[tuple[bool, frozenset[int]], ...]]] = {}
        # label -> per pattern, the (attr name, words) of each of its required tokens: a
        # pattern matches only where each of them is one of its words.
        self.required_of: dict[str, list[list[tuple[str, list[str]]]]] = {}
        # (attr name, hash of the word) -> (label, pattern as _find tests it) of each pattern
        # of its matcher, in the matcher's order
        self.tests: dict[tuple[str, int], list[tuple[str, _TokenPattern]]] = {}

    def add(self, label: str, patterns: list[list[dict[str, Any]]]) -> None:
        for pattern in patterns:
            attr, keys = _key_of(pattern)
            self.required_of.setdefault(label, []).append(_required_words(pattern))
            tests = _TokenPattern.of(pattern, self._vocab.strings.add)
            for key in keys:
                hkey = (attr, self._vocab.strings.add(key))
                matcher = self.by_key.get(hkey)
                if matcher is None:
                    matcher = self.by_key[hkey] = _LazyMatcher(self._vocab)
                matcher.add(label, pattern)
                self.needs.setdefault(hkey, set()).add(self._required(pattern))
                self.tests.setdefault(hkey, []).append((label, tests))

    def find(self, key: tuple[str, int], columns: _Columns, lo: int, hi: int, every: bool) -> dict[str, list[int]]:
        """label -> where matches of the matcher of `key` start among tokens lo..hi-1 (the
        first only, unless `every`): the labels and starts spaCy's Matcher finds there, over
        the span of those tokens (each match inside it), read from integer columns."""
        found: dict[str, list[int]] = {}
        for label, pattern in self.tests[key]:
            if not every and label in found:
                continue
            starts = pattern.starts(columns, lo, hi, every)
            if starts:
                found.setdefault(label, []).extend(starts)
        return found

    def _required(self, pattern: list[dict[str, Any]]) -> tuple[tuple[bool, frozenset[int]], ...]:
        add = self._vocab.strings.add
        return tuple((attr == "LEMMA", frozenset(map(add, words))) for attr, words in _required_words(pattern))

    def may_match(self, key: tuple[str, int], lemmas: set[int], lowers: set[int]) -> bool:
        """Whether the matcher of `key` can find anything in a span of these lemmas and
        lower-case forms (False: every pattern lacks a required word there)."""
        for required in self.needs[key]:  # (loops, not generators: called per sentence)
            for lemma, words in required:
                if words.isdisjoint(lemmas if lemma else lowers):
                    break
            else:
                return True
        return False


@dataclass(frozen=True)
class _Columns:
    """A document's tokens as the review patterns test them: lemma and lower-case form
    hashes (the lemma fixes applied), punctuation and space flags."""

    lemmas: list[int]
    lowers: list[int]
    puncts: list[int]
    spaces: list[int]

    def holds(self, test: tuple[int, frozenset[int], bool], i: int) -> bool:
        what, words, _ = test
        if what == _T_LEMMA:
            return self.lemmas[i] in words
        if what == _T_LOWER:
            return self.lowers[i] in words
        if what == _T_WORD:
            return not self.puncts[i] and not self.spaces[i]
        if what == _T_PUNCT:
            return bool(self.puncts[i])
        return not self.spaces[i]  # _T_NOT_SPACE


# What a pattern token asks of a token: its lemma / lower-case form is one of the token's
# words; a word (neither punctuation nor space); punctuation; anything but a space.
_T_LEMMA, _T_LOWER, _T_WORD, _T_PUNCT, _T_NOT_SPACE = range(5)


@dataclass(frozen=True)
class _TokenPattern:
    """One Matcher pattern of the review's token language (_compile), matched over integer
    columns instead of by spaCy's Matcher, which makes a Python Token object per token it
    visits (twice) and calls a Python predicate per token for each {"IN": [...]}: most of a
    review scan's cost. Each token of the pattern is matched once (required) or at most once
    ("OP": "?"); a match is every alignment spaCy's Matcher finds with these quantifiers (its
    states explore both branches of each optional token), so the starts found are its
    starts (tested against it on generated and labelled texts)."""

    tests: tuple[tuple[int, frozenset[int], bool], ...]  # (what, words, optional) per token
    # The tests that can take a match's first token: up to the first required one.
    lead: tuple[tuple[int, frozenset[int], bool], ...]

    @classmethod
    def of(cls, pattern: list[dict[str, Any]], add: Callable[[str], int]) -> _TokenPattern:
        tests = tuple(_token_test(spec, add) for spec in pattern)
        first = next(i for i, test in enumerate(tests) if not test[2])  # _key_of: one exists
        return cls(tests, tests[: first + 1])

    def starts(self, columns: _Columns, lo: int, hi: int, every: bool) -> list[int]:
        """Where matches inside tokens lo..hi-1 start (the first one only, unless `every`)."""
        tests = self.tests
        m = len(tests)
        if len(self.lead) == 1 and self.lead[0][0] in (_T_LEMMA, _T_LOWER):
            what, words, _ = self.lead[0]
            column = columns.lemmas if what == _T_LEMMA else columns.lowers
            candidates: Iterable[int] = compress(range(lo, hi), map(words.__contains__, column[lo:hi]))
        else:
            candidates = [s for s in range(lo, hi) if any(columns.holds(t, s) for t in self.lead)]
        holds = columns.holds
        out: list[int] = []
        for start in candidates:
            # Depth first over (pattern token, text token); a required token always follows,
            # so reaching the end has taken the start token at least.
            stack = [(0, start)]
            while stack:
                j, i = stack.pop()
                if j == m:
                    out.append(start)
                    break
                test = tests[j]
                if test[2]:
                    stack.append((j + 1, i))
                if i < hi and holds(test, i):
                    stack.append((j + 1, i + 1))
            if out and not every:
                break
        return out


def _token_test(spec: dict[str, Any], add: Callable[[str], int]) -> tuple[int, frozenset[int], bool]:
    """(what, words, optional) of one token of a _compile pattern."""
    op = spec.get("OP")
    if op not in (None, "?"):
        raise ValueError(f"unsupported operator in a review pattern: {spec!r}")
    rest = {k: v for k, v in spec.items() if k != "OP"}
    optional = op == "?"
    if len(rest) == 1 and next(iter(rest)) in ("LEMMA", "LOWER"):
        attr, value = next(iter(rest.items()))
        if isinstance(value, dict):
            if set(value) != {"IN"}:
                raise ValueError(f"unsupported token in a review pattern: {spec!r}")
            value = value["IN"]
        words = frozenset(map(add, [value] if isinstance(value, str) else value))
        return (_T_LEMMA if attr == "LEMMA" else _T_LOWER), words, optional
    if rest == {"IS_PUNCT": False, "IS_SPACE": False}:
        return _T_WORD, frozenset(), optional
    if rest == {"IS_PUNCT": True}:
        return _T_PUNCT, frozenset(), optional
    if rest == {"IS_SPACE": False}:
        return _T_NOT_SPACE, frozenset(), optional
    raise ValueError(f"unsupported token in a review pattern: {spec!r}")


def _required_words(pattern: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(attr name, words) of each token of `pattern` that must be present (no OP)."""
    required = []
    for spec in pattern:
        for attr in ("LEMMA", "LOWER"):
            value = spec.get(attr)
            if value is not None and spec.get("OP") is None:
                required.append((attr, list(value["IN"]) if isinstance(value, dict) else [value]))
    return required


def _key_of(pattern: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The required token to file a pattern under: fewest common words among its
    alternatives, then fewest alternatives, then the longest word."""
    best: tuple[tuple[float, int, int], str, list[str]] | None = None
    for spec in pattern:
        if spec.get("OP") == "?":
            continue
        for attr in ("LEMMA", "LOWER"):
            value = spec.get(attr)
            if value is None:
                continue
            alts = list(value["IN"]) if isinstance(value, dict) else [value]
            common = sum(a in _COMMON for a in alts) / len(alts)
            score = (common, len(alts), -min(len(a) for a in alts))
            if best is None or score < best[0]:
                best = (score, attr, alts)
    if best is None:
        raise ValueError(f"pattern needs a required word: {pattern!r}")
    return best[1], best[2]


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    data = load_patterns(_PATTERNS_FILE)
    matchers = _KeyedMatchers(_nlp().vocab)
    sub: dict[str, tuple[str, ...]] = {}
    veto_sub: dict[str, tuple[str, ...]] = {}
    pairs: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    en_pairs: dict[str, list[tuple[frozenset[int], frozenset[int]]]] = {}
    topics: dict[str, frozenset[int]] = {}
    strings = _nlp().vocab.strings

    def lemma_hashes(words: list[str]) -> frozenset[int]:
        return (
            frozenset(strings.add(_lemma(w)) for w in words)
            | frozenset(strings.add(w.lower()) for w in words)
            | frozenset(strings.add(p) for w in words for p in _unknown_plural(w))
        )

    def add(label: str, spec: Mapping[str, Any]) -> None:
        patterns = [_compile(p) for p in spec.get("en") or []]
        if patterns:
            matchers.add(label, patterns)
        sub[label] = tuple(s.lower() for s in spec.get("sub") or [])
        veto_sub[label] = tuple(s.lower() for s in spec.get("veto") or [])
        weak = [_compile(p) for p in spec.get("weak_en") or []]
        if weak:
            matchers.add("w" + label, weak)
        for first, second in spec.get("zh_pairs") or []:
            pairs.setdefault(label, []).append(
                (tuple(x.lower() for x in first), tuple(x.lower() for x in second))
            )
        if spec.get("weak_sub"):
            sub["w" + label] = tuple(s.lower() for s in spec["weak_sub"])
            veto_sub["w" + label] = veto_sub[label]
        veto_en = [_compile(p) for p in spec.get("veto_en") or []]
        if veto_en:
            matchers.add("veto:" + label, veto_en)

    for name, spec in (data.get("signals") or {}).items():
        add(name, spec)
    for name, spec in (data.get("concerns") or {}).items():
        if name not in CONCERNS:
            raise ValueError(f"unknown concern kind in review_patterns.yaml: {name}")
        add("c:" + name, spec)
        for first, second in spec.get("en_pairs") or []:
            en_pairs.setdefault(name, []).append((lemma_hashes(first), lemma_hashes(second)))
        if spec.get("request_topics"):
            topics[name] = lemma_hashes(spec["request_topics"])
    bots = data.get("bots") or {}
    asks = data.get("requests") or {}
    ask_words = lemma_hashes(asks.get("anywhere") or [])
    return _Rules(
        bot_logins=frozenset(x.lower() for x in bots.get("logins") or []),
        bot_suffixes=tuple(x.lower() for x in bots.get("login_suffixes") or []),
        automation_sub=tuple(x.lower() for x in bots.get("automation_sub") or []),
        stale_labels_sub=tuple(x.lower() for x in data.get("stale_labels_sub") or []),
        decline_labels_sub=tuple(x.lower() for x in data.get("decline_labels_sub") or []),
        sub=sub,
        veto_sub=veto_sub,
        matchers=matchers,
        pairs=pairs,
        en_pairs=en_pairs,
        pair_words=frozenset(h for ps in en_pairs.values() for a, b in ps for h in a | b)
        | frozenset(h for words in topics.values() for h in words),
        topics=topics,
        ask_words=ask_words,
        asks_anywhere=ask_words | frozenset(map(strings.add, ("?", "\uff1f"))),
        ask_imperatives=lemma_hashes(asks.get("imperative") or []),
        sub_flat=(
            tuple(label for label, subs in sub.items() for _ in subs),
            tuple(s for subs in sub.values() for s in subs),
        ),
        sub_ascii=tuple(i for i, s in enumerate(s for subs in sub.values() for s in subs) if s.isascii()),
        # Each veto once (labels share them): only whether any is present is asked.
        veto_flat=tuple(dict.fromkeys(v for vs in veto_sub.values() for v in vs)),
        lemma_keys=frozenset(h for attr, h in matchers.by_key if attr == "LEMMA"),
        lower_keys=frozenset(h for attr, h in matchers.by_key if attr == "LOWER"),
    )


@lru_cache(maxsize=1)
def _nlp() -> Any:
    """The shared blank English pipeline (analyzers.nlp); a local equivalent if it is absent."""
    try:
        from analyzers.nlp import nlp

        return nlp()
    except ImportError:  # pragma: no cover - only before analyzers/nlp.py existed
        import spacy
        from spacy.lookups import load_lookups

        table = load_lookups("en", ["lemma_lookup"]).get_table("lemma_lookup")
        pipeline = spacy.blank("en")
        pipeline.add_pipe("sentencizer")

        def lower_lemmas(doc: Any) -> Any:
            for token in doc:
                token.lemma_ = table.get(token.lower_, token.lower_)
            return doc

        from spacy.language import Language

        Language.component("rlt_review_lower_lemmatizer", func=lower_lemmas)
        pipeline.add_pipe("rlt_review_lower_lemmatizer")
        return pipeline


# The lookup table maps a few function words to lemmas that collide with others ("as" -> "a",
# "'s" -> "have"); patterns and texts both get these instead.
_LEMMA_FIXES = {"as": "as", "'s": "be", "\u2019s": "be"}


@cache  # the patterns name ~800 distinct words ~2,400 times
def _lemma(word: str) -> str:
    """The lemma the pipeline gives `word` alone (itself when it is several tokens)."""
    low = word.lower()
    if low in _LEMMA_FIXES:
        return _LEMMA_FIXES[low]
    # The tokenizer alone says whether it is one token: the pipeline's other steps split
    # nothing, and its lemma is lemma_of_lower of the token's lower-case form, `low`.
    return lemma_of_lower(low) if one_token(low) else low


_CONSONANT_Y = re.compile(r"[^aeiou]y")


@cache
def _unknown_plural(word: str) -> tuple[str, ...]:
    """The plural (or third-person) form of a base word that the lemma table does not know,
    as a form to match besides the lemma: the lookup lemmatiser leaves "docstrings", "kwargs",
    "configs", "callbacks", "refactors" as they are, so a pattern word "docstring" would never
    meet its plural. Empty for short words and for words whose plural the table knows."""
    low = word.lower()
    if len(low) < 4 or not low.isalpha() or _lemma(low) != low:
        return ()
    if _CONSONANT_Y.search(low[-2:]):
        plural = low[:-1] + "ies"
    elif low.endswith(("s", "x", "z", "ch", "sh")):
        plural = low + "es"
    else:
        plural = low + "s"
    return (plural,) if _lemma(plural) == plural else ()


def _compile(pattern: str) -> list[dict[str, Any]]:
    """One line of the YAML token language (see the header of review_patterns.yaml)."""
    tokens: list[dict[str, Any]] = []
    for raw in pattern.split():
        if raw in ("_", "_?"):
            # Gaps skip words only: never punctuation, never a line break.
            spec: dict[str, Any] = {"IS_PUNCT": False, "IS_SPACE": False}
            if raw == "_?":
                spec["OP"] = "?"
            tokens.append(spec)
            continue
        if raw in ("#punct", "#punct?"):
            tokens.append(
                {"IS_PUNCT": True, "OP": "?"} if raw.endswith("?") else {"IS_PUNCT": True}
            )
            continue
        if raw == "#q":
            tokens.append({"LOWER": "?"})
            continue
        if raw == "~?":
            tokens.append({"IS_SPACE": False, "OP": "?"})
            continue
        if raw == "#end":
            tokens.append({"IS_SENT_END": True})
            continue
        optional = len(raw) > 1 and raw.endswith("?")
        word = raw[:-1] if optional else raw
        if word.startswith("=") and len(word) > 1:
            alts = sorted({w.lower() for w in word[1:].split("|") if w})
            spec = {"LOWER": alts[0]} if len(alts) == 1 else {"LOWER": {"IN": alts}}
        else:
            alts = sorted({form for w in word.split("|") if w for form in (_lemma(w), *_unknown_plural(w))})
            spec = {"LEMMA": alts[0]} if len(alts) == 1 else {"LEMMA": {"IN": alts}}
        if optional:
            spec["OP"] = "?"
        tokens.append(spec)
    if not tokens:
        raise ValueError(f"empty pattern in review_patterns.yaml: {pattern!r}")
    return tokens


# --- who wrote what ----------------------------------------------------------------------------

# A review comment rendered as text starts with the file it is on ("path/to/file.py:123").
# A directory part or a line number is required, so "v0.2.1" or "config.yaml" alone are not.
_PATH_LINE = re.compile(
    r"(?:[\w.\-]{1,100}/){1,20}[\w.\-]{1,100}\.[A-Za-z]\w{0,11}(?::\d{1,7})?"
    r"|[\w.\-]{1,100}\.[A-Za-z]\w{0,11}:\d{1,7}"
)
# Inside such a rendering, each reply is introduced by "**login**:" or "**login** (author):".
_SPEAKER = re.compile(r"\*\*([A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?)\*\*( \(author\))?:")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})\s*([\w-]*)")
_URL = re.compile(r"https?://\S{1,2000}")
# (The "-" first, the letter before it looked behind for: re skips ahead to each "-" in C,
# where a pattern led by the look-behind is tried at every position. The same matches.)
_INWORD_HYPHEN = re.compile(r"-(?<=[A-Za-z]-)(?=[A-Za-z])")
_CJK_SENT = re.compile(r"[。！？；!?;\n]")


@dataclass
class _Segment:
    """One person's words: a comment, or one reply inside a rendered review thread."""

    login: str | None
    is_author: bool
    is_bot: bool
    prose: str  # code blocks, quotes and HTML comments removed
    raw: str
    path: str | None = None  # file a review comment is on
    suggestion: bool = False  # carries a ```suggestion block
    index: int = 0  # position in the thread, in time order
    review: bool = False  # a submitted pull-request review (an approval may have no text)


def _norm_login(login: Any) -> str | None:
    if not isinstance(login, str) or not login.strip():
        return None
    return login.strip().lower()


def _is_bot_login(login: str | None, rules: _Rules) -> bool:
    if login is None:
        return False
    if login in rules.bot_logins:
        return True
    return any(login.endswith(s) for s in rules.bot_suffixes)


def _looks_automated(text: str, rules: _Rules) -> bool:
    low = text[:4000].lower()  # signatures sit at the top; keeps the check cheap
    return any(s in low for s in rules.automation_sub)


def _prose(text: str) -> tuple[str, bool]:
    """Text people wrote: fenced blocks, quoted lines and HTML comments dropped (line scan,
    linear). Also reports whether a ```suggestion block was present."""
    if "<!--" in text:
        text = strip_html_comments(text)
    if ">" not in text and "```" not in text and "~~~" not in text and _NO_PARENT not in text:
        # No line can be a quote, a fence or the placeholder (most comments): every line is
        # kept, the text as it stands, without a Python step per line.
        return text, False
    out: list[str] = []
    fence: str | None = None
    suggestion = False
    for line in text.split("\n"):
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            if m.group(2).lower() == "suggestion":
                suggestion = True
            continue
        if line.lstrip().startswith(">"):
            continue  # quoted: usually the proposer's words, answered below
        if line.strip() == _NO_PARENT:
            continue
        out.append(line)
    return "\n".join(out), suggestion


_NO_PARENT = "[parent comment not available]"


def _segments(thread: Mapping[str, Any], rules: _Rules) -> list[_Segment]:
    author = _norm_login(thread.get("author"))
    segs: list[_Segment] = []
    for index, comment in enumerate(thread.get("comments") or []):
        if not isinstance(comment, Mapping):
            continue
        body = comment.get("body")
        body = body[:_MAX_CHARS] if isinstance(body, str) else ""
        login = _norm_login(comment.get("author"))
        flagged = comment.get("author_is_bot") is True
        path = comment.get("path") if isinstance(comment.get("path"), str) else None
        first, _, rest = body.partition("\n")
        if path is None and len(first) <= 400 and _PATH_LINE.fullmatch(first.strip()):
            path = first.strip()
            body = rest
        parts = _split_speakers(body) if path is not None or " (author):" in body else []
        if not parts:
            parts = [(None, False, body)]
        for who, marked_author, text in parts:
            seg_login = _norm_login(who) if who is not None else login
            is_author = marked_author or (author is not None and seg_login == author)
            bot = (
                (flagged and (who is None or seg_login == login))
                or _is_bot_login(seg_login, rules)
                or _looks_automated(text, rules)
            )
            prose, suggestion = _prose(text)
            review = comment.get("kind") == "review" and comment.get("review_state") != "pending"
            segs.append(
                _Segment(seg_login, is_author, bot, prose, text, path, suggestion, index, review)
            )
    return segs


def _split_speakers(body: str) -> list[tuple[str | None, bool, str]]:
    """Split a rendered review thread on "**login**:" / "**login** (author):" lines."""
    parts: list[tuple[str | None, bool, str]] = []
    current: tuple[str | None, bool] = (None, False)
    buf: list[str] = []
    for line in body.split("\n"):
        m = _SPEAKER.fullmatch(line.strip())
        if m:
            if any(x.strip() for x in buf):
                parts.append((current[0], current[1], "\n".join(buf)))
            current = (m.group(1), bool(m.group(2)))
            buf = []
        else:
            buf.append(line)
    if any(x.strip() for x in buf):
        parts.append((current[0], current[1], "\n".join(buf)))
    return parts


# --- matching ----------------------------------------------------------------------------------


@dataclass
class _Found:
    """Signals and concerns found in one segment."""

    signals: set[str] = field(default_factory=set)
    concerns: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)  # concerns in words that need context
    weak_seen: set[str] = field(default_factory=set)  # every weak hit, kept as a feature
    paired: set[str] = field(default_factory=set)  # kinds with a request+topic word pair
    requested: set[str] = field(default_factory=set)  # kinds named in a request sentence
    code_requests: int = 0  # request sentences that name a code identifier

    def settle(self) -> _Found:
        """Weak concerns count in a comment that also refuses, closes or points elsewhere (or
        that states the same concern plainly, where they add nothing)."""
        self.weak_seen = set(self.weak)
        if self.weak and self.signals & _WEAK_CONTEXT:
            self.concerns |= self.weak
        if "wredirect" in self.signals and self.signals & _WEAK_CONTEXT:
            self.signals.add("redirect")
            self.concerns.add("placement")
        self.weak = set()
        return self


_WEAK_CONTEXT = frozenset({"decline_strong", "closing", "redirect"})


def _clean(prose: str) -> str:
    """URLs replaced, backticks dropped, in-word hyphens split ("out-of-scope" -> "out of
    scope"), so patterns see words. Runs without spaces longer than any word are cut into
    pieces: spaCy's tokenizer peels prefixes and suffixes off a run one at a time, which is
    quadratic in the run's length ("[[[[((((..." over 64 KiB would take minutes)."""
    # Each substitution only where its pattern can match at all (a URL holds "://", an
    # in-word hyphen a "-").
    if "://" in prose:
        prose = _URL.sub(" URL ", prose)
    prose = prose.replace("`", "").replace("/", " / ")
    if "-" in prose:
        prose = _INWORD_HYPHEN.sub(" ", prose)
    return _LONG_RUN.sub(_cut_run, prose) if has_run(prose, 64) else prose


# A run of 64 or more characters without a space, matched whole from where it starts (the
# text's start or after a space: the same matches as without the look-behind, since a greedy
# run can only match from its first character). The look-behind makes the scan linear: inside
# a word it fails at once, where the run alone would be tried from every position of every
# word. Most comments hold no run (nlp.has_run) and are not scanned at all.
_LONG_RUN = re.compile(r"(?<!\S)\S{64,}")
# A name from the code: snake_case, CamelCase with an inner capital, or a call "name()".
_IDENTIFIER = re.compile(r"\b[A-Za-z]\w{0,60}_\w|\b[A-Za-z]{1,40}[a-z][A-Z]|\b\w{1,60}\(\)")


def _cut_run(m: re.Match[str]) -> str:
    run = m.group(0)
    return " ".join(run[i : i + 32] for i in range(0, len(run), 32))


@lru_cache(maxsize=1)
def _lemma_fix_hashes(vocab: Any) -> dict[int, str]:
    return {vocab.strings.add(k): v for k, v in _LEMMA_FIXES.items()}


def _substrings_in(low: str, substrings: tuple[str, ...], ascii_at: tuple[int, ...]) -> list[bool]:
    """[s in low for s in substrings]. Most of the table is Chinese: an ASCII text is only
    searched for the ASCII ones, at `ascii_at` (the others cannot be in it)."""
    if not low.isascii():
        return list(map(low.__contains__, substrings))
    found = [False] * len(substrings)
    for i in ascii_at:
        if substrings[i] in low:
            found[i] = True
    return found


def _scan(prose: str, rules: _Rules) -> _Found:
    """Signals and concerns of one person's prose. Units are sentences, also cut at line
    breaks (bullet lists carry no full stops)."""
    found = _Found()
    text = _clean(prose[:_SCAN_CHARS]).strip()
    if not text:
        return found
    # The tokens alone: sentence starts and lemmas are computed here from the token arrays
    # (what the pipeline's sentencizer and lemmatizer would set), and the patterns are
    # matched over those arrays (_TokenPattern), so no Token object is made.
    doc = _nlp().tokenizer(text)
    by_key = rules.matchers.by_key
    fixes = _lemma_fix_hashes(doc.vocab)
    # Integer arrays, no Token objects: unit boundaries and, per unit, the key words it holds;
    # the Python loops visit only the tokens that matter (key words, pair words, line breaks).
    strings = doc.vocab.strings
    lowers, orths, puncts, spaces, offsets, lengths = doc.to_array(
        [LOWER, ORTH, IS_PUNCT, IS_SPACE, IDX, LENGTH]
    ).T.tolist()
    n = len(lowers)
    raw_lemmas = lemma_hashes(lowers)  # requests are read from spaCy's own lemmas
    lemmas = list(raw_lemmas)
    for i in compress(range(n), map(fixes.__contains__, lowers)):
        lemmas[i] = strings[fixes[lowers[i]]]
    columns = _Columns(lemmas, lowers, puncts, spaces)
    annotated = False  # the doc's LEMMA column set from `lemmas` (for spaCy's Matcher)

    def lemmatized_doc() -> Any:
        nonlocal annotated
        if not annotated:
            doc.from_array([LEMMA], numpy.asarray(lemmas, dtype="uint64").reshape(-1, 1))
            annotated = True
        return doc

    # A unit starts at a sentence start and after a whitespace token holding a line break.
    cuts = set(sentence_starts_of(orths, puncts))
    cuts.update(i + 1 for i in compress(range(n), spaces) if "\n" in strings[lowers[i]])
    cuts.discard(0)
    bounds: list[int] = [0, *sorted(c for c in cuts if c < n)]
    keys_of_unit: list[set[tuple[str, int]]] = [set() for _ in bounds]
    words_of_unit: list[set[int]] = [set() for _ in bounds]
    lemma_keys, lower_keys = rules.lemma_keys, rules.lower_keys
    pair_words = rules.pair_words
    # In token order, lemma before lower case: the sets fill in the order they always did.
    wanted = map(or_, map(lemma_keys.__contains__, lemmas), map(lower_keys.__contains__, lowers))
    for i in compress(range(n), wanted):
        keys = keys_of_unit[bisect_right(bounds, i) - 1]
        if lemmas[i] in lemma_keys:
            keys.add(("LEMMA", lemmas[i]))
        if lowers[i] in lower_keys:
            keys.add(("LOWER", lowers[i]))
    paired = map(or_, map(pair_words.__contains__, lemmas), map(pair_words.__contains__, lowers))
    for i in compress(range(n), paired):
        words = words_of_unit[bisect_right(bounds, i) - 1]
        if lemmas[i] in pair_words:
            words.add(lemmas[i])
        if lowers[i] in pair_words:
            words.add(lowers[i])
    bounds.append(n)

    def unit_text(u: int) -> str:
        # doc[bounds[u] : bounds[u + 1]].text, from the token offsets (no Span made per unit)
        last = bounds[u + 1] - 1
        return text[offsets[bounds[u]] : offsets[last] + lengths[last]]

    # A unit asks for something: a request word or a question mark anywhere in it, or a
    # request verb as its first or second word (the lemma as spaCy gave it, before the fixes).
    ask_words, imperatives, asks_anywhere = rules.ask_words, rules.ask_imperatives, rules.asks_anywhere
    asks_of_unit = [False] * len(words_of_unit)
    asking = map(or_, map(ask_words.__contains__, raw_lemmas), map(asks_anywhere.__contains__, lowers))
    for i in compress(range(n), asking):
        asks_of_unit[bisect_right(bounds, i) - 1] = True
    for u in range(len(words_of_unit)):
        first_two = raw_lemmas[bounds[u] : min(bounds[u] + 2, bounds[u + 1])]
        if not asks_of_unit[u] and any(h in imperatives for h in first_two):
            asks_of_unit[u] = True
    for u, (words, asks) in enumerate(zip(words_of_unit, asks_of_unit, strict=True)):
        if asks and words:
            found.requested.update(k for k, topic in rules.topics.items() if words & topic)
        if asks and _IDENTIFIER.search(unit_text(u)):
            found.code_requests += 1
        if len(words) < 2:
            continue
        for kind, pairs in rules.en_pairs.items():
            if any(words & first and words & second for first, second in pairs):
                found.paired.add(kind)
    strings = doc.vocab.strings
    low_text = text.lower()
    # Every substring of every label tried in C; the labels of those found, in table order.
    present: dict[str, tuple[str, ...]] = {}
    sub_labels, sub_strings = rules.sub_flat
    found_subs = _substrings_in(low_text, sub_strings, rules.sub_ascii)
    if any(found_subs):
        for label, sub in zip(compress(sub_labels, found_subs), compress(sub_strings, found_subs), strict=True):
            present[label] = present.get(label, ()) + (sub,)
    vetoes = any(map(low_text.__contains__, rules.veto_flat))
    cjk = bool(rules.pairs) and has_cjk(text)
    # A key word found in a few sentences: match those sentences only. Found in many (long
    # comments): one pass over the whole text, each match filed under its sentence.
    units_with: dict[tuple[str, int], list[int]] = {}
    for u, keys in enumerate(keys_of_unit):
        for key in keys:
            units_with.setdefault(key, []).append(u)
    labels_of: list[set[str]] = [set() for _ in keys_of_unit]
    # Per unit its lemmas and lower-case forms, to skip the matchers that cannot match there.
    words_in: dict[int, tuple[set[int], set[int]]] = {}
    # Labels are added to a unit's set in the order spaCy's Matcher lists them; where one
    # call finds several labels for a unit, spaCy's Matcher itself is asked for that order
    # (a set's iteration order can depend on the order of insertion).
    for key, units in units_with.items():
        if len(units) <= 4:
            for u in units:
                if u not in words_in:
                    words_in[u] = (set(lemmas[bounds[u] : bounds[u + 1]]), set(lowers[bounds[u] : bounds[u + 1]]))
                if not rules.matchers.may_match(key, *words_in[u]):
                    continue
                labels = rules.matchers.find(key, columns, bounds[u], bounds[u + 1], False)
                if len(labels) > 1:
                    span = lemmatized_doc()[bounds[u] : bounds[u + 1]]
                    labels_of[u].update(strings[mid] for mid, _, _ in by_key[key](span))
                else:
                    labels_of[u].update(labels)
        else:
            if -1 not in words_in:  # the whole text's
                words_in[-1] = (set(lemmas), set(lowers))
            if not rules.matchers.may_match(key, *words_in[-1]):
                continue
            wanted = set(units)
            in_unit: dict[int, set[str]] = {}
            for label, starts in rules.matchers.find(key, columns, 0, n, True).items():
                for start in starts:
                    u = bisect_right(bounds, start) - 1
                    if u in wanted:
                        in_unit.setdefault(u, set()).add(label)
            if any(len(labels) > 1 for labels in in_unit.values()):
                for mid, start, _end in by_key[key](lemmatized_doc()):
                    u = bisect_right(bounds, start) - 1
                    if u in wanted:
                        labels_of[u].add(strings[mid])
            else:
                for u, labels in in_unit.items():
                    labels_of[u].update(labels)
    for u in range(len(keys_of_unit)):
        labels = labels_of[u]
        if not labels and not present and not cjk:
            continue
        low = unit_text(u).lower() if present or vetoes or cjk else ""
        if present:
            pieces = _CJK_SENT.split(low) if has_cjk(low) else [low]
            for label, subs in present.items():
                if any(s in piece for piece in pieces for s in subs):
                    labels.add(label)
        if rules.pairs and has_cjk(low):
            for piece in _CJK_SENT.split(low):
                for label, pairs in rules.pairs.items():
                    if any(
                        any(a in piece for a in first) and any(b in piece for b in second)
                        for first, second in pairs
                    ):
                        labels.add(label)
        if labels:
            if "decline_strong" in labels and _QUESTION.match(unit_text(u)):
                labels.discard("decline_strong")  # a refusal asked about, not stated
            _apply_sentence(labels, low if vetoes else "", rules, found)
    return found.settle()


# A sentence that asks ("why would this not be integrated ...?", "is there a reason we would not
# ...?"): a refusal inside it is a question, not a stated reason against. Only the first words
# and the last character are read (the unit is one sentence).
_QUESTION = re.compile(
    r"\W{0,8}(?:why|is|are|was|were|would|could|can|do|does|did|should|will|shall|have|has|how|what)\b"
    r"[^\n]{0,4000}\?[\s)\]]{0,8}$",
    re.I,
)


def _apply_sentence(labels: set[str], low: str, rules: _Rules, found: _Found) -> None:
    kept = set()
    for label in labels:
        if label.startswith("veto:"):
            continue
        if "veto:" + label in labels or any(v in low for v in rules.veto_sub.get(label, ())):
            continue
        kept.add(label)
    concerns = {x[2:] for x in kept if x.startswith("c:")}
    if "redirect" in kept:
        concerns.add("placement")  # a named destination is a placement concern
    if len(concerns) > 1:
        concerns.discard("other")  # "other" is the fallback for sentences nothing else explains
    found.concerns |= concerns
    found.weak |= {x[3:] for x in kept if x.startswith("wc:")}
    found.signals |= {x for x in kept if not x.startswith(("c:", "wc:"))}


# --- the decision ------------------------------------------------------------------------------


@dataclass
class ReviewExplanation:
    state: str
    replied_from_other: bool
    concerns: list[str]
    reasons: list[str]  # short machine-readable notes on how the state was reached

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "replied_from_other": self.replied_from_other,
            "concerns": list(self.concerns),
        }


def review_thread(thread: Mapping[str, Any]) -> dict[str, Any]:
    """Contract `review` for one thread record."""
    return explain_review(thread).as_dict()


# States a structural fact decides (GitHub says it, or a bot closed it): no model overrides.
_EXACT_REASONS = frozenset(
    {"merged", "closed_by==author", "state_reason:duplicate", "closed_by_bot", "stale_label"}
)
# Other-human text handed to the n-gram features, per thread: enough for any review.
_TEXT_CHARS = 2_000


@dataclass
class ReviewEvidence:
    """What the rules read in a thread: the state the rules reach, whether a structural fact
    decided it, and the named features and texts the fitted models weigh (analyzers.learned
    turns them into vectors; training/review.py fits on them)."""

    rule_state: str
    exact: bool
    replied: bool
    rule_concerns: set[str]
    reasons: list[str]
    concern_features: dict[str, float]
    state_features: dict[str, float]
    others_text: str  # prose of humans other than the proposer, capped


def review_evidence(thread: Mapping[str, Any]) -> ReviewEvidence:
    rules = _rules()
    author = _norm_login(thread.get("author"))
    segs = _segments(thread, rules)
    reasons: list[str] = []

    others = [s for s in segs if not s.is_author and not s.is_bot]
    replied = any(_counts_as_reply(s) for s in others) or _bot_saw_reply(segs, author, rules)

    scans: dict[int, _Found] = {}
    budget = [_THREAD_SCAN_CHARS]

    def scan(seg: _Segment) -> _Found:
        key = id(seg)
        if key not in scans:
            prose = seg.prose[: max(0, budget[0])]
            budget[0] -= min(len(seg.prose), _SCAN_CHARS)
            scans[key] = _scan(prose, rules)
        return scans[key]

    concerns: set[str] = set()
    by_file: list[set[str]] = []
    for seg in others:
        found = scan(seg)
        concerns |= found.concerns
        on_file = _review_comment_concerns(seg, found)
        by_file.append(on_file)
        concerns |= on_file

    state = _state(thread, author, segs, others, replied, concerns, scan, rules, reasons)
    exact = state in ("merged", "open_no_reply", "open_replied") or bool(
        reasons and reasons[0] in _EXACT_REASONS
    )
    concern_features = _concern_features(thread, segs, others, by_file, scan)
    state_features = (
        {} if exact else _state_features(thread, segs, others, concerns, scan, state, reasons)
    )
    return ReviewEvidence(
        rule_state=state,
        exact=exact,
        replied=replied,
        rule_concerns=concerns,
        reasons=reasons,
        concern_features=concern_features,
        state_features=state_features,
        others_text=_joined((s.prose for s in others), _TEXT_CHARS),
    )


def _joined(texts: Iterable[str], cap: int) -> str:
    out: list[str] = []
    left = cap
    for text in texts:
        if left <= 0:
            break
        piece = text[:left]
        out.append(piece)
        left -= len(piece) + 1
    return "\n".join(out)


def _capped(n: int, cap: int = 3) -> float:
    return min(n, cap) / cap


def _concern_features(
    thread: Mapping[str, Any],
    segs: Sequence[_Segment],
    others: Sequence[_Segment],
    by_file: Sequence[set[str]],
    scan: Any,
) -> dict[str, float]:
    """Per concern kind: whether other people's comments state it in strong words, in weak
    words, in a request+topic pair, or by a remark on a changed file, and whether they state
    another kind in strong words; and the shape of the review around it. (The proposer's own
    words were tried as a feature: no gain in grouped CV, and scanning them cost a fifth of the
    review's time.)"""
    f: dict[str, float] = {}
    # Sets where only presence is read (Counter.update is a Python call per comment).
    strong: set[str] = set()
    weak: set[str] = set()
    paired: set[str] = set()
    requested: set[str] = set()
    code_requests = 0
    on_file: Counter[str] = Counter()
    signals: set[str] = set()
    asks = code = docs = tests = suggestions = questions = words = code_asks = 0
    for seg, file_kinds in zip(others, by_file, strict=True):
        found = scan(seg)
        strong |= found.concerns
        weak |= found.weak_seen - found.concerns
        paired |= found.paired
        requested |= found.requested
        code_requests += found.code_requests
        if file_kinds:
            on_file.update(file_kinds)
        signals |= found.signals
        n = len(seg.prose.split())
        words += n
        questions += "?" in seg.prose or "？" in seg.prose
        asks += n >= 3 and _asks(seg.prose) and not _NIT.search(seg.prose)
        suggestions += seg.suggestion
        if seg.path is not None and (n >= 2 or seg.suggestion):
            low = seg.path.lower()
            if low.endswith((".md", ".rst", ".txt", ".ipynb")) or low.startswith(("docs/", "doc/")):
                docs += 1
            elif "/tests/" in "/" + low or low.split("/")[-1].startswith("test_"):
                tests += 1
            else:
                code += 1
                # A short remark on a changed line that asks for something ("remove these
                # lines", "can we use X?"): too short for the phrase lists, not for the model.
                code_asks += seg.suggestion or _asks(seg.prose) or _IMPERATIVE.match(seg.prose) is not None
    # Present or not: one clear sentence is the usual way a concern is raised. (`get`: most
    # kinds are absent, and a Counter answers a missing key with a Python call.)
    for kind in CONCERNS:
        f["strong:" + kind] = float(kind in strong)
        # Another kind stated in clear words: a request or topic word of this kind beside it
        # is more often part of that concern than a second one ("other", the fallback, most).
        f["strong_elsewhere:" + kind] = float(bool(strong - {kind}))
        f["weak:" + kind] = float(kind in weak)
        f["pair:" + kind] = float(kind in paired)
        f["req:" + kind] = float(kind in requested)
        f["file:" + kind] = _capped(on_file.get(kind, 0))
    for name in ("decline_strong", "decline_weak", "redirect", "closing", "openness", "obsolete"):
        f["signal:" + name] = float(name in signals)
    f["others"] = _capped(len(others), 6)
    f["other_words"] = min(words, 600) / 600
    f["asks"] = _capped(asks, 4)
    f["asks_code"] = _capped(code_requests)
    f["questions"] = _capped(questions)
    f["remarks_code"] = _capped(code, 4)
    f["remarks_code_asking"] = _capped(code_asks, 3)
    f["remarks_docs"] = _capped(docs)
    f["remarks_tests"] = _capped(tests)
    f["suggestions"] = _capped(suggestions)
    f["pull_request"] = float(thread.get("kind") == "pull_request")
    state = str(thread.get("state") or "").lower()
    f["merged"] = float(state == "merged")
    f["closed"] = float(state == "closed")
    return f


def _state_features(
    thread: Mapping[str, Any],
    segs: Sequence[_Segment],
    others: Sequence[_Segment],
    concerns: set[str],
    scan: Any,
    rule_state: str,
    reasons: list[str],
) -> dict[str, float]:
    """For a closed thread no structural fact decides: the rules' answer and why, the signals
    in what others and the proposer wrote (anywhere, and in the last word of each), who spoke
    last, and what concerns were raised."""
    f: dict[str, float] = {"rule:" + rule_state: 1.0}
    for reason in reasons:
        f["why:" + reason.split(":")[0]] = 1.0
    for seg in others:
        for name in scan(seg).signals:
            f["others:" + name] = 1.0
    last_other = next((s for s in reversed(segs) if not s.is_author and not s.is_bot), None)
    if last_other is not None:
        for name in scan(last_other).signals:
            f["last_other:" + name] = 1.0
        if _FIXED.search(last_other.prose):
            f["last_other:fixed"] = 1.0
    for seg in segs:
        if seg.is_author and not seg.is_bot:
            for name in scan(seg).signals:
                f["proposer:" + name] = 1.0
    if segs:
        last = segs[-1]
        f["last:" + ("bot" if last.is_bot else "proposer" if last.is_author else "other")] = 1.0
    else:
        f["last:none"] = 1.0
    f["bots"] = float(any(s.is_bot for s in segs))
    f["others"] = _capped(len(others), 6)
    f["no_other"] = float(not others)
    f["pull_request"] = float(thread.get("kind") == "pull_request")
    for kind in concerns:
        f["concern:" + kind] = 1.0
    return f


@dataclass(frozen=True)
class ReviewModels:
    """The fitted models (analyzers/models/review_*.json, written by `make train`)."""

    # multiclass over the closed states, for closed threads no structural fact decides; used
    # only when meta["use"] says grouped CV found it better than the rules' own answer
    state: learned.LinearModel
    # binary, one row per (thread, concern kind): is this kind raised? Thresholds per kind
    # in `thresholds` (the model's own threshold for kinds without one).
    concerns: learned.LinearModel


def review_models() -> ReviewModels:
    state, concerns = learned.load_model("review_state"), learned.load_model("review_concerns")
    if state is None or concerns is None:
        raise FileNotFoundError("analyzers/models/review_*.json missing: run `make train`")
    return ReviewModels(state, concerns)


# Feature families that belong to one concern kind ("strong:evidence"): in the row of that
# kind they appear both shared across kinds ("strong") and for the kind ("evidence|strong"),
# so rare kinds borrow how much a strong-word hit is worth from the frequent ones.
OWN_FAMILIES = ("strong", "weak", "pair", "req", "file", "strong_elsewhere")


def text_vector(text: str) -> dict[str, float]:
    feats = learned.Features()
    feats.add_text("o", text)
    return feats.vector()


def _concern_keys(kind: str, name: str) -> tuple[str, ...]:
    """The keys feature `name` becomes in the row of concern `kind`: a kind's own family
    ("strong:evidence") shared and per kind in its own row only; anything else per kind."""
    family, _, of = name.partition(":")
    if family in OWN_FAMILIES:
        return (family, f"{kind}|{family}") if of == kind else ()
    return (f"{kind}|{name}",)


def concern_vector(ev: ReviewEvidence, kind: str, text: Mapping[str, float]) -> dict[str, float]:
    """The row of one concern kind: its own lexicon hits (shared and per kind), the thread's
    shape and the others' words, both crossed with the kind."""
    x: dict[str, float] = {kind + "|bias": 1.0}
    for name, value in ev.concern_features.items():
        if value:
            for key in _concern_keys(kind, name):
                x[key] = value
    for name, value in text.items():
        x[f"{kind}|{name}"] = value
    return x


def state_vector(ev: ReviewEvidence) -> dict[str, float]:
    # Named features only: with a few dozen hard closed threads, n-grams of the last words
    # lowered grouped-CV accuracy (they memorise repositories' phrasing).
    return dict(ev.state_features)


def concern_probabilities(ev: ReviewEvidence, model: learned.LinearModel) -> dict[str, float]:
    """model.probability(concern_vector(ev, kind, text)) for every kind, without building the
    eight crossed vectors: the text's hashed n-grams are looked up once, in a table of their
    per-kind weights. Each kind's text terms are summed in the text's order, as the crossed
    vector would be (absent weights add exactly nothing)."""
    text_weights, by_feature = _weights_by_kind(model)
    # A model fitted without the others' n-grams has no weight for them: skip the hashing.
    text = text_vector(ev.others_text) if by_feature else {}
    # Most n-grams have no weight for any kind: they are dropped in C first; then per kind,
    # the products of the rest with that kind's weights, in the text's order, summed in C.
    keys = list(text)
    hit = list(map(by_feature.__contains__, keys))
    weighted = list(compress(keys, hit))
    values = list(compress(text.values(), hit))
    text_sums: dict[str, float] = {}
    for kind in CONCERNS:
        ws = list(map(text_weights[kind].get, weighted))
        has = list(map(is_not, ws, repeat(None)))
        text_sums[kind] = sum(map(mul, compress(values, has), compress(ws, has)))
    out: dict[str, float] = {}
    bias = model.bias.get("1", 0.0)
    named_weights = _named_weights(model)
    features = [(name, value) for name, value in ev.concern_features.items() if value]
    for kind in CONCERNS:
        # The terms of concern_vector(ev, kind, {}) that have a weight, in its order (a term
        # without weight adds exactly 0.0, which changes no sum).
        weights_of = named_weights[kind]
        named = list(weights_of.get("|bias", ()))
        for name, value in features:
            ws = weights_of.get(name)
            if ws is None:
                ws = weights_of[name] = _named_feature_weights(model, kind, name)
            named += [value * w for w in ws]
        z = bias + sum(named)
        z += text_sums[kind]
        out[kind] = learned.sigmoid(z)
    return out


# id(model) -> (model, {kind: {concern feature name: its weights in the kind's row}})
_NAMED_WEIGHTS: dict[int, tuple[learned.LinearModel, dict[str, dict[str, tuple[float, ...]]]]] = {}


def _named_weights(model: learned.LinearModel) -> dict[str, dict[str, tuple[float, ...]]]:
    """Per concern kind, the weights concern_vector's row gives each named feature (filled as
    names are seen), and "|bias" for the kind's own bias feature when it has a weight."""
    hit = _NAMED_WEIGHTS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    weights = model.weights.get("1", {})
    table: dict[str, dict[str, tuple[float, ...]]] = {kind: {} for kind in CONCERNS}
    for kind in CONCERNS:
        if kind + "|bias" in weights:
            table[kind]["|bias"] = (weights[kind + "|bias"],)
    if len(_NAMED_WEIGHTS) > 16:  # per-fold models in cross-validation: keep it bounded
        _NAMED_WEIGHTS.clear()
    _NAMED_WEIGHTS[id(model)] = (model, table)
    return table


def _named_feature_weights(model: learned.LinearModel, kind: str, name: str) -> tuple[float, ...]:
    """The weights of the keys concern_vector makes of feature `name` in the row of `kind`,
    in its order; keys without weight left out."""
    weights = model.weights.get("1", {})
    return tuple(weights[k] for k in _concern_keys(kind, name) if k in weights)


_KindWeights = tuple[dict[str, dict[str, float]], frozenset[str]]
# id(model) -> (model, ({concern kind: {hashed feature without the "kind|" prefix: its
# non-zero weight}}, every hashed feature with a non-zero weight for some concern kind))
_SPLIT_WEIGHTS: dict[int, tuple[learned.LinearModel, _KindWeights]] = {}


def _weights_by_kind(model: learned.LinearModel) -> _KindWeights:
    hit = _SPLIT_WEIGHTS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    weights = model.weights.get("1", {})
    by_kind: dict[str, dict[str, float]] = {kind: {} for kind in CONCERNS}
    for name, w in weights.items():
        kind, bar, rest = name.partition("|")
        if bar and "#" in rest and kind in by_kind and w:
            by_kind[kind][rest] = w
    weighted = frozenset(k for ws in by_kind.values() for k in ws)
    if len(_SPLIT_WEIGHTS) > 16:  # per-fold models in cross-validation: keep it bounded
        _SPLIT_WEIGHTS.clear()
    _SPLIT_WEIGHTS[id(model)] = (model, (by_kind, weighted))
    return by_kind, weighted


def concern_thresholds(model: learned.LinearModel) -> dict[str, float]:
    return {k: float(model.thresholds.get(k, model.threshold)) for k in CONCERNS}


@dataclass
class ReviewScores:
    """The decision before concern thresholds are applied (cross-validation reads this)."""

    state: str
    replied: bool
    concern_probabilities: dict[str, float]
    reasons: list[str]


def review_scores(thread: Mapping[str, Any], models: ReviewModels | None = None) -> ReviewScores:
    """`models` defaults to the shipped ones; cross-validation passes per-fold models."""
    models = models or review_models()
    ev = review_evidence(thread)
    state, reasons = ev.rule_state, list(ev.reasons)
    if not ev.exact and models.state.meta.get("use", True):
        probs = models.state.probabilities(state_vector(ev))
        state = max(STATES, key=lambda s: (probs.get(s, 0.0), s == ev.rule_state))
        reasons.append(f"model:{state}")
    return ReviewScores(state, ev.replied, concern_probabilities(ev, models.concerns), reasons)


def explain_review(thread: Mapping[str, Any], models: ReviewModels | None = None) -> ReviewExplanation:
    """review_thread plus the reasons behind the state (for benchmarks and debugging)."""
    models = models or review_models()
    scores = review_scores(thread, models)
    limits = concern_thresholds(models.concerns)
    ordered = [k for k in CONCERNS if scores.concern_probabilities[k] >= limits[k]]
    return ReviewExplanation(scores.state, scores.replied, ordered, scores.reasons)


def _counts_as_reply(seg: _Segment) -> bool:
    # Any words (even only a quote or code), a suggestion, or a submitted review such as a bare
    # approval: someone other than the proposer engaged. Lines that are only commands to CI
    # ("/ok to test", "/retest", "/gemini review") talk to a machine, not to the proposer.
    if seg.suggestion or seg.review:
        return True
    # Line by line up to the first that is not a command (no list of every line made).
    return any(not _COMMAND.fullmatch(line) for line in map(str.strip, seg.raw.split("\n")) if line)


_COMMAND = re.compile(r"/[a-z][\w-]{0,30}(?: [^\s]{1,80}){0,4}", re.I)


# Sweep bots report the last human activity they saw ("... (comment by `someone`)"); on a
# partial thread that is the only trace of replies we were not given.
_SWEEP_SAW = re.compile(r"(?:comment|reply|review) by `?@?([A-Za-z0-9][A-Za-z0-9-]{0,38})`?", re.I)


def _bot_saw_reply(segs: Sequence[_Segment], author: str | None, rules: _Rules) -> bool:
    for seg in segs:
        if not seg.is_bot:
            continue
        for m in _SWEEP_SAW.finditer(seg.raw[:4000]):
            login = m.group(1).lower()
            if login != author and not _is_bot_login(login, rules):
                return True
    return False


def _review_comment_concerns(seg: _Segment, found: _Found) -> set[str]:
    """A reviewer's remark on a changed file is itself a concern about that file: docs and
    tests files give tests_or_docs, code files design_or_interface, when the remark asks for
    a change (words beyond a thank-you, or a suggestion block)."""
    if seg.path is None:
        return set()
    words = len(seg.prose.split())
    if not seg.suggestion and words < 8:
        return set()
    low = seg.path.lower()
    if low.endswith((".md", ".rst", ".txt", ".ipynb")) or low.startswith(("docs/", "doc/")):
        return {"tests_or_docs"}
    asks = seg.suggestion or (_asks(seg.prose) and not _NIT.search(seg.prose))
    if not asks:
        return set()
    if "/tests/" in "/" + low or low.split("/")[-1].startswith("test_"):
        return {"tests_or_docs"}
    return {"design_or_interface"} if not found.concerns else set()


# A remark that asks for a change, versus praise or a typo fix.
_ASKS = re.compile(
    r"\?|\b(?:should|could|would|please|suggest|instead|consider|avoid|remove|rename|move|"
    r"why|maybe|can we|let's|better|prefer|needs?|add|check|gat(?:e|ing)|guard)\b",
    re.I,
)


@lru_cache(maxsize=16)  # a remark on a file is asked about twice
def _asks(prose: str) -> bool:
    """_ASKS.search(prose) is not None, matched over the lower-cased prose without case
    folding where that finds the same (analyzers.nlp.lowered_matches_alike)."""
    if lowered_matches_alike(prose):
        return next(lowered_finditer(_ASKS, prose.lower()), None) is not None
    return _ASKS.search(prose) is not None


_IMPERATIVE = re.compile(
    r"\s*(?:remove|rename|move|use|drop|delete|revert|replace|avoid|split|add|put|make|keep|"
    r"change|do not|don't|pls|please)\b",
    re.I,
)
_NIT = re.compile(r"\b(?:typo|spelling|grammar|misspell\w*)\b", re.I)


def _labels(thread: Mapping[str, Any]) -> list[str]:
    labels = thread.get("labels")
    if not isinstance(labels, list):
        return []
    out = []
    for item in labels:
        name = item.get("name") if isinstance(item, Mapping) else item
        if isinstance(name, str):
            out.append(name.lower())
    return out


def _state(
    thread: Mapping[str, Any],
    author: str | None,
    segs: Sequence[_Segment],
    others: Sequence[_Segment],
    replied: bool,
    concerns: set[str],
    scan: Any,
    rules: _Rules,
    reasons: list[str],
) -> str:
    """The rules' state; `replied` as review_evidence found it (computed once per thread)."""
    state = str(thread.get("state") or "").lower()
    if state == "merged" or thread.get("merged") is True or thread.get("merged_at"):
        reasons.append("merged")
        return "merged"
    if state != "closed":
        return "open_replied" if replied else "open_no_reply"

    labels = _labels(thread)
    state_reason = thread.get("state_reason")
    state_reason = state_reason.lower() if isinstance(state_reason, str) else None
    closed_by = _norm_login(thread.get("closed_by"))

    # Who closed it, when GitHub says so.
    if closed_by is not None and author is not None and closed_by == author:
        reasons.append("closed_by==author")
        return "closed_by_author"
    # GitHub's close reasons (issues: completed, not_planned, duplicate; discussions: resolved,
    # outdated, duplicate; lower case from the sync and the webhooks alike). Closed as a
    # duplicate is the guidelines' closed_other whoever closed it but the proposer, whatever
    # the comments say: a chosen reason, neither a refusal nor inactivity (a workflow that
    # closes duplicates is no stale bot). The others decide nothing alone: completed and
    # resolved are the default close, not_planned is as often a refusal as a stale sweep, and
    # outdated says "no longer relevant", not "inactive" (the vocabulary's `obsolete`, which
    # is no refusal either): the closer, a stale label and the comments decide, below.
    if state_reason == "duplicate":
        reasons.append("state_reason:duplicate")
        return "closed_other"
    if closed_by is not None and _is_bot_login(closed_by, rules):
        reasons.append("closed_by_bot")
        return "lapsed"

    # A stale label is inactivity unless GitHub says it was done (completed, resolved): the
    # label stays on a thread a late fix closed.
    if state_reason in (None, "not_planned", "outdated") and any(
        s in lab for lab in labels for s in rules.stale_labels_sub
    ):
        reasons.append("stale_label")
        return "lapsed"

    # Closer unknown: the proposer saying they close it (latest word of theirs), or the
    # opening post edited to say so.
    last_other_closing = _last_index(others, lambda s: bool(scan(s).signals & {"closing", "lapse"}))
    if closed_by is None and author is not None:
        for seg in reversed(segs):
            if seg.is_author and not seg.is_bot and "author_close" in scan(seg).signals:
                if seg.index >= last_other_closing:
                    reasons.append("author_comment_close")
                    return "closed_by_author"
                break
        if last_other_closing < 0 and _raises("author_close", _body_prose(thread), rules):
            reasons.append("author_body_close")
            return "closed_by_author"

    # Closed as a duplicate (the guidelines' closed_other): someone other than the proposer
    # says so, and no stale sweep ran after the last human word.
    duplicate = any("duplicate" in scan(s).signals for s in others)

    # Lapsed: the most recent word from anyone but the proposer (bots that say nothing about
    # inactivity skipped) says it went stale, or a stale sweep ran after the last human reply.
    last_human = max((s.index for s in others), default=-1)
    for seg in reversed(segs):
        if seg.is_author:
            continue
        signals = scan(seg).signals
        if seg.is_bot and "lapse" not in signals and not _looks_stale_sweep(seg, rules):
            continue
        if duplicate and not seg.is_bot:
            break
        if "lapse" in signals or (seg.is_bot and seg.index >= last_human):
            reasons.append("lapse_comment" if not seg.is_bot else "stale_bot")
            return "lapsed"
        break

    # A question whether it is still alive, never answered by the proposer, then closed.
    pings = {"ping", "ping_pr"} if thread.get("kind") == "pull_request" else {"ping"}
    last_ping = _last_index(others, lambda s: bool(scan(s).signals & pings))
    if last_ping >= 0 and not any(s.is_author and s.index > last_ping for s in segs):
        later = [s for s in others if s.index > last_ping]
        if all(
            scan(s).signals & {"closing", "lapse"} and not _FIXED.search(s.prose) for s in later
        ):
            reasons.append("unanswered_ping")
            return "lapsed"

    pointer = concerns & {"already_covered"}
    # A pointer in weak words ("it overlaps with the existing judges module") in one comment and
    # the closing note in a later one ("closing in favour of extending the judges"): the weak
    # reading counts as it would beside the note (not when the note says the work was done).
    closer = max(
        (s.index for s in others if "closing" in scan(s).signals and not _FIXED.search(s.prose)),
        default=-1,
    )
    if closer >= 0 and any(
        s.index < closer and "already_covered" in scan(s).weak_seen for s in others
    ):
        reasons.append("weak_pointer_before_closing")
        pointer.add("already_covered")
    if any("redirect" in scan(s).signals for s in others):
        pointer.add("placement")
    elif closer >= 0 and any(s.index < closer and "wredirect" in scan(s).signals for s in others):
        reasons.append("weak_pointer_before_closing")
        pointer.add("placement")
    elif any(
        "closing" in scan(s).signals and not _BUG_FIXED.search(s.prose) and _links_elsewhere(s.prose, thread)
        for s in others
    ):
        # Closed by someone who links to another repository in the closing note ("moved to
        # <link to other-org/other-repo>, closing"): the link is the pointer (a fix that landed
        # in a dependency, "fixed upstream in <link>", is done, not redirected).
        reasons.append("closing_link_elsewhere")
        pointer.add("placement")
    declined = _declined(others, scan, rules, reasons)
    if any(s in lab for lab in labels for s in rules.decline_labels_sub):
        reasons.append("decline_label")
        declined = True
    if pointer:
        # Someone other than the proposer pointed elsewhere in a thread that was closed (not by
        # the proposer, as far as we know, and not for inactivity): the pointer is the answer.
        reasons.append("pointer:" + ",".join(sorted(pointer)))
        return "redirected"
    if duplicate:
        # Not a refusal: the same request is tracked elsewhere (a pointer to a feature that
        # exists, above, is the stronger answer).
        reasons.append("duplicate")
        return "closed_other"
    if declined:
        return "declined"
    return "closed_other"


# A fix that landed ("fixed upstream in <link>"): the words _FIXED starts from.
_FIX_WORDS = "fix|fixed|fixes|resolved"
_BUG_FIXED = re.compile(rf"\b(?:{_FIX_WORDS})\b", re.I)
_REPO_LINK = re.compile(r"github\.com/([A-Za-z0-9][\w.-]{0,38})/([\w.-]{1,100})")


def _links_elsewhere(prose: str, thread: Mapping[str, Any]) -> bool:
    """A link to a GitHub repository other than the thread's own (a renamed one, the same
    letters with other punctuation, counts as its own; attachments are no repository)."""
    if "github.com/" not in prose:
        return False
    own = re.sub(r"[^a-z0-9]", "", str(thread.get("repo") or "").lower().rpartition("/")[2])
    for owner, name in _REPO_LINK.findall(prose[:_SCAN_CHARS]):
        if owner.lower() == "user-attachments":
            continue
        if re.sub(r"[^a-z0-9]", "", name.lower().removesuffix(".git")) != own:
            return True
    return False


# Closing because the work was done elsewhere, not because nobody answered.
_FIXED = re.compile(rf"\b(?:{_FIX_WORDS}|merged|landed|done|implemented)\b|#\d", re.I)


def _looks_stale_sweep(seg: _Segment, rules: _Rules) -> bool:
    return _raises("lapse", seg.raw[:4000], rules)


def _raises(label: str, prose: str, rules: _Rules) -> bool:
    """label in _scan(prose, rules).signals, without the scan when the text cannot hold it
    (_may_raise): a closing note is rare in an opening post."""
    needs = _label_needs(label, rules)
    if needs is not None:
        text = _clean(prose[:_SCAN_CHARS]).strip()
        if not has_cjk(text) and not _may_raise(text.lower(), *needs):  # (no Chinese pairs)
            return False
    return label in _scan(prose, rules).signals


def _may_raise(low: str, substrings: tuple[str, ...], patterns: tuple[tuple[tuple[str, ...], ...], ...]) -> bool:
    if any(s in low for s in substrings):
        return True
    # A pattern: every required token present, one of its lower-case forms each. Each
    # token's forms are looked for once: most patterns of a signal share a token ("close",
    # "this"), and the substring searches are the whole cost.
    present: dict[tuple[str, ...], bool] = {}
    for pattern in patterns:
        for forms in pattern:
            hit = present.get(forms)
            if hit is None:
                hit = present[forms] = any(f in low for f in forms)
            if not hit:
                break
        else:
            return True
    return False


def _label_needs(label: str, rules: _Rules) -> _Needs | None:
    """What the lower-cased cleaned text (_clean) holds whenever _scan finds `label` there: one
    of its substrings, or for one of its patterns every required token, as one of the
    lower-case forms of its words (a LEMMA by every word lemmatised to it, _LEMMA_FIXES too).
    None when not known (a Greek sigma lower-cases by context, so its forms are not looked
    for)."""
    if label in rules.label_needs:
        return rules.label_needs[label]
    of_label = rules.matchers.required_of.get(label, [])
    lemma_forms = lower_forms(w for required in of_label for attr, words in required if attr == "LEMMA" for w in words)
    patterns = []
    every: list[str] = list(rules.sub.get(label, ()))
    for required in of_label:
        tokens = []
        # The rarest tokens first (as _key_of ranks them): most patterns are ruled out by
        # their first token, and the substring searches are the cost.
        for attr, words in sorted(required, key=lambda aw: (sum(w in _COMMON for w in aw[1]) / len(aw[1]), len(aw[1]))):
            forms: set[str] = set()
            for word in words:
                if attr == "LOWER":
                    forms.add(word)
                else:
                    forms |= lemma_forms[word] | {low for low, lemma in _LEMMA_FIXES.items() if lemma == word}
            every += forms
            # A form holding another form of the token is in the text only where that one is.
            tokens.append(tuple(sorted(f for f in forms if not any(g != f and g in f for g in forms))))
        patterns.append(tuple(tokens))
    needs = (tuple(rules.sub.get(label, ())), tuple(patterns))
    found = None if any("\u03c3" in s or "\u03c2" in s for s in every) else needs
    rules.label_needs[label] = found
    return found


def _last_index(segs: Iterable[_Segment], pred: Any) -> int:
    last = -1
    for seg in segs:
        if pred(seg):
            last = seg.index
    return last


def _body_prose(thread: Mapping[str, Any]) -> str:
    body = thread.get("body")
    if not isinstance(body, str):
        return ""
    # The proposer's closing note is usually the last thing they added to the post, or put
    # on top of it ("See #12 instead of this PR.").
    prose, _ = _prose(body[:_MAX_CHARS])
    lines = [line for line in prose.split("\n") if line.strip()]
    return "\n".join(lines[:1] + lines[-6:] if len(lines) > 6 else lines)


def _declined(others: Sequence[_Segment], scan: Any, rules: _Rules, reasons: list[str]) -> bool:
    strong = weak = open_ = False
    closing_with_reason = False
    for seg in others:
        found = scan(seg)
        strong |= "decline_strong" in found.signals
        # "We don't support that (yet)" is a refusal only with a reason beside it.
        weak |= "decline_weak" in found.signals and bool(found.concerns)
        open_ |= "openness" in found.signals
        if "closing" in found.signals and found.concerns and "obsolete" not in found.signals:
            closing_with_reason = True
    if strong:
        reasons.append("decline_strong")
        return True
    if closing_with_reason:
        reasons.append("closing_with_reason")
        return True
    if weak and not open_:
        reasons.append("decline_weak")
        return True
    return False
