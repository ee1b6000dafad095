"""Contribution-rule extraction: the seven frameworks' files (../shared) must yield every fact
of rules.md, checked as topic + key phrase (our own encoding of each fact, not its text), and
unrelated projects' files must give a sensible summary."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from analyzers import rules
from analyzers.rules import format_rules_markdown, summarize_rules
from analyzers.rules_text import file_kind, markdown_segments
from bot.cli.rules import summary_for
from bot.speaking.contribution import load_folder

# framework -> [(topic, [key phrases, any of which the statement must contain (lower case)])]
EXPECTED: dict[str, list[tuple[str, list[str]]]] = {
    "verl": [
        ("tests", ["explain why"]),
        ("tests", ["experiments"]),
        ("docs", ["user-facing"]),
        ("lint", ["pre-commit hooks"]),
        ("lint", ["autogen-trainer-cfg"]),
        ("lint", ["ruff"]),
        ("lint", ["every pr"]),
        ("pr-title", ["[{modules}] {type}: {description}"]),
        ("pr-title", ["`feat`"]),
        ("pr-title", ["[breaking]"]),
        ("pr-title", ["checked by ci"]),
        ("pr-title", ["placeholder"]),
        ("sign-off", ["signed-off-by"]),
        ("algorithms", ["verl-recipe"]),
        ("algorithms", ["registered by name"]),
        ("algorithms", ["submodule"]),
        ("issue-first", ["similar prs", "existing issues and prs"]),
        ("templates", ["paper and the code"]),
        ("ai-policy", ["duplicate"]),
        ("ai-policy", ["tiny edits"]),
        ("ai-policy", ["purely by a coding agent"]),
        ("ai-policy", ["disclose"]),
        ("ai-policy", ["which tests were run"]),
        ("ai-policy", ["ban"]),
        ("review", ["/verl/trainer"]),
        ("review", ["deprioritise"]),
        ("ci", ["github actions"]),
        ("ci", ["path patterns"]),
        ("ci", ["workload"]),
        ("ci", ["ci-request"]),
        ("stale", ["no stale"]),
        ("templates", ["diagnose.py"]),
        ("templates", ["reproduction"]),
        ("templates", ["blank issues are allowed"]),
    ],
    "trl": [
        ("tests", ["existing tests must pass"]),
        ("tests", ["high-coverage"]),
        ("tests", ["new tests were written"]),
        ("docs", ["documentation was updated"]),
        ("docs", ["docstring format"]),
        ("paper", ["paper index"]),
        ("paper", ["reviewers check"]),
        ("paper", ["huggingface.co/papers"]),
        ("lint", ["ruff"]),
        ("lint", ["copyright"]),
        ("lint", ["check code quality"]),
        ("algorithms", ["incremental"]),
        ("algorithms", ["opt-in"]),
        ("algorithms", ["original paper"]),
        ("algorithms", ["trl.experimental"]),
        ("algorithms", ["prototyped outside"]),
        ("algorithms", ["may change or disappear"]),
        ("algorithms", ["main code must stay stable"]),
        ("algorithms", ["less likely to be implemented"]),
        ("issue-first", ["link the paper"]),
        ("issue-first", ["discussed (or agreed) in an issue"]),
        ("review", ["closed without review"]),
        ("review", ["first-time contributors must fill"]),
        ("review", ["20 characters"]),
        ("review", ["anyone in the community"]),
        ("review", ["no codeowners"]),
        ("ai-policy", ["first-time contributors are not reviewed"]),
        ("ai-policy", ["disclose"]),
        ("code-style", ["word-for-word"]),
        ("ci", ["experimental"]),
        ("other", ["5 months", "5 minor releases"]),
        ("stale", ["removed in 2024"]),
        ("templates", ["trl env"]),
        ("templates", ["5 required checklist"]),
        ("templates", ["paper and the code"]),
    ],
    "openrlhf": [
        ("lint", ["pre-commit install"]),
        ("lint", ["automatic fix"]),
        ("tests", ["pytest"]),
        ("tests", ["compileall"]),
        ("tests", ["bash -n"]),
        ("code-style", ["over-complex"]),
        ("code-style", ["prefer deleting"]),
        ("code-style", ["3+ real call sites"]),
        ("code-style", ["performance knobs"]),
        ("code-style", ["cannot trigger"]),
        ("code-style", ["minimal diff"]),
        ("templates", ["no pr template"]),
        ("algorithms", ["no recipe folder"]),
        ("ci", ["wheels"]),
        ("stale", ["no stale"]),
    ],
    "nemo-rl": [
        ("tests", ["new features need new tests"]),
        ("tests", ["existing tests must pass"]),
        ("tests", ["locally"]),
        ("docs", ["design document"]),
        ("docs", ["algorithm"]),
        ("lint", ["ruff"]),
        ("lint", ["pyrefly"]),
        ("lint", ["uv run --group dev pre-commit install"]),
        ("code-style", [".claude/skills"]),
        ("code-style", ["arbitrary defaults"]),
        ("sign-off", ["signed-off-by"]),
        ("sign-off", ["git commit -s"]),
        ("sign-off", ["not accepted"]),
        ("sign-off", ["required status check"]),
        ("pr-title", ["conventional commits"]),
        ("pr-title", ["[area]"]),
        ("pr-title", ["semantic-pull-request"]),
        ("lint", ["copyright"]),
        ("algorithms", ["nemo_rl/algorithms"]),
        ("algorithms", ["nightly test"]),
        ("issue-first", ["link the issue"]),
        ("templates", ["deleted"]),
        ("review", ["rl_maintainers"]),
        ("review", ["rl_reviewers_algo"]),
        ("ci", ["adds a label"]),
        ("ci", ["ci:l0"]),
        ("ci", ["/ok to test"]),
        ("ci", ["fork"]),
        ("stale", ["30 days"]),
        ("stale", ["closed 7 days later"]),
        ("stale", ["prs are marked stale after 14 days"]),
        ("stale", ["community-request"]),
        ("stale", ["daily"]),
    ],
    "roll": [
        ("general", ["no contributing file"]),
        ("code-style", ["type hints"]),
        ("code-style", ["docstrings"]),
        ("code-style", ["119"]),
        ("code-style", ["module structure"]),
        ("code-style", ["hard-coded"]),
        ("code-style", ["3.10"]),
        ("lint", ["isort"]),
        ("lint", ["no workflow runs it"]),
        ("tests", ["test changes often"]),
        ("ci", ["npu"]),
        ("other", ["publish"]),
    ],
    "slime": [
        ("scope", ["limited to bug fixes"]),
        ("scope", ["general-purpose"]),
        ("scope", ["tests or a clear reproduction"]),
        ("scope", ["benchmarks"]),
        ("scope", ["refactoring"]),
        ("scope", ["design / abstraction"]),
        ("scope", ["cannot be clearly verified"]),
        ("scope", ["independent of the rl framework"]),
        ("scope", ["megatron"]),
        ("scope", ["feature requests"]),
        ("templates", ["blank issues are disabled"]),
        ("templates", ["bug report, question"]),
        ("templates", ["discussions"]),
        ("templates", ["steps to reproduce"]),
        ("templates", ["may be closed"]),
        ("templates", ["read contributing"]),
        ("ci", ["every pr"]),
        ("ci", ["adds a label"]),
        ("ci", ["run-ci-megatron"]),
        ("ci", ["run-ci-changed"]),
        ("ci", ["num_gpus = 0"]),
        ("lint", ["/run-lint"]),
        ("algorithms", ["separate repository"]),
        ("algorithms", ["function paths"]),
        ("stale", ["no stale"]),
    ],
    "areal": [
        ("general", ["areal-project/community"]),
        ("issue-first", ["draft pr"]),
        ("issue-first", ["one of the templates"]),
        ("issue-first", ["backward compatible"]),
        ("tests", ["new features need new tests"]),
        ("tests", ["existing tests must pass"]),
        ("tests", ["multi_gpu"]),
        ("tests", ["two gpus"]),
        ("ci", ["not slow or ci"]),
        ("docs", ["build_all.sh"]),
        ("docs", ["english and chinese"]),
        ("lint", ["clang-format"]),
        ("lint", ["mdformat"]),
        ("lint", ["required status check"]),
        ("pr-title", ["commit messages must follow conventional commits"]),
        ("sign-off", ["signed-off-by"]),
        ("sign-off", ["cannot be merged"]),
        ("sign-off", ["instead of a cla"]),
        ("sign-off", ["inbound = outbound"]),
        ("review", ["at least two approvals"]),
        ("review", ["code owner"]),
        ("review", ["trivial changes"]),
        ("review", ["2 approving reviews"]),
        ("review", ["dismissed when new commits are pushed"]),
        ("review", ["last push"]),
        ("review", ["review threads resolved"]),
        ("review", ["linear history"]),
        ("decisions", ["lazy consensus"]),
        ("decisions", ["7 days"]),
        ("decisions", ["simple majority"]),
        ("ci", ["safe-to-test"]),
        ("ci", ["remove the label"]),
        ("ai-policy", ["/create-pr"]),
        ("ai-policy", ["/review-pr"]),
        ("algorithms", ["ppo actor config"]),
        ("stale", ["after 14 days"]),
        ("stale", ["closed 16 days later"]),
        ("stale", ["never closed"]),
        ("stale", ["pinned"]),
        ("stale", ["assignee"]),
        ("templates", ["blank issues are disabled"]),
        ("templates", ["bug, doc, feature, question, refactor"]),
        ("templates", ["discussions"]),
        ("templates", ["docker image"]),
        ("templates", ["random seeds"]),
    ],
}

# Topics rules.md says no file states (checked through `not_stated`).
NOT_STATED = {
    "verl": ["sign-off", "issue-first"],
    "trl": ["sign-off"],
    "openrlhf": ["docs", "sign-off", "issue-first", "review"],
    "nemo-rl": ["issue-first"],
    "roll": ["tests", "docs", "sign-off", "issue-first", "algorithms"],
    "slime": ["docs", "sign-off", "issue-first", "review"],
    "areal": [],
}


def _missing(summary: dict, expected: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    missing = []
    for topic, phrases in expected:
        statements = [f["statement"].lower() for f in summary["facts"] if f["topic"] == topic]
        if not any(p.lower() in s for s in statements for p in phrases):
            missing.append((topic, phrases))
    return missing


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rules_command_states_every_fact_of_rules_md(shared_dir: Path, name: str) -> None:
    folder = shared_dir / "data" / "frameworks" / name
    summary = summary_for(str(folder))  # the `rltracker rules PATH` logic
    assert summary["framework"] == name
    assert _missing(summary, EXPECTED[name]) == []
    for topic in NOT_STATED[name]:
        assert topic in summary["not_stated"], topic
    # Every fact names its source file (observed facts: the path that shows them).
    assert all(f["source"] or f["rule"] == "no_contributing" for f in summary["facts"])
    markdown = format_rules_markdown(summary)
    assert markdown.startswith("### Contribution rules")


def test_snapshot_paths_are_repository_paths(shared_dir: Path) -> None:
    files = load_folder(shared_dir / "data" / "frameworks" / "areal")
    assert ".github/PULL_REQUEST_TEMPLATE.md" in files
    assert ".github/workflows/stale-issues.yml" in files
    # CONTRIBUTING.md of two repositories: the community copy is areal-project/community's,
    # keyed as the live fetch keys a followed pointer (not a community/ folder of AReaL)
    assert "CONTRIBUTING.md" in files and "areal-project/community/CONTRIBUTING.md" in files
    assert "community/CONTRIBUTING.md" not in files


def test_rules_command_by_framework_name_uses_snapshot(shared_dir: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli.rules import rules_command
    from bot.config import Settings

    settings = Settings.from_env({}, database_url=f"sqlite+aiosqlite:///{tmp_path}/none.db")
    summary = summary_for("trl", settings=settings, shared=shared_dir / "data" / "frameworks")
    assert summary["source"] == "snapshot" and summary["repo"] == "huggingface/trl"
    assert not (tmp_path / "none.db").exists()  # looking up the cache created nothing

    class Args:
        target = str(shared_dir / "data" / "frameworks" / "slime")
        json = True

    assert rules_command(Args()) == 0  # type: ignore[arg-type]
    printed = json.loads(capsys.readouterr().out)
    assert printed["framework"] == "slime" and printed["facts"]


UNRELATED_CONTRIBUTING = """\
# Contributing to Quillpad

Thanks for helping with Quillpad, a small note-taking web app.

## Before you start

For anything bigger than a small bug fix, please open an issue first so we can agree on the
approach before you write code.

## Legal

All contributors must sign our Contributor License Agreement (CLA) before we can merge a
pull request. The CLA bot will comment on your first PR with a link.

## Development

* Run `npm test` and make sure all tests pass before opening a PR.
* Add tests for new features; we will not merge features without tests.
* Update the documentation in `docs/` when you change user-facing behaviour.
* We use pre-commit with black and flake8. Install the hooks with:

```
pre-commit install
```

## Pull request titles

PR titles must follow Conventional Commits, e.g. `feat: add tag search`.

## Review

Every pull request needs at least one approval from a maintainer. Maintainers are listed
in CODEOWNERS.
"""


def test_unrelated_project_gets_a_sensible_summary() -> None:
    summary = summarize_rules({"CONTRIBUTING.md": UNRELATED_CONTRIBUTING})
    expected = [
        ("issue-first", ["open an issue"]),
        ("sign-off", ["contributor license agreement"]),
        ("tests", ["existing tests must pass"]),
        ("tests", ["new features need new tests"]),
        ("docs", ["user-facing"]),
        ("lint", ["pre-commit"]),
        ("lint", ["black"]),
        ("lint", ["`pre-commit install`"]),
        ("pr-title", ["conventional commits"]),
        ("review", ["at least one approval"]),
    ]
    assert _missing(summary, expected) == []
    rule_ids = {f["rule"] for f in summary["facts"]}
    # Nothing RL- or framework-specific is invented.
    assert not rule_ids & {"paper_index", "experimental_path", "signoff_required", "dco_not_cla",
                           "stale_workflow", "ci_labels", "tests_experiments", "observed"}
    assert summary["not_stated"] == ["algorithms", "ci", "stale"]
    markdown = format_rules_markdown(summary)
    assert "Not stated in the files read: where new methods go, CI, stale automation." in markdown


def test_benchmarking_advice_is_not_a_bug_report_rule() -> None:
    text = ("# Contributing\n\n1. If you've added code that should be tested, add tests.\n"
            "2. Ensure the test suite passes.\n\n## Benchmarking\n\nRun each benchmark over "
            "multiple trials and random seeds on a quiet machine, and fix the docker image "
            "you measure in so the error occurs the same way.\n")
    summary = summarize_rules({"CONTRIBUTING.md": text})
    rule_ids = {f["rule"] for f in summary["facts"]}
    assert {"tests_add", "tests_pass"} <= rule_ids
    assert not rule_ids & {"seeds", "docker_image"}  # those are issue-template rules


def test_empty_or_unhelpful_files_give_not_stated_for_every_core_topic() -> None:
    summary = summarize_rules({"CONTRIBUTING.md": "# Contributing\n\nThank you! We love PRs.\n"})
    assert summary["facts"] == []
    assert summary["not_stated"] == list(rules.table().core)
    summary = summarize_rules({})
    assert [f["rule"] for f in summary["facts"]] == ["no_contributing"]


def test_structural_files_written_from_scratch() -> None:
    workflow = """\
name: Close stale
on:
  schedule:
    - cron: '15 4 * * *'
jobs:
  stale:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/stale@v9
        with:
          days-before-stale: 60
          days-before-close: 10
          exempt-issue-labels: 'keep,roadmap'
"""
    ruleset = json.dumps({"rules": [
        {"type": "pull_request", "parameters": {"required_approving_review_count": 1,
                                                "require_code_owner_review": True}},
        {"type": "required_status_checks", "parameters": {
            "required_status_checks": [{"context": "tests"}, {"context": "lint"}]}},
    ]})
    codeowners = "# owners\n* @acme/core\n/src/algorithms/ @alice @bob @carol\n/docs/ @dora\n"
    form = yaml.safe_dump({"name": "Bug", "body": [
        {"type": "textarea", "attributes": {"label": "Versions",
                                            "description": "Paste the output of `pip freeze`."},
         "validations": {"required": True}},
        {"type": "checkboxes", "attributes": {"label": "Checks", "options": [
            {"label": "I searched existing issues", "required": True}]}},
    ]})
    summary = summarize_rules({
        ".github/workflows/stale.yml": workflow,
        ".github/ruleset.json": ruleset,
        ".github/CODEOWNERS": codeowners,
        ".github/ISSUE_TEMPLATE/bug.yml": form,
        ".github/ISSUE_TEMPLATE/config.yml": "blank_issues_enabled: false\n",
    })
    by_rule = {f["rule"]: f["statement"] for f in summary["facts"]}
    assert "daily" in by_rule["stale_workflow"]
    assert "after 60 days" in by_rule["stale_workflow"]
    assert "closed 10 days later" in by_rule["stale_workflow"]
    assert "`keep`, `roadmap`" in by_rule["stale_workflow"]
    assert "1 approving reviews" in by_rule["ruleset_review"]
    assert "`tests`, `lint`" in by_rule["ruleset_checks"]
    assert "`@acme/core`" in by_rule["codeowners"] and "/src/algorithms/" in by_rule["codeowners"]
    assert "/docs/" not in by_rule["codeowners"]
    assert "Versions" in by_rule["form_required"] and "`pip freeze`" in by_rule["form_required"]
    assert "1 required checklist boxes" in by_rule["form_required"]
    assert "Forms: Bug." in by_rule["blank_disabled"]
    assert "stale" not in summary["not_stated"] and "review" not in summary["not_stated"]


def test_markdown_rendering_never_mentions_people_and_speaks_chinese() -> None:
    summary = summarize_rules({"CODEOWNERS": "* @someone\n/algorithms/ @team/algo\n",
                               "CONTRIBUTING.md": "Please ping @maintainer and sign off your "
                                                  "commits: sign-off is required."})
    md = format_rules_markdown(summary)
    assert "`@someone`" in md  # inside a code span: no notification
    stripped = "".join(part for i, part in enumerate(md.split("`")) if i % 2 == 0)
    assert "@" not in stripped.replace("@\u200b", "")
    zh = format_rules_markdown(summary, lang="zh")
    assert zh.startswith("### 贡献规则") and "**评审**" in zh and "所读文件中未说明" in zh
    short = format_rules_markdown(summary, topics=["sign-off"], max_per_topic=1, heading=False)
    assert short.count("\n- ") + short.startswith("- ") == 1


def test_chinese_statements_fill_the_same_values(shared_dir: Path) -> None:
    summary = summary_for(str(shared_dir / "data" / "frameworks" / "trl"))
    zh = format_rules_markdown(summary, lang="zh", topics=rules.PROPOSAL_TOPICS, max_per_topic=2)
    assert "论文索引（`paper_index.md`）" in zh  # placeholder filled in Chinese too
    assert "**先讨论**" in zh and "Not stated" not in zh
    # Hints come after stated rules: the two tests lines shown are rules.
    tests_block = zh.split("**测试**")[1].split("**")[0]
    assert "PR template asks" not in tests_block


def test_phrases_taken_from_files_are_inert_markdown() -> None:
    text = ("## What is outside our scope\n\n| Category | Reason |\n|---|---|\n"
            "| **<img src=x> refactors** | e.g. *large* [rewrites](http://x) |\n\n"
            "Line length: 99 characters.\n")
    form = yaml.safe_dump({"name": "Bug <b>", "body": [
        {"type": "input", "attributes": {"label": "Ver*sion* <i>"}, "validations": {"required": True}}]})
    summary = summarize_rules({"CONTRIBUTING.md": text, ".github/ISSUE_TEMPLATE/b.yml": form,
                               "CODEOWNERS": "/algorithms/`x` @a\n"})
    by_rule = {f["rule"]: f["statement"] for f in summary["facts"]}
    assert by_rule["scope_out"] == "Out of scope: refactors."  # the tag is dropped as markup
    assert "<" not in by_rule["form_required"] and "*" not in by_rule["form_required"]
    assert "`/algorithms/x`" in by_rule["codeowners"]
    assert by_rule["line_length"] == "Maximum line length: 99 characters."


def test_segments_keep_code_spans_heads_and_lists() -> None:
    text = (
        "## Checklist\n\nPR descriptions must include:\n\n- Why it is new\n- `pytest -q` output\n\n"
        "| **Area** | Owner |\n|---|---|\n| **Loss functions** | `@x` |\n\n"
        "```bash\ngit commit -s\n```\n"
        "- **Tests:** add `tests/test_x.py` for [new code](https://example.com/<id>)\n"
    )
    segs = markdown_segments(text, "CONTRIBUTING.md")
    kinds = [(s.kind, s.text) for s in segs]
    assert ("code", "git commit -s") in kinds
    combined = [s for s in segs if s.kind == "combined"]
    assert combined and "Why it is new; pytest -q output" in combined[0].text
    assert "pytest -q" in combined[0].codes
    row = next(s for s in segs if s.kind == "row" and s.head == "Loss functions")
    assert row.section == "checklist"
    item = next(s for s in segs if s.head == "Tests")
    assert item.codes == ["tests/test_x.py"] and "new code" in item.text and "https" not in item.text
    assert file_kind(".github/ISSUE_TEMPLATE/config.yml") == "issue_config"
    assert file_kind(".ai/AGENTS.md") == "agents"
    assert file_kind(".github/workflows/stale.yml") == "workflow"


def test_pattern_table_is_well_formed() -> None:
    data = yaml.safe_load(rules.PATTERNS_FILE.read_text())
    topics = set(data["topics"])
    ids = [r["id"] for r in data["rules"]]
    assert len(ids) == len(set(ids))
    for raw in data["rules"]:
        assert raw["topic"] in topics, raw["id"]
        assert raw["all"] and all(group for group in raw["all"]), raw["id"]
        for other in raw.get("unless", []):
            assert other in ids, (raw["id"], other)
        fallbacks = raw.get("fallback") or []
        templates = [raw["statement"], *([fallbacks] if isinstance(fallbacks, str) else fallbacks)]
        placeholders = {p for t in templates for p in rules._PLACEHOLDER.findall(t)} - {"items"}
        extracted = set(raw.get("extract", {})) | set(raw.get("extract_all", {}))
        if placeholders - extracted - {"code", "codes", "head"} == set():
            continue
        pytest.fail(f"{raw['id']}: unknown placeholder {placeholders - extracted}")
    for fid, facts in rules.observed_facts().items():
        for fact in facts:
            assert fact["topic"] in topics and fact["statement"] and fact["source"], fid
    assert rules.table().core


def test_long_hostile_input_stays_bounded() -> None:
    # 64 KiB of the shapes the regexes look at; measured, not asserted as a time.
    hostile = {
        "CONTRIBUTING.md": ("`" * 3000) + ("[" * 3000) + ("<" * 3000)
        + ("- " * 4000) + ("| " * 4000) + ("at least " * 2000) + ("CI:a " * 2000),
        ".github/ISSUE_TEMPLATE/x.yml": "name: [" + "a" * 60000,
        ".github/workflows/stale.yml": "on: {" * 5000,
        ".github/ruleset.json": "{" * 60000,
        "CODEOWNERS": "* @a\n" * 10000,
        # rules7 shapes: MyST fences never closed, ballot boxes, leads that ask with items
        "docs/contribution_guide.md": ("```{note}\n" * 1500) + ("☐ ☐ a<br>\n" * 2000)
        + ("You must include:\n- a\n- b\n" * 1500),
        ".github/pull_request_template.md": "## Checks\n" + ("| a | b |\n" * 6000),
    }
    start = time.perf_counter()
    summary = summarize_rules(hostile)
    elapsed = time.perf_counter() - start
    print(f"hostile 64 KiB summary: {elapsed:.2f}s, {len(summary['facts'])} facts")
    assert isinstance(summary["facts"], list)


def test_a_stored_summary_naming_a_retired_topic_still_renders() -> None:
    # Stored summaries are refreshed nightly: one written by an earlier release may name a
    # topic the table no longer has, and the rule reply must still carry its rules.
    stored = {"framework": "verl", "not_stated": ["retired_topic", "tests"],
              "facts": [{"topic": "retired_topic", "statement": "Old rule.", "source": "A.md"},
                        {"topic": "sign-off", "statement": "Sign off commits.", "source": "B.md"}]}
    text = format_rules_markdown(stored)
    assert "Sign off commits. (`B.md`)" in text
    assert "Old rule" not in text and "retired" not in text
    assert "tests" in text.split("\n")[-2].lower()  # the core topic no file states is still listed
