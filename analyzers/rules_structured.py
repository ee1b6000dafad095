"""Facts read from the structure of contribution files rather than from their sentences:
stale workflows, CODEOWNERS, branch rulesets, issue forms, the issue-template config and a
guide's policy block.

Pure functions used by analyzers/rules.py; each returns fact dicts
`{"topic", "rule", "statement", "source", "evidence"}` in our own words.
"""

from __future__ import annotations

import json
import re
from typing import Any

from analyzers.rules_text import front_matter, inline, load_yaml

_EXPR = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
_REPO_LINK = re.compile(r"github\.com/([\w.-]{1,100})/([\w.-]{1,100})/blob/")
_COMMAND = re.compile(r"^(?:python|python3|pip|trl|uv|make|pytest|bash|git|npm|cargo)\b")
NOTABLE_OWNED = ("algorithm", "algo", "trainer", "recipe", "example", "loss", "experimental")


def _fact(topic: str, rule: str, statement: str, source: str, evidence: str = "") -> dict[str, Any]:
    return {"topic": topic, "rule": rule, "statement": statement, "source": source,
            "evidence": evidence[:200]}


def _words(text: str) -> str:
    """Third-party labels reduced to words and simple punctuation (inert in Markdown)."""
    return "".join(ch for ch in text if ch.isalnum() or ch in " -/'(),.?&").strip()[:80]


def _owner(handle: str) -> str:
    return f"`{handle.replace('`', '')}`"  # code span: no @-mention when the summary is posted on GitHub


# --- workflows -------------------------------------------------------------------------------


def _on(data: dict[str, Any]) -> Any:
    # YAML 1.1 reads the key `on` as the boolean True.
    return data.get("on", data.get(True))


def _cron_words(on: Any) -> str | None:
    """"daily" / "weekly" / "" for another schedule; None when the workflow has no schedule."""
    if not isinstance(on, dict) or not on.get("schedule"):
        return None
    for entry in on.get("schedule") or []:
        cron = str(entry.get("cron", "")) if isinstance(entry, dict) else ""
        fields = cron.split()
        if len(fields) == 5 and fields[2:] == ["*", "*", "*"] and "*" not in fields[:2]:
            return "daily"
        if len(fields) == 5 and fields[2] == "*" and fields[3] == "*" and fields[4] != "*":
            return "weekly"
    return ""


def _resolve(value: Any, inputs: dict[str, Any]) -> Any:
    if isinstance(value, str):
        m = _EXPR.fullmatch(value.strip())
        if m:
            spec = inputs.get(m.group(1)) or {}
            return spec.get("default") if isinstance(spec, dict) else None
    return value


def _days(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def workflow_facts(text: str, source: str, signatures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = load_yaml(text)
    if not isinstance(data, dict):
        return []
    on = _on(data)
    inputs = (on.get("workflow_call") or {}).get("inputs") or {} if isinstance(on, dict) else {}
    facts: list[dict[str, Any]] = []
    stale_found = False
    reusable: list[str] = []
    runs: list[str] = []
    uses_all: list[str] = []
    for job in (data.get("jobs") or {}).values():
        if not isinstance(job, dict):
            continue
        if isinstance(job.get("uses"), str):
            reusable.append(job["uses"].split("@")[0])
            uses_all.append(job["uses"])
        for step in job.get("steps") or []:
            if not isinstance(step, dict):
                continue
            uses = str(step.get("uses") or "")
            uses_all.append(uses)
            if isinstance(step.get("run"), str):
                runs.append(step["run"])
            if uses.startswith("actions/stale"):
                params = {k: _resolve(v, inputs) for k, v in (step.get("with") or {}).items()}
                facts.append(_stale_fact(params, _cron_words(on), source))
                stale_found = True
    if not stale_found and reusable and _looks_stale(source, data):
        facts.append(_fact(
            "stale", "stale_reusable",
            f"An inactivity workflow calls the shared workflow `{reusable[0]}` to mark and close "
            "stale issues and PRs.", source))
    elif not stale_found and _looks_stale(source, data) and _cron_words(on) is not None:
        # A scheduled job of its own (a script, a bot) rather than actions/stale: its timings
        # live in code we do not read, so only what the workflow itself shows is stated.
        scripts = [m.group(0) for r in runs for m in [_SCRIPT.search(r)] if m]
        what = f" runs `{scripts[0]}`" if scripts else " runs"
        cadence = _cron_words(on)
        facts.append(_fact(
            "stale", "stale_script",
            f"A {cadence + ' ' if cadence else 'scheduled '}inactivity workflow (stale bot){what} "
            "to handle stale issues or PRs.", source))
    blob = "\n".join(runs + uses_all + [str(data.get("name") or ""), source]).lower()
    for sig in signatures:
        if any(str(needle).lower() in blob for needle in sig["contains"]):
            facts.append(_fact(sig["topic"], sig["id"], sig["statement"], source))
    return facts


_SCRIPT = re.compile(r"[\w./-]{0,80}\.(?:py|sh|js|ts|rb)\b")


def probot_stale_facts(text: str, source: str) -> list[dict[str, Any]]:
    """The Probot stale app's config (.github/stale.yml): days before stale and close."""
    data = load_yaml(text)
    if not isinstance(data, dict) or "daysUntilStale" not in data:
        return []
    params = {"days-before-stale": data.get("daysUntilStale"),
              "days-before-close": data.get("daysUntilClose")}
    exempt = data.get("exemptLabels")
    if isinstance(exempt, list):
        params["exempt-issue-labels"] = ",".join(str(x) for x in exempt)
    fact = _stale_fact(params, None, source)
    fact["statement"] = fact["statement"].replace("A stale job runs (actions/stale).",
                                                  "The stale bot (Probot) is configured.")
    fact["rule"] = "stale_probot"
    return [fact]


def _looks_stale(source: str, data: dict[str, Any]) -> bool:
    name = f"{source} {data.get('name', '')}".lower()
    return "stale" in name or "inactive" in name


def _stale_fact(p: dict[str, Any], cadence: str | None, source: str) -> dict[str, Any]:
    def get(*keys: str) -> Any:
        for key in keys:
            if p.get(key) is not None:
                return p[key]
        return None

    issue_stale = _days(get("days-before-issue-stale", "days-before-stale"))
    issue_close = _days(get("days-before-issue-close", "days-before-close"))
    pr_stale = _days(get("days-before-pr-stale", "days-before-stale"))
    pr_close = _days(get("days-before-pr-close", "days-before-close"))
    parts = [f"A {cadence + ' ' if cadence else ''}stale job runs (actions/stale)."]
    parts.append(_stale_part("issues", issue_stale, issue_close))
    parts.append(_stale_part("PRs", pr_stale, pr_close))
    exempt: list[str] = []
    for key in ("exempt-issue-labels", "exempt-pr-labels"):
        for label in str(get(key) or "").split(","):
            if label.strip() and label.strip() not in exempt:
                exempt.append(label.strip())
    if exempt:
        parts.append("Exempt labels: " + ", ".join(f"`{x}`" for x in exempt) + ".")
    if str(get("exempt-all-assignees")).lower() == "true":
        parts.append("Anything with an assignee is exempt.")
    return _fact("stale", "stale_workflow", " ".join(p for p in parts if p), source)


def _stale_part(what: str, stale: int | None, close: int | None) -> str:
    if stale is None or stale < 0:
        return f"{what[0].upper()}{what[1:]} are never marked stale." if stale is not None else ""
    text = f"{what[0].upper()}{what[1:]} are marked stale after {stale} days without activity"
    if close is None:
        return text + "."
    if close < 0:
        return text + " and never closed automatically."
    return text + f" and closed {close} days later."


# --- CODEOWNERS ------------------------------------------------------------------------------


def codeowners_facts(text: str, source: str) -> list[dict[str, Any]]:
    rules: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        owners = [p for p in parts[1:] if p.startswith("@") or "@" in p]
        if owners:
            rules.append((parts[0], owners))
    if not rules:
        return []
    bits = [f"Code owners are assigned per path in CODEOWNERS ({len(rules)} path rules)."]
    catch_all = [owners for path, owners in rules if path in ("*", "/*", "**")]
    if catch_all:
        bits.append("Everything not listed: " + ", ".join(_owner(o) for o in catch_all[-1][:3]) + ".")
    # Paths a method proposal touches (algorithms, trainers, recipes, examples), most
    # specific keyword first; globs and test/doc folders are left out.
    def rank(path: str) -> int:
        return min(i for i, k in enumerate(NOTABLE_OWNED) if k in path.lower())

    notable = sorted(
        ((path, owners) for path, owners in rules
         if any(k in path.lower() for k in NOTABLE_OWNED) and "*" not in path
         and not path.lower().lstrip("/").startswith(("tests", "docs"))),
        key=lambda po: rank(po[0]),
    )
    if notable:
        shown = [f"`{path.replace('`', '')}` ({', '.join(_owner(o) for o in owners[:2])}"
                 f"{', …' if len(owners) > 2 else ''})" for path, owners in notable[:4]]
        bits.append("For example " + "; ".join(shown) + ".")
    return [_fact("review", "codeowners", " ".join(bits), source)]


# --- rulesets (branch protection) -----------------------------------------------------------


def ruleset_facts(text: str, source: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text[:65_536])
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    facts: list[dict[str, Any]] = []
    review: list[str] = []
    checks: list[str] = []
    for rule in data.get("rules") or []:
        if not isinstance(rule, dict):
            continue
        kind = rule.get("type")
        params = rule.get("parameters") or {}
        if kind == "pull_request":
            n = params.get("required_approving_review_count")
            if n:
                review.append(f"{n} approving reviews")
            if params.get("require_code_owner_review"):
                review.append("a code-owner review")
            if params.get("dismiss_stale_reviews_on_push"):
                review.append("approvals dismissed when new commits are pushed")
            if params.get("require_last_push_approval"):
                review.append("the last push approved by someone else")
            if params.get("required_review_thread_resolution"):
                review.append("all review threads resolved")
        elif kind == "required_linear_history":
            review.append("linear history")
        elif kind == "required_status_checks":
            for check in params.get("required_status_checks") or []:
                if isinstance(check, dict) and check.get("context"):
                    checks.append(str(check["context"]))
    if review:
        facts.append(_fact("review", "ruleset_review",
                           "Branch rules on the default branch require " + ", ".join(review) + ".",
                           source))
    if checks:
        names = ", ".join(f"`{c}`" for c in checks)
        facts.append(_fact("ci", "ruleset_checks",
                           f"Required status checks before merging: {names}.", source))
        if any("pre-commit" in c or "lint" in c for c in checks):
            facts.append(_fact("lint", "ruleset_lint",
                               f"The lint check ({names}) is a required status check.", source))
    return facts


# --- issue forms, Markdown issue templates and the template chooser -------------------------


def form_facts(data: Any, source: str, kind: str) -> list[dict[str, Any]]:
    """Required fields of an issue form; commands it asks to run; required checklists."""
    if not isinstance(data, dict) or not isinstance(data.get("body"), list):
        return []
    name = inline(str(data.get("name") or source.rsplit("/", 1)[-1]))[0]
    name = "".join(ch for ch in name if ch.isalnum() or ch in " -/'").strip() or "form"
    required: list[str] = []
    commands: list[str] = []
    boxes = 0
    reads_guide = False
    for element in data["body"]:
        if not isinstance(element, dict):
            continue
        attrs = element.get("attributes") or {}
        valid = element.get("validations") or {}
        if element.get("type") == "checkboxes":
            for option in attrs.get("options") or []:
                if isinstance(option, dict) and option.get("required"):
                    boxes += 1
                    if "contributing" in str(option.get("label", "")).lower():
                        reads_guide = True
            continue
        if isinstance(valid, dict) and valid.get("required") and attrs.get("label"):
            required.append(_words(inline(str(attrs["label"]))[0]))
            for text in (attrs.get("description"), attrs.get("placeholder")):
                for code in inline(str(text or ""))[1]:
                    if _COMMAND.match(code) and code not in commands:
                        commands.append(code)
    if kind == "discussion_template":
        return []
    facts = []
    if required or boxes:
        bits = [f"The “{name}” issue form"]
        if required:
            bits.append(" requires: " + ", ".join(required))
        if commands:
            bits.append(" (system info from " + ", ".join(f"`{c}`" for c in commands) + ")")
        if boxes:
            bits.append(f"{';' if required else ''} {boxes} required checklist boxes")
            if reads_guide:
                bits.append(", including having read CONTRIBUTING")
        facts.append(_fact("templates", "form_required", "".join(bits) + ".", source))
    return facts


def template_names(files: dict[str, str], kinds: dict[str, str]) -> list[str]:
    names = []
    for path, text in files.items():
        if kinds[path] != "issue_template":
            continue
        if path.lower().endswith((".yml", ".yaml")):
            data = load_yaml(text)
            name = data.get("name") if isinstance(data, dict) else None
        else:
            name = front_matter(text)[0].get("name")
        if isinstance(name, str) and name.strip():
            clean = "".join(ch for ch in inline(name)[0] if ch.isalnum() or ch in " -/'").strip()
            names.append(clean)
    return names


def issue_config_facts(text: str, source: str, form_names: list[str]) -> list[dict[str, Any]]:
    data = load_yaml(text)
    if not isinstance(data, dict):
        return []
    facts = []
    blank = data.get("blank_issues_enabled")
    forms = f" Forms: {', '.join(form_names)}." if form_names else ""
    if blank is False:
        facts.append(_fact("templates", "blank_disabled",
                           "Blank issues are disabled: issues go through the templates." + forms,
                           source))
    elif blank is True:
        facts.append(_fact("templates", "blank_enabled", "Blank issues are allowed." + forms,
                           source))
    for link in data.get("contact_links") or []:
        if isinstance(link, dict) and "discussions" in str(link.get("url", "")).lower():
            facts.append(_fact("templates", "discussions_link", _discussions_statement(link),
                               source))
            break
    return facts


_LINK_QUESTIONS = re.compile(r"\bquestions?\b|\bq\s?&\s?a\b|\bfaq\b|\bhelp\b|\bsupport\b", re.I)
_LINK_IDEAS = re.compile(r"\bideas?\b|\bfeatures?\b|\bproposals?\b|\bsuggestions?\b", re.I)


def _discussions_statement(link: dict[str, Any]) -> str:
    """What the chooser sends to Discussions, as its link names it: "Ask usage questions" is
    not "questions and ideas"."""
    words = f"{str(link.get('name', ''))[:200]} {str(link.get('about', ''))[:400]}"
    what = [name for name, cue in (("questions", _LINK_QUESTIONS), ("ideas", _LINK_IDEAS))
            if cue.search(words)]
    if not what:
        return "The issue template chooser links to GitHub Discussions."
    return f"{' and '.join(what).capitalize()} are sent to GitHub Discussions instead of issues."


def pointer_fact(text: str, source: str) -> dict[str, Any] | None:
    """A stub CONTRIBUTING / GOVERNANCE that only points to another repository."""
    if len(text) > 600:
        return None
    m = _REPO_LINK.search(text)
    if not m:
        return None
    doc = source.rsplit("/", 1)[-1]
    return _fact("general", "rules_elsewhere",
                 f"{doc} here is a pointer: the text lives in the repository "
                 f"{m.group(1)}/{m.group(2)}.", source)


# --- a policy block inside a guide ---------------------------------------------------------------

# A fenced YAML or TOML block of a guide that states the rules as settings ("review:
# approvals: 2", "signoff: required", "required_checks: [...]") (rules77). A block is a policy
# when at least two of its top-level keys are policy words: a training config's `model:` or
# `trainer:` is not one.
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s{0,3}(ya?ml|toml)\s{0,3}$", re.I)
_POLICY_KEYS = frozenset({"review", "reviews", "approvals", "required_approvals", "required_checks",
                          "checks", "ci", "commits", "signoff", "sign_off", "dco", "cla", "placement",
                          "layout", "stale", "changelog", "tests", "lint", "pull_requests", "policy"})
_PLACEMENT_KEYS = frozenset({"placement", "layout", "locations", "directories", "where"})
_YES = frozenset({"required", "true", "yes", "mandatory", "always"})
_PATH_VALUE = re.compile(r"^[\w.<>-]{1,60}/(?:[\w.<>-]{1,60}/){0,6}$")


def _policy_blocks(text: str) -> list[dict[str, Any]]:
    """The fenced YAML / TOML blocks of a guide that parse to a mapping of policy keys."""
    import tomllib

    blocks: list[dict[str, Any]] = []
    lines = text[:65_536].split("\n")
    i = 0
    while i < len(lines) and len(blocks) < 4:
        m = _FENCE_OPEN.match(lines[i])
        i += 1
        if not m:
            continue
        fence, language, body = m.group(1), m.group(2).lower(), []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        data: Any
        if language == "toml":
            try:
                data = tomllib.loads("\n".join(body))
            except (tomllib.TOMLDecodeError, RecursionError):
                continue
        else:
            data = load_yaml("\n".join(body))
        if isinstance(data, dict):
            keys = {str(k).lower().replace("-", "_") for k in data}
            if len(keys & _POLICY_KEYS) >= 2:
                blocks.append(data)
    return blocks


def _walk(data: Any, path: tuple[str, ...] = (), depth: int = 0) -> list[tuple[tuple[str, ...], Any]]:
    """(key path, value) of every setting of a block, keys lower case with "_" for "-"."""
    if depth > 6:
        return []
    if isinstance(data, dict):
        out: list[tuple[tuple[str, ...], Any]] = []
        for key, value in list(data.items())[:200]:
            out += _walk(value, (*path, str(key).lower().replace("-", "_")), depth + 1)
        return out
    if isinstance(data, list):
        return [pair for item in data[:50] for pair in _walk(item, path, depth + 1)]
    return [(path, data)]


def policy_block_facts(text: str, source: str) -> list[dict[str, Any]]:
    """Facts a guide's policy block states: the approvals a PR needs (and per path), the test
    command of its required checks, where new code goes, a required sign-off. A setting that
    waives ("cla: not_required", "title_format: none") states nothing."""
    facts: list[dict[str, Any]] = []
    for block in _policy_blocks(text):
        settings = _walk(block)
        approvals = next((v for p, v in settings if p and p[-1] in ("approvals", "required_approvals",
                          "min_approvals", "approving_reviews") and isinstance(v, int)
                          and not isinstance(v, bool) and 0 < v < 10), None)
        by_path = [(p[-1], v) for p, v in settings if len(p) >= 2 and "approvals" in p[-2]
                   and "path" in p[-2] and isinstance(v, int) and not isinstance(v, bool) and 0 < v < 10]
        if approvals:
            said = "an approving review" if approvals == 1 else f"{approvals} approving reviews"
            statement = f"Every PR needs {said} before merging"
            statement += "".join(f"; {n} for changes under `{path}`" for path, n in by_path[:4]
                                 if _PATH_VALUE.match(path))
            facts.append(_fact("review", "policy_approvals", statement + ".", source))
        commands = [str(v) for p, v in settings if p and p[-1] in ("run", "command", "cmd")
                    and isinstance(v, str) and "pytest" in v]
        if commands:
            facts.append(_fact("tests", "policy_tests",
                               "Tests run with " + ", ".join(f"`{c[:120].replace('`', '')}`" for c in commands[:3]) + ".",
                               source))
        places = [str(v) for p, v in settings if any(k in _PLACEMENT_KEYS for k in p[:-1])
                  and isinstance(v, str) and _PATH_VALUE.match(v) and not v.startswith(("tests/", "docs/"))]
        if places:
            facts.append(_fact("algorithms", "policy_placement",
                               "The guide says where such code goes (paths named: "
                               + ", ".join(f"`{v}`" for v in dict.fromkeys(places[:6])) + ").", source))
        if any(p and p[-1] in ("signoff", "sign_off", "dco") and str(v).lower() in _YES for p, v in settings):
            facts.append(_fact("sign-off", "policy_signoff",
                               "Every commit must carry a DCO `Signed-off-by` line (`git commit -s`).", source))
    return facts
