"""Title matching on a large paper pool: the project's index against a full rapidfuzz scan.

Builds a seeded pool of realistic, generated paper titles (word lists; titles share the
common vocabulary of the field, as real ones do), threads that cite some of them by their
exact or slightly altered title inside filler prose written from the same vocabulary, and
threads that cite nothing. Prints:

- per-thread time of `link_papers` with the index, and of `rapidfuzz.process.extractOne`
  over the whole pool (measured on a sample of threads), and their ratio (goal >= 200x);
- recall of cited titles (goal >= 0.98) and the false-link rate (goal <= 1%): wrong links
  over all links made, and the share of non-citing threads that got any link.

Then the same measurement as a user runs it: the whole `rltracker analyze --papers POOL
THREADS` command (a new process: start-up, reading the pool, every analyzer on every thread)
per thread against extractOne per thread (one process), three times: first with an empty
cache directory (the index is built and saved), then again (the saved index is read), then
again with `--jobs 2` (the analysis spread over 2 processes; its CPU time is summed over
them, so its CPU ratio is not better than one process's). The machine is shared and
noisy: the ratios compare figures taken in the same run, and CPU time is printed beside
wall time.

Measured, not asserted. Usage: python benchmarks/matching.py [--pool 100000] [--threads 5000]
[--baseline-sample 20] [--seed 7] [--no-command]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rapidfuzz import fuzz, process  # noqa: E402

from analyzers.papers import PaperIndex, link_papers  # noqa: E402

ADJ = """adaptive robust scalable efficient stable sparse dense hierarchical contrastive causal
implicit explicit latent variational bayesian probabilistic asynchronous distributed federated
multimodal multilingual compositional modular recurrent convolutional generative discriminative
self-supervised semi-supervised unsupervised offline online off-policy on-policy model-based
model-free curriculum differentiable lightweight interpretable faithful calibrated uncertain
verifiable trustworthy grounded long-context low-rank quantized mixed-precision regularized
decoupled preference-aligned reward-guided value-guided entropy-regularized group-relative
token-level sequence-level step-level process-supervised outcome-supervised iterative
bootstrapped amortized annealed tempered structured continual lifelong meta equivariant
graph-based retrieval-augmented tool-augmented agentic reflective deliberative""".split()

NOUN = """transformers agents critics rewards policies baselines estimators gradients advantages
verifiers tokenizers embeddings representations attention routers experts adapters prompts
demonstrations rollouts trajectories returns values priors posteriors objectives losses
penalties constraints bounds kernels features circuits heads layers modules planners
retrievers memories caches schedules curricula samplers filters buffers replays ensembles
distillation alignment exploration exploitation generalization calibration decoding search
inference reasoning planning feedback supervision pretraining finetuning quantization pruning
compression sparsity routing clipping normalization regularization""".split()

DOMAIN = """mathematical reasoning, code generation, theorem proving, dialogue systems, machine
translation, question answering, text summarization, instruction following, visual question
answering, robotic manipulation, autonomous driving, protein design, molecule generation,
program synthesis, web navigation, tool use, chain-of-thought reasoning, long-horizon
planning, multi-turn conversation, speech recognition, image captioning, video understanding,
recommendation, information retrieval, formal verification, symbolic regression, game playing,
embodied navigation, software engineering, scientific discovery, medical diagnosis, legal
reasoning, financial forecasting, multi-agent coordination, safe exploration, red teaming,
jailbreak defense, hallucination detection, fact verification, data selection""".replace(
    "\n", " "
).split(", ")

VERB = """Rethinking Revisiting Understanding Scaling Improving Stabilizing Accelerating Unifying
Learning Towards Beyond Demystifying Taming Bridging Mitigating Reducing Boosting Enhancing
Characterizing Benchmarking Exploring Leveraging Harnessing Decoupling Aligning Distilling
Compressing Controlling Calibrating Measuring Explaining""".split()

SYLL = "ka ro mi te su na vo li ze pa qu xi do re fa lu gi ho ne bi tra spe clo gra".split()


def _acronym(rng: random.Random) -> str:
    return "".join(
        rng.choice("ABCDEFGHIJKLMNOPRSTUVWXYZ") for _ in range(rng.randint(3, 5))
    ) + rng.choice(["", "", "", "-2", "++", "-R1"])


def _coined(rng: random.Random) -> str:
    return "".join(rng.choice(SYLL) for _ in range(rng.randint(2, 3))).capitalize()


def make_title(rng: random.Random) -> str:
    a, b = rng.sample(ADJ, 2)
    n1, n2 = rng.sample(NOUN, 2)
    d = rng.choice(DOMAIN)
    v = rng.choice(VERB)
    forms = [
        f"{v} {a.capitalize()} {n1.capitalize()} for {d.title()}",
        f"{_acronym(rng)}: {a.capitalize()} {n1.capitalize()} with {b.capitalize()} {n2.capitalize()}",
        f"{_coined(rng)}: {v} {n1.capitalize()} in {d.title()}",
        f"{a.capitalize()} {n1} and {b} {n2} for {d}",
        f"{v} {n1.capitalize()}: {a.capitalize()} {n2.capitalize()} via {_coined(rng)} {rng.choice(NOUN).capitalize()}",
        f"On the {n1.capitalize()} of {a.capitalize()} {n2.capitalize()} in {d.title()}",
        f"{_coined(rng)}-{_coined(rng)}: {a.capitalize()} {b.capitalize()} {n1.capitalize()}",
    ]
    return rng.choice(forms)


FILLER = [
    "We observe that {a} {n} behave differently when the batch size grows.",
    "The {n} look fine for the first hundred steps, then {a} {n2} start to drift.",
    "I tried {a} {n} on {d} but the reward curve stays flat.",
    "Would it make sense to add {a} {n} to the trainer, similar to existing {n2}?",
    "Our setup uses {a} {n2} and {b} {n} with eight GPUs.",
    "This is related to {d}, where {a} {n} were reported to help.",
    "Thanks for the quick reply, I will test {b} {n2} tomorrow.",
    "Maybe the issue is in how {n} interact with {a} {n2}.",
]


def filler(rng: random.Random, k: int) -> str:
    out = []
    for _ in range(k):
        a, b = rng.sample(ADJ, 2)
        n, n2 = rng.sample(NOUN, 2)
        out.append(rng.choice(FILLER).format(a=a, b=b, n=n, n2=n2, d=rng.choice(DOMAIN)))
    return " ".join(out)


def alter(title: str, rng: random.Random) -> str:
    """A slightly altered title, the way people retype one."""
    kind = rng.choice(["lower", "plural", "typo", "drop_word", "punct", "exact"])
    words = title.split()
    if kind == "lower":
        return title.lower()
    if kind == "plural":
        i = rng.randrange(len(words))
        w = words[i]
        words[i] = w[:-1] if w.endswith("s") and len(w) > 4 else w + "s"
        return " ".join(words)
    if kind == "typo":
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) > 4:
            j = rng.randrange(1, len(w) - 1)
            w = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        words[i] = w
        return " ".join(words)
    if kind == "drop_word" and len(words) > 6:
        small = [
            i
            for i, w in enumerate(words)
            if w.lower() in {"for", "with", "in", "of", "and", "via", "the"}
        ]
        if small:
            del words[rng.choice(small)]
            return " ".join(words)
    if kind == "punct":
        return title.replace(":", " -").replace("-", " ")
    return title


def make_threads(
    titles: list[str], n: int, rng: random.Random
) -> list[tuple[dict[str, Any], int | None]]:
    out = []
    for i in range(n):
        cited: int | None = None
        body = filler(rng, rng.randint(4, 12))
        if i % 3 != 2:  # two thirds cite a paper
            cited = rng.randrange(len(titles))
            t = titles[cited] if i % 3 == 0 else alter(titles[cited], rng)
            quote = rng.choice(
                ['"{}"', "*{}*", "{}", "the paper {}", "[{}](https://example.org/p)"]
            ).format(t)
            body = body + f" This follows {quote}. " + filler(rng, rng.randint(1, 4))
        thread = {
            "id": f"bench/repo#{i}",
            "repo": "bench/repo",
            "number": i,
            "kind": "issue",
            "title": filler(rng, 1)[:80],
            "body": body,
            "state": "open",
            "comments": [
                {"author": "u", "body": filler(rng, rng.randint(1, 5))}
                for _ in range(rng.randint(0, 3))
            ],
        }
        out.append((thread, cited))
    return out


def thread_text(thread: dict[str, Any]) -> str:
    return "\n".join([thread["title"], thread["body"], *(c["body"] for c in thread["comments"])])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pool", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=5000)
    ap.add_argument("--baseline-sample", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-command", action="store_true", help="skip the whole-command runs")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    seen: set[str] = set()
    titles: list[str] = []
    while len(titles) < args.pool:
        t = make_title(rng)
        if t.lower() not in seen:
            seen.add(t.lower())
            titles.append(t)
    # No arXiv ids: the benchmark is about titles, keyed by their normalised text.
    pool = [{"arxiv_id": None, "title": t, "aliases": [], "method": None} for t in titles]

    t0, c0 = time.perf_counter(), time.process_time()
    index = PaperIndex.build(pool, include_catalog=False)
    build_s, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    threads = make_threads(titles, args.threads, rng)

    # Index: every thread.
    times = []
    cpu_times = []
    tp = fn = wrong = links_made = noncite_with_link = noncite = 0
    for thread, cited in threads:
        t0, c0 = time.perf_counter(), time.process_time()
        got = link_papers(thread, index)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        got_titles = [p["title"] for p in got if p["how"] == "title"]
        links_made += len(got_titles)
        if cited is None:
            noncite += 1
            noncite_with_link += bool(got_titles)
            wrong += len(got_titles)
        else:
            ok = titles[cited] in got_titles
            tp += ok
            fn += not ok
            wrong += len([t for t in got_titles if t != titles[cited]])

    # Baseline: rapidfuzz over the whole pool, on a sample of threads.
    sample = threads[: args.baseline_sample]
    base_times = []
    base_cpu = []
    base_hits = 0
    base_cited = 0
    for thread, cited in sample:
        text = thread_text(thread).lower()
        t0, c0 = time.perf_counter(), time.process_time()
        best = process.extractOne(
            text, titles, scorer=fuzz.partial_ratio, processor=str.lower, score_cutoff=90
        )
        base_times.append(time.perf_counter() - t0)
        base_cpu.append(time.process_time() - c0)
        if cited is not None:
            base_cited += 1
            base_hits += bool(best and best[2] == cited)

    ours = statistics.mean(times)
    base = statistics.mean(base_times)
    cited_n = tp + fn
    print(
        f"pool: {len(titles):,} generated titles; index built in {build_s:.2f} s ({build_cpu:.2f} s CPU)"
    )
    print(
        f"threads: {len(threads)} ({cited_n} citing, {noncite} not citing); baseline sample {len(sample)}"
    )
    print(f"index per thread: mean {ours * 1000:.2f} ms, median {statistics.median(times) * 1000:.2f} ms, "
          f"p99 {sorted(times)[int(0.99 * (len(times) - 1))] * 1000:.2f} ms")  # fmt: skip
    print(f"rapidfuzz extractOne(partial_ratio) over the pool per thread: mean {base * 1000:.1f} ms, "
          f"median {statistics.median(base_times) * 1000:.1f} ms")  # fmt: skip
    print(f"speed ratio: {base / ours:.0f}x on means, "
          f"{statistics.median(base_times) / statistics.median(times):.0f}x on medians (goal >= 200x)")  # fmt: skip
    cpu_ours, cpu_base = statistics.mean(cpu_times), statistics.mean(base_cpu)
    print(f"CPU time per thread (robust to other load): index {cpu_ours * 1000:.2f} ms, "
          f"extractOne {cpu_base * 1000:.1f} ms, ratio {cpu_base / max(cpu_ours, 1e-9):.0f}x")  # fmt: skip
    print(f"recall: {tp}/{cited_n} = {tp / max(1, cited_n):.3f} (goal >= 0.98); "
          f"baseline top-1 recall on its sample: {base_hits}/{base_cited}")  # fmt: skip
    print(f"false links: {wrong}/{max(1, links_made)} links = {wrong / max(1, links_made):.2%} (goal <= 1%); "
          f"non-citing threads with a link: {noncite_with_link}/{noncite}")  # fmt: skip
    if not args.no_command:
        whole_command(pool, threads, titles, base, cpu_base)
    return 0


def _run_command(pool_path: Path, threads_path: Path, out_path: Path, cache: Path,
                 jobs: int = 1) -> tuple[float, float]:
    """(wall seconds, CPU seconds of it and its workers) of one `rltracker analyze --papers`
    command."""
    env = {**os.environ, "RLTRACKER_CACHE_DIR": str(cache),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bot.cli", "analyze", "--papers", str(pool_path),
         str(threads_path), "-o", str(out_path), "--jobs", str(jobs)],
        check=True, env=env,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def whole_command(pool: list[dict[str, Any]], threads: list[tuple[dict[str, Any], int | None]],
                  titles: list[str], base: float, cpu_base: float) -> None:
    with tempfile.TemporaryDirectory(prefix="rltracker-bench-") as tmp:
        d = Path(tmp)
        pool_path, threads_path, out_path = d / "pool.jsonl", d / "threads.jsonl", d / "out.jsonl"
        pool_path.write_text("".join(json.dumps(p) + "\n" for p in pool), encoding="utf-8")
        threads_path.write_text("".join(json.dumps(t) + "\n" for t, _ in threads), encoding="utf-8")
        n = len(threads)
        print("\nload average (1, 5, 15 min) before the command runs: "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        print(f"whole command: rltracker analyze --papers POOL THREADS, {n:,} threads, "
              f"{len(pool):,} papers, start-up included (extractOne per thread from above)")
        one_process = None
        for label, jobs in (("first run, empty cache (index built and saved)", 1),
                            ("second run, saved index read", 1),
                            ("third run, saved index read, --jobs 2 (2 processes)", 2)):
            wall, cpu = _run_command(pool_path, threads_path, out_path, d / "cache", jobs)
            recall = _command_recall(out_path, threads, titles)
            same = ""
            if jobs == 1:
                one_process = out_path.read_bytes()
            else:
                same = "; same bytes as one process: " + (
                    "yes" if out_path.read_bytes() == one_process else "NO")
            print(f"  {label}: {wall:.2f} s ({cpu:.2f} s CPU), {wall / n * 1000:.2f} ms per thread; "
                  f"speed-up {base / (wall / n):.0f}x wall, {cpu_base / (cpu / n):.0f}x CPU "
                  f"(goal >= 200x); title recall {recall:.3f}{same}")
        print("  load average (1, 5, 15 min) after the runs: "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


def _command_recall(out_path: Path, threads: list[tuple[dict[str, Any], int | None]],
                    titles: list[str]) -> float:
    rows = [json.loads(x) for x in out_path.read_text(encoding="utf-8").splitlines()]
    hits = cited = 0
    for row, (_thread, c) in zip(rows, threads, strict=True):
        if c is None:
            continue
        cited += 1
        hits += any(p.get("how") == "title" and p.get("title") == titles[c]
                    for p in row.get("papers") or [])
    return hits / max(1, cited)


if __name__ == "__main__":
    raise SystemExit(main())
