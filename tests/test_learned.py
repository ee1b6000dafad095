"""analyzers.learned (features, linear models) and training/ (data split, grouped folds,
fitting, thresholds). Every thread and row here is synthetic, written for this test."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import learned
from analyzers.learned import Features, LinearModel, bucket, cjk_grams, load_model, word_tokens
from training.cv import cross_val_predict, grouped_folds
from training.data import (
    FRAMEWORKS,
    RELATED,
    Example,
    canonical_repo,
    group_of,
    is_sealed,
    load_examples,
    make_example,
)
from training.fit import best_f1_threshold, choose_threshold, fit_linear


def _vector(title: str, body: str) -> dict[str, float]:
    f = Features()
    f.add("lex:pair", 2)
    f.add_text("t", title)
    f.add_text("w", body)
    return f.vector()


# --- features -----------------------------------------------------------------------------


def test_hash_buckets_are_stable_across_processes() -> None:
    # crc32 is fixed by zlib: the same n-gram lands in the same bucket in every process and
    # Python version (hash() would not), so shipped weights stay valid.
    assert bucket("w", "reward") == 817327628 % learned.BUCKETS == 224780
    assert bucket("w", "reward") != bucket("t", "reward")


def test_featurizer_is_deterministic() -> None:
    a = _vector("Reward does not grow", "The reward stays at 0.2; 奖励一直不涨。")
    b = _vector("Reward does not grow", "The reward stays at 0.2; 奖励一直不涨。")
    assert a == b
    assert a["lex:pair"] == 2.0
    # hashed values are unit L2 per namespace
    for ns in ("t", "w", "wc"):
        norm = math.sqrt(sum(v * v for k, v in a.items() if k.startswith(ns + "#")))
        assert norm == pytest.approx(1.0)


def test_word_tokens_fold_numbers_and_lowercase() -> None:
    assert word_tokens("Reward is 0, KL is 0.35 and loss is 00.0") == [
        "reward", "is", "0", "kl", "is", "<num>", "and", "loss", "is", "0",
    ]  # fmt: skip


def test_cjk_character_ngrams() -> None:
    grams = cjk_grams("reward一直不涨")
    assert {"一", "一直", "一直不", "不涨"} <= set(grams)
    assert "reward" not in grams


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="训练奖励熵坍塌a ，。", max_size=40))
def test_cjk_grams_are_every_run_slice_in_order(text: str) -> None:
    # cjk_grams joins characters in C: the same grams, in the same order, as slicing each run.
    expected: list[str] = []
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
        for n in (1, 2, 3):
            expected += [run[i : i + n] for i in range(len(run) - n + 1)]
    assert cjk_grams(text) == expected


def test_hostile_body_gives_a_bounded_number_of_features() -> None:
    body = ("entropy collapse 熵坍塌 " * 4000)[: 64 * 1024]
    distinct = "".join(f"w{i} " for i in range(20000))[: 64 * 1024]
    for text in (body, distinct, "9" * 65536, "熵" * 65536):
        f = Features()
        f.add_text("w", text)
        vec = f.vector()
        # words: at most MAX_TOKENS unigrams + bigrams; CJK: 3 gram sizes over MAX_CJK_CHARS
        assert len(vec) <= 2 * learned.MAX_TOKENS + 3 * learned.MAX_CJK_CHARS


# --- models ---------------------------------------------------------------------------------


def test_binary_model_round_trip(tmp_path: Path) -> None:
    model = LinearModel(
        "demo", ["0", "1"], {"1": {"lex:pair": 1.5, "t#12": -0.5}}, {"1": -1.0},
        threshold=0.4, thresholds={"comment": 0.7}, meta={"seed": 1},
    )  # fmt: skip
    path = tmp_path / "demo.json"
    model.save(path)
    loaded = LinearModel.load(path)
    x = {"lex:pair": 2.0, "t#12": 1.0, "unknown": 5.0}
    assert loaded.probability(x) == pytest.approx(1 / (1 + math.exp(-(2 * 1.5 - 0.5 - 1.0))))
    assert loaded.probability(x) == model.probability(x)
    assert (loaded.threshold, loaded.thresholds, loaded.meta) == (0.4, {"comment": 0.7}, {"seed": 1})
    assert json.loads(path.read_text())["weights"]["1"] == {"lex:pair": 1.5, "t#12": -0.5}


def test_multiclass_probabilities_sum_to_one() -> None:
    model = LinearModel("k", ["a", "b", "c"], {"a": {"x": 2.0}, "b": {"y": 1.0}, "c": {}},
                        {"a": 0.0, "b": 0.0, "c": 0.5})  # fmt: skip
    probs = model.probabilities({"x": 1.0})
    assert sum(probs.values()) == pytest.approx(1.0)
    assert max(probs, key=probs.__getitem__) == "a"
    assert model.contributions({"x": 1.0, "t#3": 1.0}, "a") == [("x", 2.0)]


def _toy_rows() -> tuple[list[dict[str, float]], list[bool]]:
    texts = [
        ("reward does not grow", True), ("reward stays flat", True), ("loss becomes nan", True),
        ("reward drops to zero", True), ("please add a feature", False),
        ("install fails with pip", False), ("how do I set the option", False),
        ("add support for a model", False),
    ] * 3  # fmt: skip
    return [_vector(t, t) for t, _ in texts], [y for _, y in texts]


def test_fit_is_reproducible_and_separates_toy_data() -> None:
    X, y = _toy_rows()
    a = fit_linear(X, y, "toy", C=10.0, seed=3)
    b = fit_linear(X, y, "toy", C=10.0, seed=3)
    assert a.to_json() == b.to_json()
    assert a.probability(_vector("reward does not grow", "")) > 0.5
    assert a.probability(_vector("please add a feature", "")) < 0.5
    # no text in the model: named features and hashed buckets only
    assert all(k == "lex:pair" or re.fullmatch(r"[a-z]+#\d+", k) for k in a.weights["1"])


def test_multiclass_fit() -> None:
    X = [_vector(t, "") for t in ("kl grows", "kl explodes", "entropy drops", "entropy collapses",
                                  "length grows", "length explodes")] * 2  # fmt: skip
    y = ["kl", "kl", "entropy", "entropy", "length", "length"] * 2
    model = fit_linear(X, y, "kind", C=10.0, min_df=1)
    assert model.classes == ["entropy", "kl", "length"]
    probs = model.probabilities(_vector("kl explodes", ""))
    assert max(probs, key=probs.__getitem__) == "kl"


def test_thresholds_from_scores() -> None:
    scores = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    gold = [True, True, True, True, False, True, False, True, False, False]
    # precision >= 0.9 holds down to 0.8 (4/4) but not at 0.7 (4/5) nor 0.4 (6/8)
    assert choose_threshold(scores, gold, 0.9) == 0.8
    assert choose_threshold(scores, [False] * 10, 0.9, default=0.5) == 0.5
    t = best_f1_threshold(scores, gold)
    assert 0.35 <= t <= 0.4  # all six positives at precision 6/8


# --- data split and folds -------------------------------------------------------------------


def test_comment_threshold_holds_in_every_view_at_once() -> None:
    from training.failure import _joint_threshold

    # View A alone allows 0.5 (4 of 4 right from there); view B at 0.5 is 4 right of 5 (0.8),
    # reaches 0.90 only from 0.7 on. The joint threshold is the lowest where both hold.
    a = ([0.9, 0.8, 0.6, 0.5, 0.2], [True, True, True, True, False])
    b = ([0.9, 0.8, 0.7, 0.6, 0.5], [True, True, True, False, True])
    assert _joint_threshold([a], 0.5) == 0.5
    t = _joint_threshold([a, b], 0.5)
    assert t == 0.7
    for scores, gold in (a, b):
        hits = [g for s, g in zip(scores, gold, strict=True) if s >= t]
        assert sum(hits) / len(hits) >= 0.9


def test_comments_right_on_the_kind_counted_per_policy() -> None:
    from training.failure import Prediction, kind_comments

    def row(i: int, gold: str | None) -> Example:
        labels = {"is_failure_report": gold is not None, **({"category": gold} if gold else {})}
        return make_example({"id": f"o/r#{i}", "repo": "o/r", "title": "t", "body": "b", "labels": labels})

    def pred(conf: float, kinds: tuple[str, ...]) -> Prediction:
        return Prediction(conf, kinds[0], conf, kinds, kinds[0], kinds)

    a, b = "entropy_collapse", "kl_growth"
    # Six clear calls (5 right), four ambiguous ones (1 right, 1 right in second place, one
    # right only in third place), and one below the threshold that does not count.
    cases = [(a, (a,))] * 5 + [(b, (a,)), (a, (a, b)), (b, (a, b)), (None, (a, b)), (b, (a, "x", b)), (b, (b,))]
    rows = [row(i, gold) for i, (gold, _) in enumerate(cases)]
    preds = {e.id: pred(0.4 if i == len(cases) - 1 else 0.8, kinds) for i, (e, (_, kinds)) in enumerate(zip(rows, cases, strict=True))}
    k = kind_comments(rows, preds, 0.5)
    assert (k.n, k.right, k.among, k.among2, k.single, k.single_right) == (10, 6, 8, 7, 6, 5)
    assert (k.ambiguous, k.ambiguous_right) == (4, 1)
    assert k.share() == 0.6 and k.share("cover_two") == 0.7 and k.share("single_kind") == 5 / 6
    # The view decides which confidence and kinds count: the opening post's here differ.
    opened_only = {e.id: Prediction(0.8, a, 0.3, (a,), b, (b,)) for e in rows[:2]}
    assert kind_comments(rows[:2], opened_only, 0.5).n == 0
    assert kind_comments(rows[:2], opened_only, 0.5, "confidence").right == 2


def test_repositories_groups_and_sealed_share() -> None:
    assert canonical_repo("volcengine/verl") == "verl-project/verl"
    assert canonical_repo("inclusionAI/AReaL") == "areal-project/AReaL"
    assert group_of("volcengine/verl") == "verl-project/verl"
    assert group_of("hiyouga/EasyR1") == RELATED
    sealed = sum(is_sealed(f"o/r#{i}") for i in range(4000))
    assert 0.12 * 4000 < sealed < 0.18 * 4000
    assert is_sealed("o/r#7") == is_sealed("o/r#7")


def _synthetic_examples() -> list[Example]:
    repos = list(FRAMEWORKS) + ["volcengine/verl", "a/one", "a/two", "b/three", "c/four", "d/five"]
    rows = []
    for r, repo in enumerate(repos):
        for i in range(12):
            rows.append(make_example({"id": f"{repo}#{i}", "repo": repo, "title": "t", "body": "b",
                                      "labels": {"is_failure_report": (i + r) % 2 == 0}}))  # fmt: skip
    return rows


def test_grouped_folds_never_leak() -> None:
    examples = _synthetic_examples()
    folds = grouped_folds(examples, related_folds=3)
    sealed = {e.id for e in examples if e.sealed}
    assert sealed, "the synthetic set must contain sealed ids for this test to mean anything"
    assert [f.name for f in folds[:7]] == list(FRAMEWORKS)
    tested: list[str] = []
    for fold in folds:
        train_ids = {e.id for e in fold.train}
        test_ids = {e.id for e in fold.test}
        assert not train_ids & test_ids
        assert not (train_ids | test_ids) & sealed
        if fold.framework:
            # a framework's threads (aliases included) are never in its own training fold
            assert {e.group for e in fold.test} == {fold.name}
            assert all(e.group != fold.name for e in fold.train)
        else:
            # related projects are held out whole: a repository is never split
            assert not {e.repo for e in fold.train} & {e.repo for e in fold.test}
        tested.extend(test_ids)
    assert sorted(tested) == sorted(e.id for e in examples if not e.sealed)  # each once


def test_cross_val_predict_only_fits_on_the_training_fold() -> None:
    examples = _synthetic_examples()

    def fit(train: list[Example]) -> set[str]:
        return {e.id for e in train}

    preds, fold_of = cross_val_predict(examples, fit, lambda seen, e: e.id in seen, related_folds=2)
    assert preds and not any(preds.values())
    assert set(fold_of) == set(preds)


def test_shared_data_loads_with_sealed_slice(shared_dir: Path) -> None:
    examples = load_examples(shared_dir)
    assert len({e.id for e in examples}) == len(examples)
    share = sum(e.sealed for e in examples) / len(examples)
    assert 0.08 < share < 0.22
    assert {e.group for e in examples} <= set(FRAMEWORKS) | {RELATED}


# --- the shipped model files ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["failure", "failure_kind"])
def test_shipped_models_carry_their_provenance(name: str) -> None:
    model = load_model(name)
    assert model is not None, "run `make train`"
    meta = model.meta
    assert re.fullmatch(r"[0-9a-f]{64}", meta["training_data_sha256"])
    assert meta["analyzer_version"] and isinstance(meta["seed"], int)
    assert "grouped_cv_frameworks" in meta["figures"] and "fitted" in meta["figures"]
    # hashed buckets and lexicon feature names only: no text from the threads
    for weights in model.weights.values():
        for key in weights:
            assert re.fullmatch(r"[a-z]+#\d+|[a-z_:]+(\|[a-z_]+)?|[a-z_]+:[a-z_]+\|[a-z_]+", key), key


def _plain_vector(namespaces: list[tuple[str, list[str]]]) -> dict[str, float]:
    # The featurizer written out the slow way: crc32 per n-gram, counts, 1 + log n, unit L2.
    out: dict[str, float] = {}
    for namespace, grams in namespaces:
        counts: dict[int, float] = {}
        for g in grams:
            b = bucket(namespace, g)
            counts[b] = counts.get(b, 0.0) + 1.0
        if not counts:
            continue
        scaled = {b: 1.0 + math.log(n) for b, n in counts.items()}
        norm = math.sqrt(sum(v * v for v in scaled.values()))
        out.update((f"{namespace}#{b}", v / norm) for b, v in scaled.items())
    return out


def _plain_tokens(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"[a-z][a-z']{0,39}|\d{1,12}(?:\.\d{1,12})?", text[: learned.MAX_TEXT].lower()):
        tok = m.group(0)
        out.append(("0" if float(tok) == 0 else "<num>") if tok[0].isdigit() else tok)
    return out[: learned.MAX_TOKENS]


@pytest.mark.parametrize(
    "title,body",
    [
        ("Reward does not grow", "The reward stays at 0.2 and the reward stays; 奖励一直不涨。奖励"),
        ("", "loss loss loss is 0.0 then 3 then ٣ and １２ steps"),
        ("entropy " * 3000, ("entropy collapse 熵坍塌 " * 4000)[: 64 * 1024]),
    ],
)
def test_cached_featurizer_equals_the_plain_one(title: str, body: str) -> None:
    # The n-gram -> feature key caches must give the very same vector, key order included
    # (model scores are float sums in that order); twice, so the second pass reads the caches.
    for _ in range(2):
        got = _vector(title, body)
        t, w = _plain_tokens(title), _plain_tokens(body)
        assert word_tokens(body) == w
        expected = {"lex:pair": 2.0}
        expected.update(
            _plain_vector(
                [
                    ("t", t + [f"{a} {b}" for a, b in zip(t, t[1:], strict=False)]),
                    ("tc", cjk_grams(title)),
                    ("w", w + [f"{a} {b}" for a, b in zip(w, w[1:], strict=False)]),
                    ("wc", cjk_grams(body)),
                ]
            )
        )
        assert list(got.items()) == list(expected.items())


def test_vector_scales_counts_beyond_its_table_as_the_formula_does() -> None:
    # Counts past the precomputed 1 + log(n) table take the formula; a namespace added twice
    # adds its counts; key order is first occurrence.
    feats = Features()
    feats.add_grams("x", ["a"] * 5000 + ["b"] * 3 + ["c"])
    feats.add_grams("x", ["c", "d"])
    got = feats.vector()
    counts = {"a": 5000, "b": 3, "c": 2, "d": 1}
    keys = {g: f"x#{bucket('x', g)}" for g in counts}
    assert len(set(keys.values())) == len(keys)  # no two of these share a bucket
    scaled = {g: 1.0 + math.log(n) for g, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in scaled.values()))
    assert list(got.items()) == [(keys[g], scaled[g] / norm) for g in counts]


def test_model_scores_equal_the_plain_left_to_right_sums() -> None:
    # probability() and _scores() skip features without weight in C; the plain path adds
    # every weighted feature in the order of x, starting from the bias: same floats.
    x = _vector("Entropy collapses after 200 steps", "the entropy collapse, then reward 0.3 " * 7)
    x["lex:other"] = 0.7
    weights = {k: (i % 7 - 3) / 3.1 for i, k in enumerate(x) if i % 3}
    weights["absent"] = 9.0
    binary = LinearModel("b", ["0", "1"], {"1": weights}, {"1": -0.37})
    plain = -0.37
    for k, v in x.items():
        if k in weights:
            plain += v * weights[k]
    assert binary.probability(x) == learned.sigmoid(plain)
    multi = LinearModel("m", ["a", "b"], {"a": weights, "b": {k: -w for k, w in weights.items()}}, {"a": 0.1})
    expected = {"a": 0.1, "b": 0.0}
    for k, v in x.items():
        for c in ("a", "b"):
            if k in multi.weights[c]:
                expected[c] += v * multi.weights[c][k]
    assert multi._scores(x) == expected


def test_cached_map_computes_each_new_item_once_and_stays_bounded() -> None:
    calls: list[str] = []

    def upper(x: str) -> str:
        calls.append(x)
        return x.upper()

    cache: dict[str, str] = {"a": "A"}
    assert learned.cached_map(["a", "b", "b", "c", "b"], cache, upper, limit=2) == ["A", "B", "B", "C", "B"]
    # "b" computed once (then read from the cache), "c" computed but not kept: the cache is full
    assert calls == ["b", "c"] and cache == {"a": "A", "b": "B"}
    assert learned.cached_map(["c", "c"], cache, upper, limit=2) == ["C", "C"]
    assert calls == ["b", "c", "c", "c"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "z", "Q", "'", "0", "7", ".", " ", "-", "١", "１", "é", "熵", "a" * 45, "9" * 14]), max_size=30))
def test_word_tokens_are_the_plain_expression_s_tokens(pieces: list[str]) -> None:
    # learned._WORD starts with one character class (so re can skip to where a word starts);
    # it must find the very tokens of the plain alternation, long runs and Unicode digits too.
    text = "".join(pieces)
    assert word_tokens(text) == _plain_tokens(text)
