"""Fitted linear models over lexicon features and hashed n-grams: the run-time half.

How an analyzer uses it (the fitting half lives in `training/`, never imported here):

    from analyzers import learned

    feats = learned.Features()
    feats.add("lex:entropy_collapse|pair", 2)          # named lexicon features (any float)
    feats.add_text("t", title)                          # hashed word 1-2-grams (+ CJK char n-grams)
    feats.add_text("w", prose)                          # ... per namespace (title, body, ...)
    model = learned.load_model("failure")               # analyzers/models/failure.json, cached
    p = model.probability(feats.vector())               # binary: P(positive)
    probs = kind_model.probabilities(feats.vector())    # multiclass: {class: P}
    model.threshold                                      # chosen from data at training time
    model.thresholds["comment"]                          # further named thresholds, if any

Features are a plain `dict[str, float]`: lexicon names as given (no "#" in them), hashed
n-grams as "<namespace>#<bucket>" (bucket = crc32("<namespace>:<n-gram>") mod `buckets`,
stable across processes and Python versions). Hashed values are sublinear counts (1 + log n),
scaled so that each namespace has unit L2 norm: long and short posts weigh alike, and a long
body does not drown the title. Input text is cut to
`MAX_TEXT` characters and at most `MAX_TOKENS` tokens are read, so a 64 KiB hostile body costs
a bounded number of features and one linear pass.

Model files (`analyzers/models/<name>.json`) hold the featurizer settings, sparse weights,
bias(es), threshold(s) and metadata (training data sha256, grouped-CV and fitted figures,
analyzer version, seed). They contain no thread text: hashed buckets and weights only.
Pass a `LinearModel` explicitly (as cross-validation does with per-fold models) to score
through the very same analyzer code.
"""

from __future__ import annotations

import json
import math
import re
import sys
import zlib
from collections import _count_elements  # type: ignore[attr-defined]  # Counter.update's C helper
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from itertools import compress, repeat
from operator import add, mul, truediv
from pathlib import Path
from typing import Any, TypeVar

MODELS_DIR = Path(__file__).with_name("models")
K = TypeVar("K")
V = TypeVar("V")

BUCKETS = 1 << 18
MAX_TEXT = 20_000  # characters of one namespace's text read for n-grams
MAX_TOKENS = 4_000  # word tokens read per namespace
MAX_CJK_CHARS = 4_000  # CJK characters read per namespace

# Words: ASCII letters (with an inner apostrophe), or numbers. Zero stays "0" ("reward is 0"
# matters), other numbers read as "<num>".
# Written to start with one character class (a letter or a digit, the first character of
# either kind of word, the rest chosen by a look-behind at it): re then skips in C to where a
# word can start, where an alternation is tried at every position. The same tokens as
# [a-z][a-z']{0,39}|\d{1,12}(?:\.\d{1,12})? (tested).
_WORD = re.compile(r"[a-z\d](?:(?<=[a-z])[a-z']{0,39}|(?<=\d)\d{0,11}(?:\.\d{1,12})?)")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,400}")


def bucket(namespace: str, gram: str, buckets: int = BUCKETS) -> int:
    """Stable hash bucket of an n-gram in a namespace: crc32("<namespace>:<gram>")."""
    return zlib.crc32(f"{namespace}:{gram}".encode()) % buckets


# Tokens that start with a letter are words as they stand; the others are numbers, folded.
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")


class _Folded(dict[str, str]):
    """Each token as a feature reads it: a word as it stands, a number folded to "0" or
    "<num>". Tokens seen before are answered by the dict in C (map over __getitem__), without a
    Python step per token; the others are folded once and kept while fewer than `_FOLDED_SIZE`
    are (past that, folded on every sight: still one pass). The value kept for a word is the
    string first seen, so later look-ups of its n-gram keys hash nothing new."""

    def __missing__(self, tok: str) -> str:
        folded = tok if tok[0] in _LETTERS else ("0" if float(tok) == 0 else "<num>")
        if len(self) < _FOLDED_SIZE:
            self[tok] = folded
        return folded


_FOLDED_SIZE = 200_000
_FOLDED = _Folded()


def word_tokens(text: str) -> list[str]:
    """Lower-cased word tokens of `text` (bounded); numbers folded to "0" / "<num>"."""
    tokens = _WORD.findall(text[:MAX_TEXT].lower())
    del tokens[MAX_TOKENS:]
    return list(map(_FOLDED.__getitem__, tokens))


def _char_grams(run: str, n: int) -> Iterable[str]:
    """The `n`-character substrings of `run`, in order: run[i : i + n] for each i, joined
    character by character in C (map over add) rather than sliced in a Python step each."""
    if n == 1:
        return run  # a string iterates over its characters
    grams: Iterable[str] = run
    for k in range(1, n):
        grams = map(add, grams, run[k:])  # stops with the shortest: len(run) - n + 1 grams
    return grams


def cjk_grams(text: str, sizes: tuple[int, ...] = (1, 2, 3)) -> list[str]:
    """Character n-grams of the CJK runs in `text` (bounded): Chinese carries meaning in
    characters, and no word segmenter is needed."""
    grams: list[str] = []
    if text.isascii():
        return grams  # no CJK character, checked in C
    seen = 0
    for m in _CJK_RUN.finditer(text[:MAX_TEXT]):
        run = m.group(0)[: MAX_CJK_CHARS - seen]
        seen += len(run)
        for n in sizes:
            grams.extend(_char_grams(run, n))
        if seen >= MAX_CJK_CHARS:
            break
    return grams


def cached_map(items: list[K], cache: dict[K, V], compute: Callable[[K], V], limit: int) -> list[V]:
    """[compute(x) for x in items] through `cache`: cached items are found in C, the others
    computed once each (a repeat within `items` reads the cache) and cached while the cache
    holds fewer than `limit` entries. `compute` must be a pure function of the item."""
    out: list[Any] = list(map(cache.get, items))
    if not all(out):  # (cheaper than `None in out`; a falsy value is only looked at again)
        for i, value in enumerate(out):
            if value is None:
                item = items[i]
                value = cache.get(item)
                if value is None:
                    value = compute(item)
                    if len(cache) < limit:
                        cache[item] = value
                out[i] = value
    return out


# Feature key ("<namespace>#<bucket>") of each n-gram seen, per (namespace, buckets): a dict
# lookup instead of encoding, hashing and formatting every n-gram of every thread. Unigrams
# are keyed by their string, bigrams by the (word, word) pair, so a bigram string is built only
# the first time it is seen. Bounded: past _KEY_CACHE_SIZE entries new n-grams are hashed
# every time (a 64 KiB body of distinct words costs the same as before the cache).
_KEY_CACHE_SIZE = 200_000
_GRAM_KEYS: dict[tuple[str, int], dict[str, str]] = {}
_PAIR_KEYS: dict[tuple[str, int], dict[tuple[str, str], str]] = {}


@dataclass
class Features:
    """A feature vector under construction: named features plus hashed n-gram counts."""

    buckets: int = BUCKETS
    named: dict[str, float] = field(default_factory=dict)
    # namespace -> {"<namespace>#<bucket>": count}, in order of first occurrence
    hashed: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, name: str, value: float = 1.0) -> None:
        if value:
            self.named[name] = self.named.get(name, 0.0) + float(value)

    def _count(self, namespace: str, keys: list[str]) -> None:
        counts = self.hashed.get(namespace)
        # What Counter(keys) holds, in order of first occurrence, counted by the C helper
        # Counter.update calls, without Counter's Python-level constructor and type checks.
        found: dict[str, int] = {}
        _count_elements(found, keys)
        if not counts:
            # The usual case, a namespace added once: its counts as they come, in C. (Counts
            # stay integers: vector() finds the same 1 + log(n) for 3 as it did for 3.0.)
            self.hashed[namespace] = found
            return
        for key, n in found.items():
            counts[key] = counts.get(key, 0) + n

    def _keys(
        self, namespace: str, items: list[Any], tables: dict[tuple[str, int], dict[Any, str]], gram_of: Any
    ) -> list[str]:
        """Feature keys of n-grams (`items`: strings, or word pairs with `gram_of` joining
        them), through the cache of the namespace."""
        size = self.buckets

        def key_of(item: Any) -> str:
            # Interned, as the models' keys are (LinearModel.from_json): a weight is then
            # found by identity, without comparing the strings' characters.
            return sys.intern(f"{namespace}#{bucket(namespace, gram_of(item), size)}")

        table = tables.setdefault((namespace, size), {})
        return cached_map(items, table, key_of, _KEY_CACHE_SIZE)

    def add_grams(self, namespace: str, grams: Iterable[str]) -> None:
        self._count(namespace, self._keys(namespace, list(grams), _GRAM_KEYS, str))

    def add_tokens(self, namespace: str, tokens: list[str], ngrams: tuple[int, ...] = (1, 2)) -> None:
        """Word n-grams of an already tokenised text (e.g. lemmas from analyzers.nlp)."""
        tokens = tokens[:MAX_TOKENS]
        keys: list[str] = []
        for n in ngrams:
            if n == 1:
                keys += self._keys(namespace, tokens, _GRAM_KEYS, str)
            elif n == 2:
                pairs = list(zip(tokens, tokens[1:], strict=False))
                keys += self._keys(namespace, pairs, _PAIR_KEYS, " ".join)
            else:
                grams = [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
                keys += self._keys(namespace, grams, _GRAM_KEYS, str)
        self._count(namespace, keys)

    def add_text(self, namespace: str, text: str | None, ngrams: tuple[int, ...] = (1, 2)) -> None:
        """Word n-grams (regex tokens) and CJK character 1-3-grams of `text`."""
        if not text:
            return
        self.add_tokens(namespace, word_tokens(text), ngrams)
        grams = cjk_grams(text)
        if grams:  # most text has no CJK: an empty namespace would add no feature anyway
            self.add_grams(namespace + "c", grams)

    def vector(self) -> dict[str, float]:
        """The final sparse vector: named features as given, hashed ones sublinear and
        L2-normalised per namespace."""
        out = dict(self.named)
        for counts in self.hashed.values():
            if not counts:
                continue
            try:
                scaled = list(map(_SUBLINEAR.__getitem__, counts.values()))
            except KeyError:  # a count beyond the table
                scaled = [1.0 + math.log(n) if (v := _SUBLINEAR.get(n)) is None else v for n in counts.values()]
            # The same floats as sum(v * v for v in scaled) and v / norm, without a Python
            # step per value.
            norm = math.sqrt(sum(map(mul, scaled, scaled)))
            out.update(zip(counts, map(truediv, scaled, repeat(norm)), strict=True))
        return out


# 1 + log(n) of the counts up to this many, computed once (the same floats as computing them).
# Keyed by int, as the counts are: a count up to 256 is then found by identity (small ints are
# one object each), without comparing an int with a float key.
_SUBLINEAR_TABLE = 4096
_SUBLINEAR: dict[int, float] = {1: 1.0} | {n: 1.0 + math.log(float(n)) for n in range(2, _SUBLINEAR_TABLE)}


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass
class LinearModel:
    """A binary (one weight map, sigmoid) or multiclass (one weight map per class, softmax)
    linear model over sparse feature dicts."""

    name: str
    classes: list[str]  # binary: ["0", "1"]; multiclass: the class names
    weights: dict[str, dict[str, float]]  # class -> feature -> weight (binary: only "1")
    bias: dict[str, float]
    threshold: float = 0.5  # the decision threshold (binary: positive when P >= it)
    buckets: int = BUCKETS
    meta: dict[str, Any] = field(default_factory=dict)
    # Further named thresholds chosen from data (e.g. "comment": where precision >= 0.90).
    thresholds: dict[str, float] = field(default_factory=dict)
    # feature -> [(class, weight)], built on first use; weights are not changed after that.
    _table: dict[str, list[tuple[str, float]]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def binary(self) -> bool:
        return self.classes == ["0", "1"]

    def _scores(self, x: Mapping[str, float]) -> dict[str, float]:
        """All classes' scores in one pass over `x` (feature -> per-class weights)."""
        table = self._by_feature()
        out = {c: self.bias.get(c, 0.0) for c in self.weights}
        # Most features have no weight: find the rows in C, loop in Python over hits only
        # (in the order of `x`, so the sums are the same floats).
        # (A row is a non-empty list: truthy exactly where the feature has weights.)
        rows = list(map(table.get, x))
        for v, row in zip(compress(x.values(), rows), filter(None, rows), strict=True):
            for c, w in row:
                out[c] += v * w
        return out

    def _by_feature(self) -> dict[str, list[tuple[str, float]]]:
        if self._table is None:
            table: dict[str, list[tuple[str, float]]] = {}
            for c, w in self.weights.items():
                for k, wk in w.items():
                    table.setdefault(k, []).append((c, wk))
            self._table = table
        return self._table

    def probability(self, x: Mapping[str, float]) -> float:
        """Binary models: P(positive | x)."""
        weights = self.weights.get("1")
        if weights is None or len(self.weights) != 1:
            return sigmoid(self._scores(x).get("1", self.bias.get("1", 0.0)))
        # One weight map: bias + v1*w1 + v2*w2 + ... left to right over the features of `x`
        # that have a weight, as _scores adds them, without a Python step per feature. Only
        # non-zero weights are taken (compress and filter keep the truthy ones, in step): a
        # weight of 0.0 adds a zero, which leaves a sum as it is (or turns -0.0 into 0.0,
        # the same sigmoid).
        ws = list(map(weights.get, x))
        terms = map(mul, compress(x.values(), ws), filter(None, ws))
        return sigmoid(reduce(add, terms, self.bias.get("1", 0.0)))

    def probabilities(self, x: Mapping[str, float]) -> dict[str, float]:
        """Multiclass models: softmax over the classes."""
        if self.binary:
            p = self.probability(x)
            return {"0": 1.0 - p, "1": p}
        known = self._scores(x)
        scores = {c: known.get(c, self.bias.get(c, 0.0)) for c in self.classes}
        top = max(scores.values())
        exps = {c: math.exp(s - top) for c, s in scores.items()}
        total = sum(exps.values())
        return {c: e / total for c, e in exps.items()}

    def contributions(self, x: Mapping[str, float], cls: str = "1", named_only: bool = True) -> list[tuple[str, float]]:
        """Features that pushed towards `cls`, largest first (for explaining a verdict)."""
        w = self.weights.get(cls, {})
        items = [(k, v * w.get(k, 0.0)) for k, v in x.items() if not (named_only and "#" in k)]
        return sorted((i for i in items if i[1]), key=lambda i: -abs(i[1]))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "classes": self.classes,
            "buckets": self.buckets,
            "threshold": self.threshold,
            "thresholds": self.thresholds,
            "bias": self.bias,
            "weights": {c: dict(sorted(w.items())) for c, w in self.weights.items()},
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinearModel:
        return cls(
            name=str(data["name"]),
            classes=[str(c) for c in data["classes"]],
            # Feature names interned, as Features makes its keys: looked up by identity.
            weights={str(c): {sys.intern(str(k)): float(v) for k, v in w.items()} for c, w in data["weights"].items()},
            bias={str(c): float(b) for c, b in data["bias"].items()},
            threshold=float(data.get("threshold", 0.5)),
            buckets=int(data.get("buckets", BUCKETS)),
            meta=dict(data.get("meta") or {}),
            thresholds={str(k): float(v) for k, v in (data.get("thresholds") or {}).items()},
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> LinearModel:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=32)
def load_model(name: str) -> LinearModel | None:
    """The shipped model `analyzers/models/<name>.json`, loaded once per process; None when
    it has not been trained (analyzers then fall back to their lexicon-only behaviour)."""
    path = MODELS_DIR / f"{name}.json"
    if not path.exists():
        return None
    return LinearModel.load(path)


__all__ = [
    "BUCKETS",
    "Features",
    "LinearModel",
    "MODELS_DIR",
    "bucket",
    "cached_map",
    "cjk_grams",
    "load_model",
    "sigmoid",
    "word_tokens",
]
