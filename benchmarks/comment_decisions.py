"""What the app would say on the dev threads (../shared/eval/dev/threads.jsonl): measured, not
asserted. For each thread: the analyzer's failure finding, the reporter's setup as parsed for
that framework, and the failure comment the app would compose (or why not).

    .venv/bin/python benchmarks/comment_decisions.py [--threads PATH] [--show N]

Prints: failure reports (gold and predicted), comments composed, settings found already on,
visible lines per comment, the language chosen, and parse/compose time per thread.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "eval" / "dev" / "threads.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=Path, default=DEFAULT)
    parser.add_argument("--show", type=int, default=1, help="print N composed comments")
    args = parser.parse_args()

    from analyzers.analyze import analyze_thread
    from analyzers.catalog import load_catalog
    from analyzers.language import detect_language
    from analyzers.setup_config import parse_setup
    from bot.speaking.quiet import MAINTAINERS
    from bot.speaking.render import compose_failure_comment, visible_lines

    cat = load_catalog()
    rows = [json.loads(line) for line in args.threads.open(encoding="utf-8") if line.strip()]
    counts: collections.Counter[str] = collections.Counter()
    lines: list[int] = []
    parse_times: list[float] = []
    compose_times: list[float] = []
    langs: collections.Counter[str] = collections.Counter()
    shown = 0
    for row in rows:
        fw = cat.framework_for_repo(row["repo"])
        gold = (row.get("labels") or {}).get("is_failure_report")
        analysis = analyze_thread(row)
        failure = analysis["failure"]
        counts["threads"] += 1
        counts["gold_failure"] += bool(gold)
        counts["predicted_failure"] += bool(failure["is_failure_report"])
        counts["predicted_and_gold"] += bool(gold and failure["is_failure_report"])
        start = time.perf_counter()
        setup = parse_setup(row.get("body") or "", fw.id) if fw else {"options": {}, "versions": {}}
        parse_times.append(time.perf_counter() - start)
        if setup["options"]:
            counts["threads_with_options"] += 1
        if any(o["enabled"] for o in setup["options"].values()):
            counts["threads_with_methods_on"] += 1
        if setup["versions"]:
            counts["threads_with_versions"] += 1
        labels = row.get("labels") or {}
        proposal = (analysis["proposal"]["is_proposal"] and not failure["is_failure_report"]
                    and analysis["proposal"]["confidence"] >= 0.7)
        if proposal and (row.get("author_association") or "").upper() not in MAINTAINERS:
            counts["rule_summaries"] += 1
            counts["rule_summaries_on_gold_proposals"] += bool(labels.get("is_proposal"))
        counts["gold_proposals"] += bool(labels.get("is_proposal"))
        if not (failure["is_failure_report"] and failure["confidence"] >= 0.7 and fw):
            continue
        lang = detect_language(row.get("title"), row.get("body"))
        langs[lang] += 1
        start = time.perf_counter()
        composed = compose_failure_comment(analysis, fw.id, setup=setup, lang=lang,
                                           public_url="https://tracker.example")
        compose_times.append(time.perf_counter() - start)
        if composed is None:
            counts["nothing_to_suggest"] += 1
            continue
        counts["comments"] += 1
        counts["comments_on_gold_failures"] += bool(gold)
        counts["comments_naming_settings_on"] += bool(composed.already_set)
        lines.append(len(visible_lines(composed.body)))
        if shown < args.show:
            shown += 1
            print(f"--- {row['id']} ({lang})\n{composed.body}")
    print(json.dumps(dict(counts), indent=1))
    print(f"languages of comments: {dict(langs)}")
    if lines:
        print(f"visible lines per comment: mean {statistics.mean(lines):.1f}, max {max(lines)}")
    print(f"parse_setup per thread: mean {1000 * statistics.mean(parse_times):.2f} ms, "
          f"max {1000 * max(parse_times):.2f} ms")
    if compose_times:
        print(f"compose per comment: mean {1000 * statistics.mean(compose_times):.2f} ms, "
              f"max {1000 * max(compose_times):.2f} ms")


if __name__ == "__main__":
    main()
