"""Every failure comment the app can post, rendered and read back (review speech64): each
failure kind x each of the seven frameworks x English and Chinese, with no config pasted, with
a config (written for these tests, in the framework's own style) that turns some methods on,
and with one that sets the same options to values that leave them off. Each rendering is
parsed as Markdown (markdown-it, CommonMark) and checked against the catalog:

- a suggested method addresses the kind, is this framework's, and its setting reads as the
  catalog's `set_by` exactly, each override or flag in a code span;
- "Already set" names only methods the pasted config turns on, by one of the option's own
  keys, with the value pasted; a config that leaves them off gets no "Already set";
- a method is never both suggested (or "only in other frameworks") and already set;
- "only in other frameworks" names methods this framework lacks;
- every link is a tracker page; the body fits in a GitHub comment.

With ../shared present, each option shown is checked against ../shared/data/catalog.json too
(framework, option name, `set_by`, file)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from analyzers.catalog import facts as facts_of
from analyzers.catalog import framework_id, load_catalog
from analyzers.setup_config import parse_setup
from bot.speaking.render import compose_failure_comment, short_name, visible_lines

PUBLIC = "https://tracker.example"
CAT = load_catalog()
FRAMEWORKS = list(CAT.frameworks)
KINDS = list(CAT.failures)
MD = MarkdownIt("commonmark")
GITHUB_BODY_LIMIT = 65_536

# Pasted configurations, one style per framework as its reports paste them (written here).
ON = {
    "verl": "```bash\npython3 -m verl.trainer.main_ppo \\\n"
            "    actor_rollout_ref.actor.clip_ratio_high=0.28 \\\n"
            "    algorithm.filter_groups.enable=True \\\n"
            "    actor_rollout_ref.actor.policy_loss.loss_mode=gspo \\\n"
            "    algorithm.rollout_correction.rollout_is=sequence\n```",
    "trl": "```python\nargs = GRPOConfig(\n    epsilon_high=0.28,\n    loss_type=\"dr_grpo\",\n"
           "    vllm_importance_sampling_mode=\"token_truncate\",\n)\n```",
    "openrlhf": "```\npython -m openrlhf.cli.train_ppo_ray --actor.eps_clip_low_high 0.2 0.28 "
                "--algo.dynamic_filtering_enable --algo.dynamic_filtering_range 0 1\n```",
    "nemo-rl": "```yaml\nloss_fn:\n  ratio_clip_max: 0.28\n  sequence_level_importance_ratios: true\n"
               "grpo:\n  use_dynamic_sampling: true\n```",
    "roll": "```yaml\nuse_pg_clip_range: true\npg_clip_high: 0.28\ndifficulty_mask: true\n"
            "entropy_loss_coef: 0.001\n```",
    "slime": "```\n--eps-clip-high 0.28 --use-tis --calculate-per-token-loss\n```",
    "areal": "```json\n{\"actor\": {\"eps_clip_higher\": 0.28, \"use_cispo_loss\": true, "
             "\"mask_no_eos_with_zero\": true}}\n```",
}
OFF = {
    "verl": "```bash\npython3 -m verl.trainer.main_ppo \\\n"
            "    actor_rollout_ref.actor.clip_ratio_high=0.2 \\\n"
            "    algorithm.filter_groups.enable=False \\\n"
            "    actor_rollout_ref.actor.policy_loss.loss_mode=vanilla \\\n"
            "    algorithm.rollout_correction.rollout_is=null\n```",
    "trl": "```python\nargs = GRPOConfig(\n    epsilon_high=None,\n    loss_type=\"grpo\",\n)\n```",
    "openrlhf": "```\npython -m openrlhf.cli.train_ppo_ray --actor.eps_clip_low_high 0.2 0.2\n```",
    "nemo-rl": "```yaml\nloss_fn:\n  ratio_clip_max: 0.2\n  sequence_level_importance_ratios: false\n"
               "grpo:\n  use_dynamic_sampling: false\n```",
    "roll": "```yaml\npg_clip_high: 0.28\ndifficulty_mask: false\nentropy_loss_coef: 0\n```",
    "slime": "```\n--eps-clip-high 0.2 --eps-clip 0.2\n```",
    "areal": "```json\n{\"actor\": {\"use_cispo_loss\": false, \"mask_no_eos_with_zero\": false}}\n```",
}
CONFIGS = {"none": {f: "" for f in FRAMEWORKS}, "on": ON, "off": OFF}


def _inline(body: str) -> list:
    out = []
    for tok in MD.parse(body):
        out.extend(tok.children or [])
    return out


def _items(body: str) -> list[list]:
    """The inline tokens of each list item outside <details> (the visible bullets)."""
    visible = body.split("<details>")[0]
    items, depth = [], 0
    for tok in MD.parse(visible):
        if tok.type == "list_item_open":
            depth += 1
            items.append([])
        elif tok.type == "list_item_close":
            depth -= 1
        elif depth and tok.type == "inline":
            items[-1].extend(tok.children or [])
    return items


def _head(set_by: str) -> str:
    """What the comment puts in the code span: the setting without a trailing remark."""
    set_by = " ".join(set_by.split())
    head, sep, rest = set_by.partition(" (")
    return head if sep and rest.endswith(")") and head else set_by


def _said(option, lang: str) -> str:
    """The setting as a comment in `lang` reads it: the catalog's `set_by` (without a trailing
    remark, which is text), or in Chinese its `set_by_zh` whole (backticks mark its code)."""
    if lang == "zh" and option.set_by_zh:
        return " ".join(option.set_by_zh.replace("`", "").split())
    return _head(option.set_by)


def _method_of(tokens: list) -> str | None:
    for tok in tokens:
        if tok.type == "link_open":
            m = re.fullmatch(re.escape(PUBLIC) + r"/methods/([\w-]+)", tok.attrGet("href") or "")
            if m:
                return m.group(1)
    return None


def _render(kind: str, framework: str, lang: str, config: str):
    setup = parse_setup(CONFIGS[config][framework], framework)
    analysis = {"failure": {"is_failure_report": True, "category": kind, "categories": [kind],
                            "confidence": 0.93}}
    return setup, compose_failure_comment(analysis, framework, setup=setup, lang=lang,
                                          public_url=PUBLIC)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_failure_comment_states_catalog_facts(framework: str, lang: str, config: str) -> None:
    rendered = 0
    for kind in KINDS:
        setup, c = _render(kind, framework, lang, config)
        if c is None:
            continue
        rendered += 1
        body = c.body
        where = (kind, framework, lang, config)
        assert len(body) < GITHUB_BODY_LIMIT and len(visible_lines(body)) <= 8, where
        # every link is a tracker page
        hrefs = [t.attrGet("href") for t in _inline(body) if t.type == "link_open"]
        assert hrefs and all(h.startswith(PUBLIC + "/") for h in hrefs), (where, hrefs)
        on = {m for m, v in setup["options"].items() if v["enabled"]}
        # suggested: addresses the kind, this framework's option, the exact setting
        for mid in c.suggested:
            method = CAT.methods[mid]
            assert kind in method.failures, (where, mid)
            assert mid not in on and mid not in c.already_set, (where, mid)
            options = [o for o in method.options.get(framework, []) if not o.is_builtin]
            assert options, (where, mid)
            item = next(i for i in _items(body) if _method_of(i) == mid)
            codes = [t.content for t in item if t.type == "code_inline"]
            text = " ".join("".join(t.content for t in item
                                    if t.type in ("text", "code_inline")).split())
            # the setting read as written (in Chinese, the catalog's set_by_zh), each override or
            # flag of it in a code span of its own
            assert any(_said(o, lang) in text and codes and all(c in o.set_by for c in codes[:1])
                       for o in options), (where, mid, codes)
        # already set: on in the pasted config, named by the option's own key, the value pasted
        for mid in c.already_set:
            assert mid in on, (where, mid)
            keys = {k.lstrip("-") for o in CAT.methods[mid].options.get(framework, []) for k in o.keys}
            found = setup["options"][mid]
            line = next(x for x in body.splitlines() if f"/methods/{mid})" in x and (
                "Already set" in x or "已开启" in x))
            shown = re.search(re.escape(f"/methods/{mid})") + r"\s?[(（]`([^`]+)`(?: = `([^`]+)`)?", line)
            assert shown and shown.group(1).lstrip("-") in keys, (where, mid, line)
            assert shown.group(2) in (None, found["value"]), (where, mid, line)
        if config != "on":
            assert not c.already_set, where
        # only in other frameworks: methods this framework lacks
        for mid in c.elsewhere:
            assert not CAT.methods[mid].has(framework) and mid not in c.already_set, (where, mid)
    assert rendered, (framework, lang, config)


def test_the_on_configs_are_read_as_on() -> None:
    """The pasted configurations above do turn methods on (else the checks would be empty)."""
    for framework, text in ON.items():
        on = {m for m, v in parse_setup(text, framework)["options"].items() if v["enabled"]}
        assert len(on) >= 2, (framework, on)
        off = {m for m, v in parse_setup(OFF[framework], framework)["options"].items() if v["enabled"]}
        assert not off, (framework, off)


def test_a_repository_built_on_a_framework_is_no_framework() -> None:
    """A fork or a project built on verl is not verl: no failure comment names verl's options
    there (the decision records unknown_framework)."""
    assert framework_id("someone/verl") is None and framework_id("volcengine/verl") == "verl"
    analysis = {"failure": {"is_failure_report": True, "category": "entropy_collapse",
                            "confidence": 0.95}}
    assert compose_failure_comment(analysis, "someone-verl", setup=None, lang="en",
                                   public_url=PUBLIC) is None


def _shared_facts(shared_dir: Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """The shared catalog's methods and frameworks, by id."""
    shared = json.loads((shared_dir / "data" / "catalog.json").read_text())
    return ({m["id"]: m for m in shared["methods"]}, {f["id"]: f for f in shared["frameworks"]})


def _shared_rows(facts: dict[str, dict], mid: str, framework: str) -> list[dict]:
    """The shared verification rows of an option that exists in `framework` at its snapshot."""
    rows = ((facts[mid].get("frameworks") or {}).get(framework) or {}).get("verification") or []
    return [r for r in rows if not str(r.get("status", "")).startswith(("not found", "related"))]


def _words(text: str) -> str:
    return " ".join(text.split())


def _after_link(tokens: list) -> str:
    """The text of a bullet after its method link, as a reader sees it (escapes gone, code
    spans as their text), without the caution."""
    closed = next(i for i, t in enumerate(tokens) if t.type == "link_close")
    text = "".join(t.content for t in tokens[closed + 1:] if t.type in ("text", "code_inline"))
    text = re.split(r" — (?:caution|注意)[:：]", text)[0]
    return _words(re.sub(r"^[:：]\s*", "", text))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_option_a_comment_shows_is_the_shared_catalogs(shared_dir, lang: str) -> None:
    """Each fact a failure comment states, read from the rendered Markdown and checked against
    ../shared/data/catalog.json directly (not the project's catalog), for every framework x
    kind x pasted config (review comment80): a suggested method addresses the kind in the
    shared `failures`; its setting, remark and version note included, reads as the shared
    `set_by` of one of this framework's options, word for word, and says "experimental" when
    that option's shared status does; "Why this suggestion" names
    that option, its file and the framework's verified snapshot; each "only in other
    frameworks" method is absent here and names exactly the frameworks that have it."""
    facts, frameworks = _shared_facts(shared_dir)

    def having(mid: str) -> set[str]:
        return {frameworks[f]["name"] for f in frameworks if _shared_rows(facts, mid, f)}

    name_of = {short_name(m["name"]): mid for mid, m in facts.items()}
    checked = 0
    for framework in FRAMEWORKS:
        snapshot = frameworks[framework]["verified_snapshot"]["commit"]
        name = frameworks[framework]["name"]
        mark = f"（{name} 中为实验性功能）" if lang == "zh" else f" (experimental in {name})"
        for kind in KINDS:
            for config in CONFIGS:
                _, c = _render(kind, framework, lang, config)
                if c is None:
                    continue
                where = (framework, kind, lang, config)
                items = {_method_of(i): i for i in _items(c.body)}
                for mid in c.suggested:
                    assert kind in facts[mid]["failures"], (where, mid)
                    rows = _shared_rows(facts, mid, framework)
                    shown = _after_link(items[mid])
                    said_experimental = shown.endswith(mark)
                    shown = shown.removesuffix(mark)
                    if lang == "zh":
                        # our Chinese wording of a setting: the project option it words, whose
                        # set_by is then the shared one; every fact of that kept (review zh82)
                        worded = [o for o in CAT.methods[mid].options.get(framework, [])
                                  if _said(o, "zh") == shown]
                        assert worded and facts_of(shown) == facts_of(worded[0].set_by), (where, mid, shown)
                        shown = _words(worded[0].set_by)
                    row = next((r for r in rows if _words(r["set_by"]) == shown), None)
                    assert row is not None, (where, mid, shown, [r["set_by"] for r in rows])
                    assert said_experimental == ("experimental" in row["status"]), (where, mid)
                    checked += 1
                details = MD.parse(c.body.split("<details>", 1)[1])
                why = {}
                for tok in details:
                    if tok.type != "inline":
                        continue
                    text = "".join(t.content for t in tok.children
                                   if t.type in ("text", "code_inline"))
                    m = re.fullmatch(r"(.+?)[:：]\s*(?:option |选项 )(.+?)(?: in |，位于 )(.+?)"
                                     r"(?:, verified at commit |，核实于提交 )([0-9a-f]+)", text)
                    if m:
                        why[name_of[m.group(1)]] = m.groups()[1:]
                assert set(why) == set(c.suggested), (where, why)
                for mid, (option, file, commit) in why.items():
                    assert any(r["option"] == option and r["file"].startswith(file)
                               for r in _shared_rows(facts, mid, framework)), (where, mid, option)
                    assert snapshot.startswith(commit), (where, mid, commit)
                for mid in c.elsewhere:
                    assert not _shared_rows(facts, mid, framework), (where, mid)
                    named = re.search(re.escape(f"/methods/{mid})") + r" ?[(（]([^)）]+)[)）]", c.body)
                    assert named and set(re.split(r", |、", named.group(1))) == having(mid), (where, mid)
    assert checked
