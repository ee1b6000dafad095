"""A Chinese failure comment and `/rltracker methods` reply are Chinese throughout (review
zh82): the catalog's cautions and the words around its settings (remarks, version notes) are
shown from our Chinese wording beside the English (`text_zh`, `set_by_zh` in
analyzers/catalog/methods.yaml), which keeps every fact of the English: option names, values,
numbers, versions and paths (`analyzers.catalog.facts`), checked when the catalog loads.

Every framework x failure kind (alone, and with each other kind as the runner-up) and every
methods reply is rendered in Chinese: with code spans and names (links, frameworks, methods,
kinds) taken out, no run of four English words is left; and each rendered bullet states the
same code spans and facts as the English rendering of the same comment."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from analyzers.catalog import (
    CATALOG_DIR,
    CatalogError,
    facts,
    load_catalog,
    load_catalog_from,
)
from bot.speaking.render import (
    _suggestable,
    compose_failure_comment,
    methods_reply,
    setting_md,
    short_name,
)

PUBLIC = "https://tracker.example"
CAT = load_catalog()
FRAMEWORKS = list(CAT.frameworks)
KINDS = list(CAT.failures)
MD = MarkdownIt("commonmark")
# Pasted configurations that turn some methods on (the "Already set" line): written here.
ON = {
    "verl": "actor_rollout_ref.actor.clip_ratio_high=0.28 algorithm.filter_groups.enable=True",
    "trl": "GRPOConfig(epsilon_high=0.28, loss_type=\"dr_grpo\")",
    "openrlhf": "--actor.eps_clip_low_high 0.2 0.28",
    "nemo-rl": "```yaml\nloss_fn:\n  ratio_clip_max: 0.28\n```",
    "roll": "```yaml\nuse_pg_clip_range: true\npg_clip_high: 0.28\n```",
    "slime": "--eps-clip-high 0.28 --use-tis",
    "areal": "actor.eps_clip_higher=0.28",
}


def _comment(kind: str, framework: str, lang: str, *, runner_up: str | None = None,
             pasted: str = ""):
    from analyzers.setup_config import parse_setup

    kinds = [kind, runner_up] if runner_up else [kind]
    analysis = {"failure": {"is_failure_report": True, "category": kind, "categories": kinds,
                            "confidence": 0.93}}
    return compose_failure_comment(analysis, framework, setup=parse_setup(pasted, framework),
                                   lang=lang, public_url=PUBLIC)


def _renderings(lang: str):
    """(where, body) of every failure comment and methods reply in `lang`."""
    for framework in FRAMEWORKS:
        for kind in KINDS:
            for runner_up in [None, *KINDS]:
                if runner_up == kind:
                    continue
                c = _comment(kind, framework, lang, runner_up=runner_up)
                if c is not None:
                    yield (framework, kind, runner_up), c.body
            c = _comment(kind, framework, lang, pasted=ON[framework])
            if c is not None:
                yield (framework, kind, "on"), c.body
            yield (framework, kind, "methods"), methods_reply(kind, framework, lang, PUBLIC)
    for kind in KINDS:
        yield (None, kind, "methods"), methods_reply(kind, None, lang, PUBLIC)


# Names stay as they are in a Chinese comment: frameworks, methods (and their short forms),
# the failure kinds' English titles.
NAMES = sorted({n for f in CAT.frameworks.values() for n in (f.name, f.id)}
               | {n for m in CAT.methods.values() for n in (m.name, short_name(m.name))}
               | {k.title for k in CAT.failures.values()}, key=len, reverse=True)
_NAME = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in NAMES) + r")(?![\w-])")
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_LINK_TEXT = re.compile(r"\[((?:\\.|[^\]\\])*)\]\([^)]*\)")
_ENGLISH_WORD = re.compile(r"[(\"']*[A-Za-z]+(?:'s)?[)\"',.;:!?]*")


def english_runs(markdown: str, run: int = 4) -> list[str]:
    """Runs of `run` or more English words left in `markdown` once its code spans, link texts,
    HTML and the catalog's names are taken out. A word is letters only ("verl's", "(with"):
    `clip_ratio_low=0.2` or `2026-04-19` ends a run, as does any Chinese character."""
    text = _CODE.sub(" ", markdown)
    text = _LINK_TEXT.sub(" ", text)
    text = re.sub(r"<[^>]*>", " ", text)
    text = _NAME.sub(" ", text.replace("\\", ""))
    out = []
    for segment in re.findall(r"[\x00-\x7f]+", text):
        words: list[str] = []
        for token in segment.split() + [""]:
            if token and _ENGLISH_WORD.fullmatch(token):
                words.append(token)
                continue
            if len(words) >= run:
                out.append(" ".join(words))
            words = []
    return out


def test_the_english_run_finder_finds_english_and_passes_chinese() -> None:
    assert english_runs("注意：Raising only the upper clip bound lets tokens gain.") == [
        "Raising only the upper clip bound lets tokens gain."]
    assert english_runs("`a=1`（2026-04-19 之前参数名为 --eps_clip_low_high）") == []
    assert english_runs("[Masked importance sampling / rollout rejection sampling](u)：x") == []
    assert english_runs("(flag was --x before 2026-04-19)") == []  # three words at most


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_chinese_comment_and_methods_reply_is_chinese(framework: str) -> None:
    """Cautions, settings' remarks and version notes were English in a Chinese comment
    ("cautions stay in the catalog's words"): a maintainer of verl, ROLL, slime, AReaL or
    OpenRLHF whose users write in Chinese got two languages in one comment."""
    checked, left = 0, []
    for where, body in _renderings("zh"):
        if where[0] not in (framework, None):
            continue
        checked += 1
        left += [(where, r) for r in english_runs(body)]
    assert checked and not left, left[:10]


def _bullets(body: str) -> list[tuple[str, Counter, set[str]]]:
    """Each visible bullet: (the method it links, its code spans, the facts of its words)."""
    out = []
    depth = 0
    for tok in MD.parse(body.split("<details>")[0]):
        if tok.type == "list_item_open":
            depth += 1
        elif tok.type == "list_item_close":
            depth -= 1
        elif depth and tok.type == "inline":
            children = tok.children or []
            links = [t.attrGet("href") for t in children if t.type == "link_open"]
            codes = Counter(t.content for t in children if t.type == "code_inline")
            words = " ".join(t.content for t in children if t.type == "text")
            out.append((str(links[:1]), codes, facts(words)))
    return out


def test_every_chinese_comment_states_the_english_facts() -> None:
    """Each bullet of a Chinese comment or methods reply names the same method and shows the
    same settings (code spans) and facts (option names, values, versions, paths, numbers) in
    its words as the English rendering's bullet (review zh82)."""
    english = dict(_renderings("en"))
    checked = 0
    for where, body in _renderings("zh"):
        en, zh = _bullets(english[where]), _bullets(body)
        assert [b[0] for b in zh] == [b[0] for b in en], where
        for (link, en_codes, en_facts), (_, zh_codes, zh_facts) in zip(en, zh, strict=True):
            assert zh_codes == en_codes, (where, link, en_codes - zh_codes, zh_codes - en_codes)
            assert zh_facts == en_facts, (where, link, en_facts - zh_facts, zh_facts - en_facts)
            checked += 1
    assert checked > 1000


def test_every_caution_has_chinese_text() -> None:
    """Any caution may be shown (its framework's clause, else its first): each has our Chinese
    wording, clause for clause (the loader checks the count and the facts)."""
    missing = [(m.id, c.source) for m in CAT.methods.values() for c in m.cautions if not c.text_zh]
    assert not missing


def test_every_setting_shown_with_words_has_chinese_text() -> None:
    """The option a comment or methods reply shows for each method x framework: when its
    English rendering has words besides its code spans (a remark, a version note, "with"),
    the catalog words it in Chinese too."""
    missing = []
    for method in CAT.methods.values():
        for framework in FRAMEWORKS:
            option = _suggestable(method, framework)
            if option is None:
                continue
            words = _CODE.sub("", setting_md(option.set_by))
            if re.search(r"[A-Za-z]", words) and not option.set_by_zh:
                missing.append((method.id, framework, option.name))
    assert not missing


def _catalog_copy(tmp_path: Path, edit) -> Path:
    for f in CATALOG_DIR.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    data = yaml.safe_load((tmp_path / "methods.yaml").read_text(encoding="utf-8"))
    edit({m["id"]: m for m in data["methods"]})
    (tmp_path / "methods.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return tmp_path


def _caution(methods, method_id: str, index: int, text_zh: str) -> None:
    methods[method_id]["cautions"][index]["text_zh"] = text_zh


def _set_by(methods, method_id: str, framework: str, set_by_zh: str) -> None:
    methods[method_id]["options"][framework][0]["set_by_zh"] = set_by_zh


@pytest.mark.parametrize(("edit", "said"), [
    # a number dropped ("about 2.0" gone)
    (lambda ms: _caution(ms, "clip-higher", 0, "只提高裁剪上界会让低概率 token 的概率快速上升，熵可能冲过头；"
                         "在一次报告的运行中，熵在 1000 步内大幅上升，随后分数下降（仅为单次观察；"
                         "该处维护者认为熵低于约 1 属正常）。"), "lacks ['2.0']"),
    # an option name changed
    (lambda ms: _caution(ms, "clip-higher", 1, "在 ROLL 中，除非 use_pg_clip 为 true，否则 pg_clip_high "
                         "不起作用；不设它时使用对称的 pg_clip。"), "use_pg_clip_range"),
    # one clause where the English has two
    (lambda ms: _caution(ms, "clip-higher", 1, "在 ROLL 中，除非 use_pg_clip_range 为 true，否则 "
                         "pg_clip_high 不起作用，不设它时使用对称的 pg_clip。"), "1 clauses, text 2"),
    # a version changed
    (lambda ms: _set_by(ms, "clip-higher", "openrlhf", "`--actor.eps_clip_low_high 0.2 0.28`"
                        "（2026-04-18 之前参数名为 --eps_clip_low_high）"), "2026-04-19"),
    # a value changed inside the setting
    (lambda ms: _set_by(ms, "clip-higher", "verl", "`actor_rollout_ref.actor.clip_ratio_high=0.3`"
                        "（同时设置 actor_rollout_ref.actor.clip_ratio_low=0.2）"), "clip_ratio_high=0.28"),
    (lambda ms: _set_by(ms, "clip-higher", "verl", "`actor_rollout_ref.actor.clip_ratio_high=0.28"
                        "（同时设置 actor_rollout_ref.actor.clip_ratio_low=0.2）"), "unclosed code span"),
])
def test_a_chinese_wording_that_changes_a_fact_does_not_load(tmp_path: Path, edit, said: str) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog_from(_catalog_copy(tmp_path, edit))
    assert said in str(raised.value) and "methods.yaml:clip-higher" in str(raised.value)


def test_the_facts_a_wording_keeps() -> None:
    assert facts("--actor.eps_clip_low_high 0.2 0.28 (flag was --eps_clip_low_high before 2026-04-19)") == {
        "--actor.eps_clip_low_high", "0.2", "0.28", "--eps_clip_low_high", "2026-04-19"}
    # proper names and acronyms are kept; plain words, "and/or" and a lone "=" are not
    assert facts("TRL's upper IS-weight bound for NeMo-RL and/or MoE: 0 = synchronous") == {
        "TRL", "IS", "NeMo", "RL", "MoE", "0"}
    assert facts("eps_clip_higher > 0") == {"eps_clip_higher", ">", "0"}
    assert facts("TRL 的 GMPOConfig、GMPOTrainer（见 LUSPO）。") == {"TRL", "GMPOConfig", "GMPOTrainer", "LUSPO"}
