"""Why concerns are missed on threads nobody tuned on (concern66): a diagnosis.

    python benchmarks/concern_diagnosis.py [--sets c d e f] [--ids]

The grouped-CV predictions of the review models (each fold fitted as `training.review.run`
fits it, thresholds chosen on the pooled CV probabilities, so the counts reproduce
`evaluate.py --only review`) and the shipped analyzer on the held-out written review sets
(default c, d, e, f: scored before only as figures; never the sealed slice, which is in no fold
and is not read here). The written sets are read as counts only: no text of theirs is printed.

Printed, per (thread, concern kind):
- per kind: gold, true positives, false positives, false negatives, cv7 / cv_all / held out;
- for every missed concern, where the analyzer could have read it: a reading of the kind
  (strong, weak, request+topic pair, request sentence, remark on a file) in someone else's
  prose (what the concern model is given), only a topic word of the kind there, only in the
  proposer's words (opening post or comments), only in bots' words, only in quoted lines or
  code blocks the analyzer drops, nowhere, or no other human wrote anything at all;
- for found and missed concerns read in others' prose: who said it first (a frequent
  commenter of the repository, i.e. a likely maintainer: 3 or more threads of that repository
  in train + dev with a comment of theirs; or another user) and where (the first other
  comment, a remark on a changed file, a later comment);
- for false concerns: which reading fired, and where;
- `--variants`: concern-model variants refitted per fold (the state model as shipped), scored
  pooled and at thresholds chosen inside each fold, then `--nested`: the variant chosen inside
  each outer fold by an inner grouped CV over its training threads (concern F1 at the inner
  thresholds; ties to the shipped form), the honest figure for a choice among variants;
- `--ids`: the cv_all missed and false (thread, kind) pairs by id (train and dev only; the
  written sets' ids are never listed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analyzers import review as rv  # noqa: E402
from analyzers.nlp import lemma_hashes, nlp  # noqa: E402
from training import SEED  # noqa: E402
from training import review as tr  # noqa: E402
from training.cv import cross_val_predict  # noqa: E402
from training.data import Example, load_examples  # noqa: E402
from training.fit import fit_linear  # noqa: E402

WRITTEN = ROOT / "benchmarks" / "review_written"
SHORT = {
    "design_or_interface": "design", "tests_or_docs": "tests_docs", "maintenance_burden": "maint",
    "evidence": "evidence", "placement": "placement", "demand": "demand",
    "already_covered": "covered", "other": "other",
}  # fmt: skip
READING_ORDER = ("strong", "file", "pair", "req", "weak")  # the clearest reading first
MAINTAINER_THREADS = (
    3  # a login commenting on this many threads of a repository: likely a maintainer
)


def readings(seg: rv._Segment, kind: str, prose: str | None = None) -> list[str]:
    """The readings of `kind` in one segment's prose (or in `prose` read as that segment's)."""
    rules = rv._rules()
    found = rv._scan(seg.prose if prose is None else prose, rules)
    out = [
        name
        for name, kinds in (
            ("strong", found.concerns),
            ("weak", found.weak_seen - found.concerns),
            ("pair", found.paired),
            ("req", found.requested),
        )  # fmt: skip
        if kind in kinds
    ]
    if prose is None and kind in rv._review_comment_concerns(seg, found):
        out.append("file")
    return out


def topic_word(text: str, kind: str) -> bool:
    """A topic word of the kind (request_topics) anywhere in `text`, no request needed."""
    topics = rv._rules().topics.get(kind)
    if not topics or not text.strip():
        return False
    doc = nlp().tokenizer(rv._clean(text[: rv._SCAN_CHARS]))
    lowers = [t.lower for t in doc]
    return any(h in topics for h in lemma_hashes(lowers))


def position(seg: rv._Segment, first_other: rv._Segment | None) -> str:
    if seg.path is not None:
        return "remark on a file"
    return "first other comment" if seg is first_other else "later comment"


def where(thread: Mapping[str, Any], kind: str, maintainers: set[str]) -> dict[str, Any]:
    """Where the kind can be read in the thread (see the module doc)."""
    rules = rv._rules()
    segs = rv._segments(thread, rules)
    others = [s for s in segs if not s.is_author and not s.is_bot]
    first_other = others[0] if others else None
    out: dict[str, Any] = {
        "others": len(others),
        "remarks": sum(s.path is not None for s in others),
    }
    best = len(READING_ORDER)
    for seg in others:
        got = readings(seg, kind)
        if got:
            best = min([best] + [READING_ORDER.index(g) for g in got])
            out["reading"] = READING_ORDER[best]
            out.setdefault("place", "read in others' prose")
            out.setdefault("who", "maintainer?" if seg.login in maintainers else "other user")
            out.setdefault("pos", position(seg, first_other))
    if "place" in out:
        return out
    if not others:
        out["place"] = "no other human wrote"
        return out
    if any(topic_word(s.prose, kind) for s in others):
        out["place"] = "topic word only, others' prose"
        return out
    post = rv._Segment(None, True, False, rv._prose(str(thread.get("body") or ""))[0], "")
    if readings(post, kind) or any(readings(s, kind) for s in segs if s.is_author and not s.is_bot):
        out["place"] = "only in the proposer's words"
    elif any(readings(s, kind) for s in segs if s.is_bot):
        out["place"] = "only in bots' words"
    elif any(readings(s, kind, s.raw) for s in others if s.raw != s.prose):
        out["place"] = "only in quotes or code others wrote"
    else:
        out["place"] = "no reading anywhere"
    return out


def fit_rare_shared(train: list[Example], seed: int, shaped: frozenset[str]) -> rv.ReviewModels:
    """Variant: a rare kind's own readings (strong, weak, pair, req, file, strong_elsewhere)
    weigh only through the weights shared across kinds, none of their own: a kind with 3-12
    positive threads borrows how much a reading is worth instead of fitting it."""
    base = tr.fit_models(train, seed, shaped)
    rows = tr.labelled(train)
    X: list[dict[str, float]] = []
    y: list[bool] = []
    for e in rows:
        ev, gold = tr._evidence(e), tr._gold_concerns(e)
        for kind in rv.CONCERNS:
            x = tr.concern_row(ev, kind, kind in shaped)
            if kind not in shaped:
                x = {
                    k: v
                    for k, v in x.items()
                    if not (k.startswith(kind + "|") and k != kind + "|bias")
                }
            X.append(x)
            y.append(kind in gold)
    concerns = fit_linear(
        X, y, "review_concerns", C=tr.C_CONCERNS, seed=seed, min_df=tr.MIN_DF, class_weight=None
    )
    concerns.threshold = 0.5
    return rv.ReviewModels(base.state, concerns)


VARIANTS = {
    "shipped": lambda t, shaped: tr.fit_models(t, SEED, shaped),
    "rare kinds: shared weights only": lambda t, shaped: fit_rare_shared(t, SEED, shaped),
}


def f1_of(rows: list[Example], got: Mapping[str, set[str]]) -> tuple[float, int, int, int]:
    tp, fp, fn = counts([(tr._gold_concerns(e), got[e.id]) for e in rows])
    a, b, c = sum(tp.values()), sum(fp.values()), sum(fn.values())
    return (2 * a / (2 * a + b + c) if a else 0.0), a, b, c


def run_variants(rows: list[Example], shaped: frozenset[str], nested: bool) -> None:
    from training.cv import grouped_folds

    folds = grouped_folds(rows)
    cv_rows = [e for f in folds for e in f.test]
    fw_ids = {e.id for f in folds if f.framework for e in f.test}
    outer: dict[str, tuple[dict[str, Any], dict[str, set[str]]]] = {}
    print(
        "\n| variant | pooled cv7 | pooled cv_all (tp / fp / fn) | thresholds inside each fold, cv_all |"
    )
    print("|---|---|---|---|")
    for name, fit in VARIANTS.items():
        preds, _ = cross_val_predict(rows, lambda t, fit=fit: fit(t, shaped), tr.predict)
        common, own = tr.choose_thresholds(cv_rows, preds)
        limits = {k: own.get(k, common) for k in rv.CONCERNS}
        got = {e.id: tr.concerns_at(preds[e.id], limits) for e in cv_rows}
        inside = (
            tr.nested_concern_sets(cv_rows, lambda t, fit=fit: fit(t, shaped), preds)
            if nested
            else got
        )
        outer[name] = (preds, inside)
        f7 = f1_of([e for e in cv_rows if e.id in fw_ids], got)
        fa, fi = f1_of(cv_rows, got), f1_of(cv_rows, inside)
        print(
            f"| {name} | {f7[0]:.3f} | {fa[0]:.3f} ({fa[1]} / {fa[2]} / {fa[3]}) | "
            f"{fi[0]:.3f} ({fi[1]} / {fi[2]} / {fi[3]}) |"
            if nested
            else "- |"
        )
    if not nested:
        return
    # The choice among variants made inside each outer fold: inner grouped CV on the fold's
    # training threads, concern F1 at thresholds chosen on those inner predictions.
    chosen: dict[str, set[str]] = {}
    picks: Counter[str] = Counter()
    for fold in folds:
        best = (-1.0, "")
        for name, fit in VARIANTS.items():
            inner, _ = cross_val_predict(fold.train, lambda t, fit=fit: fit(t, shaped), tr.predict)
            inner_rows = [e for e in fold.train if e.id in inner]
            common, own = tr.choose_thresholds(inner_rows, inner)
            limits = {k: own.get(k, common) for k in rv.CONCERNS}
            score = f1_of(
                inner_rows, {e.id: tr.concerns_at(inner[e.id], limits) for e in inner_rows}
            )[0]
            if score > best[0] + 1e-9:
                best = (score, name)
        picks[best[1]] += 1
        for e in fold.test:
            chosen[e.id] = outer[best[1]][1][e.id]
    fn_ = f1_of(cv_rows, chosen)
    print(
        f"| **nested choice** ({', '.join(f'{n} x{c}' for n, c in picks.items())}) | - | - | "
        f"{fn_[0]:.3f} ({fn_[1]} / {fn_[2]} / {fn_[3]}) |"
    )


def likely_maintainers(examples: Iterable[Example]) -> dict[str, set[str]]:
    """Repository -> logins (not the thread's author) with comments on MAINTAINER_THREADS or
    more of its threads in train + dev (every thread, labelled for review or not)."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for e in examples:
        author = rv._norm_login(e.thread.get("author"))
        logins = {
            rv._norm_login(c.get("author"))
            for c in e.thread.get("comments") or []
            if isinstance(c, Mapping)
        }
        for login in logins - {author, None}:
            seen[e.repo][login] += 1  # type: ignore[index]
    return {
        repo: {who for who, n in c.items() if n >= MAINTAINER_THREADS} for repo, c in seen.items()
    }


def table(title: str, head: list[str], rows: list[list[Any]]) -> None:
    print(f"\n{title}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


def counts(
    pairs: list[tuple[set[str], set[str]]],
) -> tuple[Counter[str], Counter[str], Counter[str]]:
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for gold, got in pairs:
        for k in rv.CONCERNS:
            tp[k] += k in gold and k in got
            fp[k] += k in got and k not in gold
            fn[k] += k in gold and k not in got
    return tp, fp, fn


def f1(tp: int, fp: int, fn: int) -> str:
    return f"{2 * tp / (2 * tp + fp + fn):.3f}" if tp else "0.000"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", nargs="*", default=["c", "d", "e", "f"])
    ap.add_argument("--variants", action="store_true", help="score the concern-model variants")
    ap.add_argument("--nested", action="store_true", help="with --variants: nested grouped CV")
    ap.add_argument(
        "--refit",
        action="store_true",
        help="score the written sets with models refitted as `make train` fits them "
        "(for a vocabulary changed since the shipped files), not the shipped files",
    )
    ap.add_argument(
        "--ids", action="store_true", help="list cv_all misses and false concerns by id"
    )
    args = ap.parse_args(argv)

    examples = load_examples()
    rows = tr.labelled(examples)
    shaped = tr.shaped_kinds(rows)
    if args.variants:
        run_variants(rows, shaped, args.nested)
        return 0
    cv_preds, fold_of = cross_val_predict(
        rows, lambda t: tr.fit_models(t, SEED, shaped), tr.predict
    )
    cv_rows = [e for e in rows if e.id in cv_preds]
    common, own = tr.choose_thresholds(cv_rows, cv_preds)
    limits = {k: own.get(k, common) for k in rv.CONCERNS}
    got_cv = {e.id: tr.concerns_at(cv_preds[e.id], limits) for e in cv_rows}
    fw = [e for e in cv_rows if not fold_of[e.id].startswith("related")]

    models = tr.run(examples).models if args.refit else None
    held: list[tuple[str, dict[str, Any], set[str]]] = []  # (set, thread, got)
    for name in args.sets:
        with (WRITTEN / name / "threads.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    if "review_state" in (row.get("labels") or {}):
                        held.append((name, row, set(rv.explain_review(row, models).concerns)))

    def gold(labels: Mapping[str, Any]) -> set[str]:
        return set(labels.get("concerns") or [])

    cuts = {
        "cv7": [(tr._gold_concerns(e), got_cv[e.id]) for e in fw],
        "cv_all": [(tr._gold_concerns(e), got_cv[e.id]) for e in cv_rows],
        "held out": [(gold(r["labels"]), g) for _, r, g in held],
    }
    per = {name: counts(p) for name, p in cuts.items()}
    head = ["kind"] + [f"{n} gold / tp / fp / fn / F1" for n in cuts]
    body = []
    for k in (*rv.CONCERNS, None):
        cells = [SHORT[k] if k else "**all**"]
        for name in cuts:
            tp, fp, fn = per[name]
            a, b, c = (
                (tp[k], fp[k], fn[k])
                if k
                else (sum(tp.values()), sum(fp.values()), sum(fn.values()))
            )
            cells.append(f"{a + c} / {a} / {b} / {c} / {f1(a, b, c)}")
        body.append(cells)
    print(
        f"thresholds (pooled CV): common {common:.2f}; own "
        + ", ".join(f"{SHORT[k]} {v:.2f}" for k, v in own.items())
    )
    table("Per kind (gold = tp + fn)", head, body)
    by_set = Counter()
    for name, r, g in held:
        tp, fp, fn = counts([(gold(r["labels"]), g)])
        by_set[(name, "tp")] += sum(tp.values())
        by_set[(name, "fp")] += sum(fp.values())
        by_set[(name, "fn")] += sum(fn.values())
    table("Held-out sets (" + ("models refitted as make train" if args.refit else "shipped analyzer") + ")", ["set", "tp / fp / fn", "F1"], [
        [n, f"{by_set[(n, 'tp')]} / {by_set[(n, 'fp')]} / {by_set[(n, 'fn')]}",
         f1(by_set[(n, "tp")], by_set[(n, "fp")], by_set[(n, "fn")])] for n in args.sets])  # fmt: skip

    maint_of = likely_maintainers(examples)
    located: dict[str, list[tuple[str, str, str, dict[str, Any]]]] = defaultdict(
        list
    )  # cut -> (id, kind, outcome, where)
    for e in cv_rows:
        g, p = tr._gold_concerns(e), got_cv[e.id]
        for k in g | p:
            outcome = "tp" if k in g and k in p else "fn" if k in g else "fp"
            located["cv_all"].append(
                (e.id, k, outcome, where(e.thread, k, maint_of.get(e.repo, set())))
            )
    for name, r, p in held:
        g = gold(r["labels"])
        for k in g | p:
            outcome = "tp" if k in g and k in p else "fn" if k in g else "fp"
            located["held out"].append((name, k, outcome, where(r, k, set())))

    # Kind confusion: a false concern beside a missed one in the same thread (the concern read
    # as another kind), a false one in a thread with other gold concerns found, or alone.
    for cut, pairs in (("cv_all", cuts["cv_all"]), ("held out", cuts["held out"])):
        confused: Counter[tuple[str, str]] = Counter()
        for g, p in pairs:
            missed, false = g - p, p - g
            for k in false:
                if missed:
                    confused[
                        (SHORT[k], "instead of " + "+".join(sorted(SHORT[m] for m in missed)))
                    ] += 1
                else:
                    confused[
                        (SHORT[k], "beside gold found" if g else "thread with no gold concern")
                    ] += 1
        print(
            f"\n{cut}: false concerns, what the thread's gold was: "
            + "; ".join(
                f"{k} {why} {n}"
                for (k, why), n in sorted(confused.items(), key=lambda x: (-x[1], x[0]))
            )
        )
        lone = sum(len(g - p) for g, p in pairs if not (p - g))
        print(
            f"{cut}: missed concerns with no false one in the same thread: {lone} of {sum(len(g - p) for g, p in pairs)}"
        )

    places = ["read in others' prose", "topic word only, others' prose", "only in the proposer's words",
              "only in bots' words", "only in quotes or code others wrote", "no reading anywhere",
              "no other human wrote"]  # fmt: skip
    for cut in ("cv_all", "held out"):
        items = located[cut]
        rows_out = []
        for place in places:
            cells = [place]
            for outcome in ("tp", "fn"):
                cells.append(sum(1 for _, _, o, w in items if o == outcome and w["place"] == place))
            fn_kinds = Counter(
                SHORT[k] for _, k, o, w in items if o == "fn" and w["place"] == place
            )
            cells.append(", ".join(f"{k} {n}" for k, n in fn_kinds.most_common()) or "-")
            rows_out.append(cells)
        table(
            f"{cut}: where the gold concern can be read (found / missed)",
            ["where", "found", "missed", "missed by kind"],
            rows_out,
        )

    for cut in ("cv_all", "held out"):
        items = [x for x in located[cut] if x[3]["place"] == "read in others' prose"]
        rows_out = []
        for key in ("who", "pos", "reading"):
            values = sorted({w[key] for _, _, _, w in items})
            for v in values:
                rows_out.append(
                    [key, v]
                    + [
                        sum(1 for _, _, o, w in items if o == outcome and w[key] == v)
                        for outcome in ("tp", "fn", "fp")
                    ]
                )
        table(f"{cut}: concerns with a reading in others' prose: first reading's speaker and place, clearest reading",
              ["", "value", "found", "missed", "false"], rows_out)  # fmt: skip

    for cut in ("cv_all", "held out"):
        items = [x for x in located[cut] if x[3]["place"] == "read in others' prose"]
        rows_out = [[SHORT[k]] + [", ".join(f"{r} {n}" for r, n in Counter(
            w["reading"] for _, kk, o, w in items if kk == k and o == outcome).most_common()) or "-"
            for outcome in ("tp", "fn", "fp")] for k in rv.CONCERNS]  # fmt: skip
        table(
            f"{cut}: clearest reading of the kind in others' prose, per kind",
            ["kind", "found", "missed", "false"],
            rows_out,
        )

    for cut in ("cv_all", "held out"):
        items = located[cut]
        fp_places = Counter(w["place"] for _, _, o, w in items if o == "fp")
        print(
            f"\n{cut}: false concerns by where the kind is read: "
            + ", ".join(f"{p} {n}" for p, n in fp_places.most_common())
        )
        shape = Counter()
        for _, _, o, w in items:
            if o == "fn":
                shape["remarks on files" if w["remarks"] else "no remark on a file"] += 1
                shape[f"others {min(w['others'], 4)}{'+' if w['others'] >= 4 else ''}"] += 1
        print(
            f"{cut}: missed concerns' threads: "
            + ", ".join(f"{k} {n}" for k, n in sorted(shape.items()))
        )

    if args.ids:
        print("\ncv_all missed and false (thread, kind), with where:")
        for tid, k, o, w in sorted(located["cv_all"], key=lambda x: (x[2], x[3]["place"], x[0])):
            if o != "tp":
                print(
                    f"  {o} {SHORT[k]:<10} {tid:<40} [{fold_of[tid]}] {w['place']}; {w.get('who', '')} {w.get('pos', '')} {w.get('reading', '')}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
