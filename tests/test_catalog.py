"""The catalog loads, is self-consistent, rejects bad data, and agrees with the shared facts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from analyzers.catalog import (
    CATALOG_DIR,
    CONTRACT_FAILURE_KEYS,
    CatalogError,
    load_catalog,
    load_catalog_from,
)

FRAMEWORK_IDS = {"verl", "trl", "openrlhf", "nemo-rl", "roll", "slime", "areal"}


def test_loads_once_and_has_the_seven_frameworks() -> None:
    cat = load_catalog()
    assert load_catalog() is cat
    assert set(cat.frameworks) == FRAMEWORK_IDS
    for fw in cat.frameworks.values():
        assert len(fw.verified_commit) == 40
        assert "/" in fw.repo


def test_framework_for_repo_handles_case_and_former_names() -> None:
    cat = load_catalog()
    assert cat.framework_for_repo("volcengine/verl").id == "verl"
    assert cat.framework_for_repo("VERL-project/VERL").id == "verl"
    assert cat.framework_for_repo("inclusionAI/AReaL").id == "areal"
    assert cat.framework_for_repo("someone/else") is None
    assert cat.canonical_repo("volcengine/verl") == "verl-project/verl"
    assert cat.canonical_repo("someone/else") == "someone/else"


def test_failure_kinds_cover_the_contract_and_speak_both_languages() -> None:
    cat = load_catalog()
    for key in CONTRACT_FAILURE_KEYS:
        kind = cat.failures[key]
        assert kind.title and kind.description
        assert any("\u4e00" <= ch <= "\u9fff" for ch in kind.title_zh + kind.description_zh)
    assert "length_bias" in cat.failures and not cat.failures["length_bias"].in_contract


def test_clip_higher_options_are_exact() -> None:
    m = load_catalog().methods["clip-higher"]
    assert "2503.14476" in m.arxiv_ids
    assert m.failures == ["entropy_collapse"]
    verl = m.options["verl"][0]
    assert verl.set_by.startswith("actor_rollout_ref.actor.clip_ratio_high=0.28")
    assert "actor_rollout_ref.actor.clip_ratio_high" in verl.keys
    assert verl.commit == load_catalog().frameworks["verl"].verified_commit
    trl = m.options["trl"][0]
    assert "GRPOConfig(epsilon_high=0.28)" in trl.set_by and "epsilon_high" in trl.keys
    orl = m.options["openrlhf"][0]
    # Both the dotted flag and the flat one it replaced are recognised.
    assert {"--actor.eps_clip_low_high", "--eps_clip_low_high"} <= set(orl.keys)
    assert "--eps-clip-high" in m.options["slime"][0].keys


def test_methods_for_failure_and_every_method_is_well_formed() -> None:
    cat = load_catalog()
    names = {m.id for m in cat.methods_for_failure("entropy_collapse")}
    assert {"clip-higher", "clip-cov-kl-cov", "entropy-bonus"} <= names
    for m in cat.methods.values():
        assert m.name
        for fw, opts in m.options.items():
            assert fw in FRAMEWORK_IDS and opts
            for o in opts:
                assert o.framework == fw and o.set_by and o.file
                assert not o.status.startswith("not found")
        for c in m.cautions:
            assert c.text and c.source


def _copy_catalog(tmp_path: Path) -> Path:
    d = tmp_path / "cat"
    shutil.copytree(CATALOG_DIR, d, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return d


def _edit_methods(d: Path, edit) -> None:
    path = d / "methods.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data["methods"][0])
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def test_unknown_failure_key_is_a_clear_error(tmp_path: Path) -> None:
    d = _copy_catalog(tmp_path)
    _edit_methods(d, lambda m: m["failures"].append("entropy_colapse"))
    with pytest.raises(CatalogError, match="unknown failure key 'entropy_colapse'"):
        load_catalog_from(d)


def test_unknown_framework_is_a_clear_error(tmp_path: Path) -> None:
    d = _copy_catalog(tmp_path)
    _edit_methods(d, lambda m: m["options"].__setitem__("verI", m["options"]["verl"]))
    with pytest.raises(CatalogError, match="unknown framework id 'verI'"):
        load_catalog_from(d)


def test_absent_option_cannot_be_listed(tmp_path: Path) -> None:
    d = _copy_catalog(tmp_path)

    def edit(m: dict) -> None:
        m["options"]["verl"][0]["status"] = "not found at snapshot 1dda039b9c"

    _edit_methods(d, edit)
    with pytest.raises(CatalogError, match="must exist at the snapshot"):
        load_catalog_from(d)


def test_agrees_with_shared_catalog(shared_dir: Path) -> None:
    """Every method, arXiv id and option name of the shared facts is in the catalog, and
    options absent at the snapshot are not listed as present."""
    src = json.loads((shared_dir / "data" / "catalog.json").read_text(encoding="utf-8"))
    cat = load_catalog()
    assert {m["id"] for m in src["methods"]} <= set(cat.methods)
    for f in src["frameworks"]:
        fw = cat.frameworks[f["id"]]
        assert fw.repo == f["repo"] and fw.former_repos == f["former_repos"]
        assert fw.verified_commit == f["verified_snapshot"]["commit"]
    assert set(src["failure_keys"]) <= set(cat.failures)
    for m in src["methods"]:
        mine = cat.methods[m["id"]]
        assert sorted(mine.failures) == sorted(m["failures"]), m["id"]
        # Same number of cautions, each with the same source (texts are our own words).
        assert [c.source for c in mine.cautions] == [c["source"] for c in m.get("cautions") or []]
        for s in m["sources"]:
            if s.get("arxiv"):
                assert s["arxiv"] in mine.arxiv_ids, (m["id"], s["arxiv"])
        for fw, v in m["frameworks"].items():
            for x in v["verification"]:
                names = {o.name for o in mine.options.get(fw, [])}
                related = {o.name for o in mine.related.get(fw, [])}
                if x["status"].startswith("not found"):
                    assert x.get("option") not in names, (m["id"], fw)
                elif x["status"].startswith("related"):
                    assert x["option"] in related, (m["id"], fw, x["option"])
                else:
                    assert x["option"] in names, (m["id"], fw, x["option"])
                    (opt,) = [o for o in mine.options[fw] if o.name == x["option"]]
                    assert opt.set_by == x["set_by"], (m["id"], fw)


def test_runner_up_is_the_first_other_known_kind() -> None:
    cat = load_catalog()
    both = {"category": "kl_growth", "categories": ["kl_growth", "no_such_kind", 7, "entropy_collapse", "moe_instability"]}
    runner_up = cat.runner_up(both)
    assert runner_up is not None and runner_up.key == "entropy_collapse"
    assert cat.runner_up({"category": "kl_growth", "categories": ["kl_growth"]}) is None
    assert cat.runner_up({"category": "kl_growth", "categories": "kl_growth,entropy_collapse"}) is None
    assert cat.runner_up({"category": None, "categories": []}) is None


def test_every_fact_shown_agrees_with_shared_catalog(shared_dir: Path) -> None:
    """What comments and pages print from the catalog equals the shared facts, field by field:
    methods (none invented, none dropped), names, first public dates, sources with their
    links, and per framework every option present (none invented) with its status, file,
    setting, default and first commit; the frameworks' snapshots."""
    src = json.loads((shared_dir / "data" / "catalog.json").read_text(encoding="utf-8"))
    cat = load_catalog()
    assert {m["id"] for m in src["methods"]} == set(cat.methods)
    assert {f["id"] for f in src["frameworks"]} == set(cat.frameworks)
    for f in src["frameworks"]:
        fw = cat.frameworks[f["id"]]
        assert (fw.name, fw.default_branch, fw.verified_date) == (
            f["name"], f["default_branch"], f["verified_snapshot"]["date"]), f["id"]
    wrong = []
    for m in src["methods"]:
        mine = cat.methods[m["id"]]
        if (mine.name, mine.first_public) != (m["name"], m.get("first_public")):
            wrong.append((m["id"], "name/first_public"))
        if mine.failures != m["failures"]:  # in order: the first is the most direct answer
            wrong.append((m["id"], "failures", mine.failures, m["failures"]))
        papers = [(p.arxiv_id, f"{p.title} ({p.source})" if p.source else p.title,
                   getattr(p, "url", None))
                  for p in mine.papers]
        shared = [(s.get("arxiv"), s["title"], s.get("url")) for s in m["sources"]]
        if papers != shared:
            wrong.append((m["id"], "sources", papers, shared))
        for fw in cat.frameworks:
            checks = (m["frameworks"].get(fw) or {}).get("verification") or []
            for group, listed in (("options", mine.options.get(fw, [])),
                                  ("related", mine.related.get(fw, []))):
                want = [x for x in checks if not x["status"].startswith("not found")
                        and x["status"].startswith("related") == (group == "related")]
                if [o.name for o in listed] != [x["option"] for x in want]:
                    wrong.append((m["id"], fw, group, [o.name for o in listed],
                                  [x["option"] for x in want]))
                    continue
                for o, x in zip(listed, want, strict=True):
                    mine_fields = (o.status, o.file, o.set_by, o.default, o.first_commit)
                    theirs = (x["status"], x["file"], x["set_by"], x.get("default"),
                              x.get("first_commit_with_string"))
                    if mine_fields != theirs:
                        wrong.append((m["id"], fw, o.name, mine_fields, theirs))
    assert not wrong, wrong


# A pasted configuration must not read as "already set" for a method it does not turn on: the
# catalog's `keys` and `value_hint` (our own fields) say which settings are the method's switch.
# Each configuration is written for this test; `on` / `off` are method ids.
@pytest.mark.parametrize(("framework", "config", "on", "off"), [
    # TIS in verl: one float threshold truncates; IcePop is a 'lower_upper' threshold string
    ("verl", "algorithm.rollout_correction.rollout_is=token\n"
             "algorithm.rollout_correction.rollout_is_threshold=2.0\n", {"tis"}, {"icepop"}),
    ("verl", "algorithm.rollout_correction.rollout_is=token\n"
             "algorithm.rollout_correction.rollout_is_threshold='0.5_5.0'\n", {"icepop"}, set()),
    # NeMo-RL's DAPO overlong shaping shares reward_shaping.enabled with the truncation penalty,
    # whose switch is stop_properly_penalty_coef (null by default: off)
    ("nemo-rl", "grpo.reward_shaping.enabled=true\ngrpo.reward_shaping.overlong_buffer_length=512\n",
     {"overlong-reward-shaping"}, {"truncation-penalty"}),
    ("nemo-rl", "grpo.reward_shaping.enabled=true\n"
                "grpo.reward_shaping.stop_properly_penalty_coef=0.0\n", {"truncation-penalty"}, set()),
    # AReaL's plain GRPO normalises by the group mean and std; Dr. GRPO nulls the std level
    ("areal", "actor:\n  reward_norm:\n    mean_level: group\n    std_level: group\n",
     {"grpo"}, {"dr-grpo"}),
    ("areal", "actor:\n  reward_norm:\n    mean_level: group\n    std_level: null\n",
     {"dr-grpo"}, {"grpo"}),
])
def test_a_config_reads_as_set_only_for_the_methods_it_turns_on(
        framework: str, config: str, on: set[str], off: set[str]) -> None:
    from analyzers.setup_config import parse_setup

    found = parse_setup(config, framework)["options"]
    enabled = {m for m, v in found.items() if v["enabled"]}
    assert on <= enabled, (on - enabled, found)
    assert not off & enabled, (off & enabled, found)
