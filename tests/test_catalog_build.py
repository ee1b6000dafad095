"""`make catalog` (training/catalog.py): facts from a catalog.json, the project's own fields from
the YAML, deterministic output, clear refusals that write nothing.

The inputs here are short ones written for these tests (an invented framework and method); the
last test checks the committed catalog against ../shared and skips without it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from analyzers.catalog import CATALOG_DIR, CONTRACT_FAILURE_KEYS, load_catalog_from
from training import catalog as build

SHARED: dict[str, Any] = {
    "schema_version": "1.1",
    "failure_keys": {"entropy_collapse": "entropy falls", "length_bias": "weights by length"},
    "frameworks": [
        {"id": "toyrl", "name": "ToyRL", "repo": "toy-org/toyrl", "former_repos": ["old-org/toyrl"],
         "default_branch": "main",
         "verified_snapshot": {"commit": "b" * 40, "date": "2026-08-01"}},
        {"id": "minirl", "name": "MiniRL", "repo": "mini/minirl", "former_repos": [],
         "default_branch": "trunk",
         "verified_snapshot": {"commit": "c" * 40, "date": "2026-08-02"}},
    ],
    "methods": [
        {"id": "wide-clip", "name": "Wide clip", "aliases": ["wider clip", "clip_wide"],
         "sources": [{"arxiv": "2601.00001", "title": "Clipping Wider", "paper_ref": "[1]"},
                     {"arxiv": None, "title": "Why Wide Clips Work (blog post, A. Writer)",
                      "url": "https://example.org/wide"}],
         "first_public": "2026-01-02", "failures": ["entropy_collapse", "length_bias"],
         "frameworks": {
             "toyrl": {"verification": [
                 {"option": "clip_wide", "status": "found", "file": "toyrl/config.py",
                  "set_by": "trainer.clip_wide=0.3", "default": "0.2",
                  "first_commit_with_string": "abc1234 2026-02-03"},
                 {"option": "wide_switch", "status": "related (does something else)",
                  "file": "toyrl/other.py", "set_by": "trainer.wide_switch=true"}]},
             "minirl": {"verification": [
                 {"status": "not found at snapshot ccccccc", "note": "no such option"}]}},
         "cautions": [{"text": "shared wording, not ours", "source": "toy-org/toyrl toyrl/config.py"}]},
    ],
}

FRAMEWORKS_YAML = """\
# Our header for the frameworks.
frameworks:
- id: toyrl
  name: ToyRL
  repo: toy-org/toyrl
  former_repos: []
  default_branch: main
  verified_commit: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  verified_date: '2026-01-01'
  config_style: dotted overrides such as trainer.clip_wide=0.3, in our words
- id: minirl
  config_style: flags, in our words
"""


def _failures_yaml() -> str:
    lines = ["# Our header for the failure kinds.", "failures:"]
    for key in (*CONTRACT_FAILURE_KEYS, "length_bias"):
        lines += [f"  {key}:", f"    title: Title of {key}", f"    title_zh: 标题{key}",
                  "    description: >-", f"      Our words on {key}, wrapped by hand",
                  "      on two lines.", f"    description_zh: 描述{key}。"]
    return "\n".join(lines) + "\n"


METHODS_YAML = """\
# Our header for the methods.
methods:
- id: wide-clip
  name: Old name
  cautions:
  - text: Our own wording of the caution.
    source: toy-org/toyrl toyrl/config.py
  papers:
  - arxiv_id: null
    title: Why Wide Clips Work
    source: blog post, A. Writer
  options:
    toyrl:
    - name: clip_wide
      set_by: an outdated setting
      keys: [trainer.clip_wide, clip_wide]
      value_hint: '0.3'
      note: Our note on the option.
  related:
    toyrl:
    - name: wide_switch
      keys: [trainer.wide_switch]
  note: Our note on the method.
"""


def _write_inputs(tmp_path: Path, shared: dict[str, Any] | None = None) -> tuple[Path, Path]:
    shared_dir = tmp_path / "shared"
    (shared_dir / "data").mkdir(parents=True)
    (shared_dir / "data" / "catalog.json").write_text(json.dumps(shared or SHARED), encoding="utf-8")
    cat = tmp_path / "catalog"
    cat.mkdir()
    (cat / "frameworks.yaml").write_text(FRAMEWORKS_YAML, encoding="utf-8")
    (cat / "failures.yaml").write_text(_failures_yaml(), encoding="utf-8")
    (cat / "methods.yaml").write_text(METHODS_YAML, encoding="utf-8")
    return shared_dir, cat


def _snapshot(cat: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(cat.iterdir())}


def test_facts_come_from_shared_and_own_fields_stay(tmp_path: Path) -> None:
    shared_dir, cat = _write_inputs(tmp_path)
    _result, changed, _ = build.run(shared_dir, cat)
    assert set(changed) == {"frameworks.yaml", "methods.yaml"}  # failures.yaml had nothing stale
    loaded = load_catalog_from(cat)

    toy = loaded.frameworks["toyrl"]
    assert (toy.verified_commit, toy.verified_date, toy.former_repos) == ("b" * 40, "2026-08-01",
                                                                          ["old-org/toyrl"])
    assert toy.config_style == "dotted overrides such as trainer.clip_wide=0.3, in our words"
    mini = loaded.frameworks["minirl"]  # a stub with only our field got its facts
    assert (mini.name, mini.repo, mini.default_branch) == ("MiniRL", "mini/minirl", "trunk")

    m = loaded.methods["wide-clip"]
    assert (m.name, m.aliases, m.first_public) == ("Wide clip", ["wider clip", "clip_wide"], "2026-01-02")
    assert m.failures == ["entropy_collapse", "length_bias"]
    assert [(p.arxiv_id, p.title, p.source, p.url) for p in m.papers] == [
        ("2601.00001", "Clipping Wider", None, None),
        (None, "Why Wide Clips Work", "blog post, A. Writer", "https://example.org/wide")]
    assert [(c.text, c.source) for c in m.cautions] == [
        ("Our own wording of the caution.", "toy-org/toyrl toyrl/config.py")]
    assert m.note == "Our note on the method."
    (opt,) = m.options["toyrl"]
    assert (opt.set_by, opt.file, opt.status, opt.default, opt.first_commit, opt.commit) == (
        "trainer.clip_wide=0.3", "toyrl/config.py", "found", "0.2", "abc1234 2026-02-03", "b" * 40)
    assert (opt.keys, opt.value_hint, opt.note) == (["trainer.clip_wide", "clip_wide"], "0.3",
                                                    "Our note on the option.")
    assert "minirl" not in m.options  # not found at the snapshot: never listed
    (rel,) = m.related["toyrl"]
    assert (rel.name, rel.status, rel.keys) == ("wide_switch", "related (does something else)",
                                                ["trainer.wide_switch"])

    text = (cat / "methods.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Our header for the methods.\nmethods:\n")
    assert "shared wording" not in text and "an outdated setting" not in text
    assert (cat / "failures.yaml").read_text(encoding="utf-8") == _failures_yaml()
    assert sorted(p.name for p in cat.iterdir()) == sorted(build.FILES)  # no temporary left


def test_rerun_writes_byte_identical_files(tmp_path: Path) -> None:
    shared_dir, cat = _write_inputs(tmp_path / "one")
    build.run(shared_dir, cat)
    first = _snapshot(cat)
    _result, changed, _ = build.run(shared_dir, cat)
    assert changed == [] and _snapshot(cat) == first
    assert build.main(["--check", "--shared", str(shared_dir), "--catalog", str(cat)]) == 0
    # The same inputs elsewhere give the same bytes.
    shared_two, cat_two = _write_inputs(tmp_path / "two")
    build.run(shared_two, cat_two)
    assert _snapshot(cat_two) == first


def test_check_reports_a_difference_and_writes_nothing(tmp_path: Path, capsys) -> None:
    shared_dir, cat = _write_inputs(tmp_path)
    before = _snapshot(cat)
    assert build.main(["--check", "--shared", str(shared_dir), "--catalog", str(cat)]) == 1
    assert "frameworks.yaml, methods.yaml would change" in capsys.readouterr().out
    assert _snapshot(cat) == before


def _refused(tmp_path: Path, shared_dir: Path, cat: Path, capsys) -> str:
    before = _snapshot(cat)
    assert build.main(["--shared", str(shared_dir), "--catalog", str(cat)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and out.err.startswith("make catalog refused: ")
    assert _snapshot(cat) == before  # nothing written, no temporary left behind
    return out.err


def test_refuses_without_shared(tmp_path: Path, capsys) -> None:
    _shared_dir, cat = _write_inputs(tmp_path)
    err = _refused(tmp_path, tmp_path / "no-shared", cat, capsys)
    assert "is not present" in err


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d["methods"][0]["frameworks"]["toyrl"]["verification"][0].pop("file"),
     "'wide-clip' frameworks.toyrl verification[0]: 'file' is missing"),
    (lambda d: d["methods"][0]["frameworks"]["toyrl"]["verification"][0].__setitem__("set_by", 3),
     "'set_by' is not text"),
    (lambda d: d["methods"][0].__setitem__("failures", ["entropy_colapse"]),
     "failure 'entropy_colapse' is not in failure_keys"),
    (lambda d: d["methods"][0]["frameworks"].__setitem__("verI", {"verification": []}),
     "framework 'verI' is not in frameworks"),
    (lambda d: d["frameworks"][0].pop("verified_snapshot"), "verified_snapshot: expected a mapping"),
    (lambda d: d["methods"].append(copy.deepcopy(d["methods"][0])), "method id repeats"),
    (lambda d: d.__setitem__("methods", {"wide-clip": {}}), "methods: expected a list"),
])
def test_refuses_a_malformed_record(tmp_path: Path, capsys, edit, says: str) -> None:
    data = copy.deepcopy(SHARED)
    edit(data)
    shared_dir, cat = _write_inputs(tmp_path, data)
    assert says in _refused(tmp_path, shared_dir, cat, capsys)


def test_refuses_unreadable_json(tmp_path: Path, capsys) -> None:
    shared_dir, cat = _write_inputs(tmp_path)
    (shared_dir / "data" / "catalog.json").write_text('{"methods": [', encoding="utf-8")
    assert "not readable JSON" in _refused(tmp_path, shared_dir, cat, capsys)


def test_refuses_a_new_fact_without_the_projects_own_fields(tmp_path: Path, capsys) -> None:
    data = copy.deepcopy(SHARED)
    data["methods"][0]["frameworks"]["minirl"]["verification"] = [
        {"option": "--wide", "status": "found", "file": "minirl/args.py", "set_by": "--wide 0.3"}]
    data["methods"][0]["cautions"].append({"text": "x", "source": "arXiv 2601.00002"})
    shared_dir, cat = _write_inputs(tmp_path, data)
    err = _refused(tmp_path, shared_dir, cat, capsys)
    assert "options.minirl '--wide' keys" in err and "caution text for source 'arXiv 2601.00002'" in err


def test_refuses_a_new_failure_kind_without_our_texts(tmp_path: Path, capsys) -> None:
    data = copy.deepcopy(SHARED)
    data["failure_keys"]["reward_hacking"] = "the reward is gamed"
    shared_dir, cat = _write_inputs(tmp_path, data)
    assert "failures.yaml 'reward_hacking' titles and descriptions" in _refused(
        tmp_path, shared_dir, cat, capsys)


def test_failure_kinds_keep_our_blocks_in_contract_order(tmp_path: Path) -> None:
    shared_dir, cat = _write_inputs(tmp_path)
    text = _failures_yaml()
    head, _, blocks = text.partition("failures:\n")
    first, rest = blocks.split("  entropy_explosion:\n", 1)
    (cat / "failures.yaml").write_text(head + "failures:\n  entropy_explosion:\n" + rest + first,
                                       encoding="utf-8")
    build.run(shared_dir, cat)
    assert (cat / "failures.yaml").read_text(encoding="utf-8") == text


def test_refuses_what_the_app_would_not_load(tmp_path: Path, capsys) -> None:
    """Two frameworks claiming one repository pass the build but not the loader: nothing is written."""
    data = copy.deepcopy(SHARED)
    data["frameworks"][1]["former_repos"] = ["old-org/toyrl"]
    shared_dir, cat = _write_inputs(tmp_path, data)
    assert "does not load" in _refused(tmp_path, shared_dir, cat, capsys)


def test_records_gone_from_shared_are_dropped_and_named(tmp_path: Path) -> None:
    data = copy.deepcopy(SHARED)
    data["methods"][0]["frameworks"]["toyrl"]["verification"][0]["status"] = "not found at snapshot b"
    shared_dir, cat = _write_inputs(tmp_path, data)
    result, _changed, _ = build.run(shared_dir, cat)
    assert result.dropped == ["methods.yaml 'wide-clip' options.toyrl 'clip_wide' "
                              "(not in ../shared at the snapshot)"]
    assert "toyrl" not in load_catalog_from(cat).methods["wide-clip"].options


def test_committed_catalog_is_what_make_catalog_makes(shared_dir: Path) -> None:
    """analyzers/catalog/*.yaml equals, byte for byte, what the generator builds from ../shared."""
    result, changed, _ = build.run(shared_dir, CATALOG_DIR, check=True)
    assert changed == [], f"run make catalog: {changed} differ from ../shared"
    assert result.dropped == []
    assert yaml.safe_load(result.texts["methods.yaml"])["methods"]


def _with_chinese(set_by_zh: str) -> str:
    return METHODS_YAML.replace(
        "    source: toy-org/toyrl toyrl/config.py\n",
        "    source: toy-org/toyrl toyrl/config.py\n    text_zh: 我们对这条注意事项的中文表述。\n", 1,
    ).replace("      set_by: an outdated setting\n",
              f"      set_by: an outdated setting\n      set_by_zh: '{set_by_zh}'\n", 1)


def test_our_chinese_wording_is_kept(tmp_path: Path) -> None:
    """`text_zh` (by the caution's source) and `set_by_zh` (by framework and option name) are
    our own fields: a rebuild keeps them, beside the English, byte for byte on a rerun."""
    shared_dir, cat = _write_inputs(tmp_path)
    (cat / "methods.yaml").write_text(_with_chinese("`trainer.clip_wide=0.3`"), encoding="utf-8")
    build.run(shared_dir, cat)
    m = load_catalog_from(cat).methods["wide-clip"]
    assert [c.text_zh for c in m.cautions] == ["我们对这条注意事项的中文表述。"]
    assert m.options["toyrl"][0].set_by_zh == "`trainer.clip_wide=0.3`"
    first = _snapshot(cat)
    assert build.run(shared_dir, cat)[1] == [] and _snapshot(cat) == first


def test_refuses_a_chinese_setting_the_shared_facts_outdated(tmp_path: Path, capsys) -> None:
    """../shared changed the value (0.3 -> 0.35): our Chinese wording still says 0.3, so the
    rebuilt catalog does not load and nothing is written, the option named (review zh82)."""
    data = copy.deepcopy(SHARED)
    data["methods"][0]["frameworks"]["toyrl"]["verification"][0]["set_by"] = "trainer.clip_wide=0.35"
    shared_dir, cat = _write_inputs(tmp_path, data)
    (cat / "methods.yaml").write_text(_with_chinese("`trainer.clip_wide=0.3`"), encoding="utf-8")
    err = _refused(tmp_path, shared_dir, cat, capsys)
    assert "does not load" in err and "toyrl[0]: set_by_zh lacks ['trainer.clip_wide=0.35']" in err
