"""`make catalog`: rebuild the facts in analyzers/catalog/*.yaml from ../shared/data, reproducibly.

    python -m training.catalog [--check] [--shared DIR] [--catalog DIR]

The catalog holds two kinds of field:

- facts, taken from ../shared/data/catalog.json (third-party, read in place): which methods and
  frameworks exist, names, aliases, sources (title, arXiv id, link), first public dates, the
  failures each method addresses, and per framework each option that exists at the verified
  snapshot (name, `set_by`, file, status, default, first commit) or is a near relative
  (status "related ..."); the frameworks' repositories, former names, branches and snapshots;
  which failure kinds exist;
- the project's own fields, kept from the current YAML: caution texts and notes in our own
  words, the Chinese wording of cautions (`text_zh`) and settings (`set_by_zh`), option `keys` and `value_hint` (what a pasted configuration is matched against),
  `first_landing`, the split of a blog post's title into `title` and `source`, framework
  `config_style`, the failure kinds' titles and descriptions in English and Chinese (their
  blocks are kept byte for byte), and the files' header comments.

Records are matched by id: methods by `id`, frameworks by `id`, failure kinds by key, options by
(framework, option name) within `options` or `related`, cautions by `source` in order, papers by
arXiv id or title. A fact record with no project fields yet (a method, option, caution, failure
kind or framework new in ../shared) is refused with what to write: the script never invents
wording or keys. Project records whose fact is gone from ../shared are dropped and named.

Output is deterministic (order of ../shared, fixed YAML layout), so a rerun on unchanged inputs
writes byte-identical files. The three files are written to a temporary directory beside them,
loaded with `analyzers.catalog.load_catalog_from` (the app's own validation), and only then
renamed into place, each whole; on any refusal nothing is written. `--check` writes nothing
and exits 1 when a file would change.

Exit status: 0 done (or up to date), 1 `--check` found a difference, 2 refused (one line on
stderr: ../shared absent, a record malformed, project fields missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzers.catalog import CATALOG_DIR, CONTRACT_FAILURE_KEYS, CatalogError, load_catalog_from
from training.data import SHARED

FILES = ("frameworks.yaml", "failures.yaml", "methods.yaml")
# Line width of methods.yaml (PyYAML folds longer plain scalars); frameworks.yaml is unfolded.
METHODS_WIDTH = 100
_FAILURE_BLOCK = re.compile(r"^  ([A-Za-z0-9_]+):[ \t]*$")


class BuildRefused(Exception):
    """The catalog cannot be rebuilt; the message is one line saying why."""


@dataclass
class Build:
    texts: dict[str, str]  # file name -> full text
    dropped: list[str] = field(default_factory=list)  # project records whose fact is gone
    counts: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Reading and checking the shared facts


def _where(path: str, *parts: object) -> str:
    return " ".join([path, *(str(p) for p in parts)])


def _text(d: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str | None:
    value = d.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BuildRefused(f"{where}: {key!r} is {'not text' if key in d else 'missing'}")
    return value


def _texts(d: dict[str, Any], key: str, where: str) -> list[str]:
    value = d.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BuildRefused(f"{where}: {key!r} is not a list of text")
    return list(value)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BuildRefused(f"{where}: expected a mapping")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise BuildRefused(f"{where}: expected a list")
    return value


def read_shared(shared: Path) -> dict[str, Any]:
    """../shared/data/catalog.json, checked field by field for what the build reads."""
    path = shared / "data" / "catalog.json"
    if not shared.is_dir():
        raise BuildRefused(f"{shared} is not present (make catalog needs ../shared/data/catalog.json)")
    if not path.is_file():
        raise BuildRefused(f"{path} is not present")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BuildRefused(f"{path}: not readable JSON ({exc})") from None
    name = "catalog.json"
    data = _mapping(data, name)
    failure_keys = _mapping(data.get("failure_keys"), f"{name} failure_keys")
    framework_ids: list[str] = []
    for i, f in enumerate(_list(data.get("frameworks"), f"{name} frameworks")):
        w = _where(name, f"frameworks[{i}]")
        f = _mapping(f, w)
        fid = _text(f, "id", w)
        w = _where(name, f"frameworks[{i}] {fid!r}")
        if fid in framework_ids:
            raise BuildRefused(f"{w}: framework id repeats")
        framework_ids.append(fid)
        for key in ("name", "repo", "default_branch"):
            _text(f, key, w)
        if not isinstance(f.get("former_repos"), list) or not all(
                isinstance(r, str) and r for r in f["former_repos"]):
            raise BuildRefused(f"{w}: 'former_repos' is not a list of text")
        snap = _mapping(f.get("verified_snapshot"), f"{w} verified_snapshot")
        _text(snap, "commit", f"{w} verified_snapshot")
        _text(snap, "date", f"{w} verified_snapshot")
    method_ids: set[str] = set()
    for i, m in enumerate(_list(data.get("methods"), f"{name} methods")):
        w = _where(name, f"methods[{i}]")
        m = _mapping(m, w)
        mid = _text(m, "id", w)
        w = _where(name, f"methods[{i}] {mid!r}")
        if mid in method_ids:
            raise BuildRefused(f"{w}: method id repeats")
        method_ids.add(mid)
        _text(m, "name", w)
        _text(m, "first_public", w, optional=True)
        _texts(m, "aliases", w)
        for key in _texts(m, "failures", w):
            if key not in failure_keys and key not in CONTRACT_FAILURE_KEYS:
                raise BuildRefused(f"{w}: failure {key!r} is not in failure_keys")
        for j, s in enumerate(_list(m.get("sources"), f"{w} sources")):
            ws = f"{w} sources[{j}]"
            s = _mapping(s, ws)
            _text(s, "title", ws)
            _text(s, "arxiv", ws, optional=True)
            _text(s, "url", ws, optional=True)
        for j, c in enumerate(_list(m.get("cautions") or [], f"{w} cautions")):
            _text(_mapping(c, f"{w} cautions[{j}]"), "source", f"{w} cautions[{j}]")
        for fw, v in _mapping(m.get("frameworks"), f"{w} frameworks").items():
            wf = f"{w} frameworks.{fw}"
            if fw not in framework_ids:
                raise BuildRefused(f"{wf}: framework {fw!r} is not in frameworks")
            seen: set[tuple[bool, str]] = set()
            for k, x in enumerate(_list(_mapping(v, wf).get("verification"), f"{wf} verification")):
                wx = f"{wf} verification[{k}]"
                x = _mapping(x, wx)
                status = _text(x, "status", wx)
                assert status is not None
                if status.startswith("not found"):
                    continue
                option = _text(x, "option", wx)
                slot = (status.startswith("related"), option)
                if slot in seen:
                    raise BuildRefused(f"{wx}: option {option!r} repeats")
                seen.add(slot)
                _text(x, "file", wx)
                _text(x, "set_by", wx)
                _text(x, "default", wx, optional=True)
                _text(x, "first_commit_with_string", wx, optional=True)
    return data


def source_txt_differences(shared: Path, data: dict[str, Any]) -> list[str]:
    """Where a framework's ../shared/data/frameworks/<id>/SOURCE.txt (the rules snapshot) names
    another repository, former name, branch or commit than catalog.json: warnings, not facts."""
    out = []
    for f in data["frameworks"]:
        path = shared / "data" / "frameworks" / f["id"] / "SOURCE.txt"
        if not path.is_file():
            continue
        fields: dict[str, str] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition(":")
            if sep and not line.startswith(" "):
                fields.setdefault(key.strip(), value.strip())
        former = re.sub(r"\([^)]*\)", "", fields.get("former names", ""))
        former_repos = [] if former.strip() in ("", "none found") else [
            r.strip() for r in former.split(",") if r.strip()]
        theirs = (fields.get("repository"), former_repos, fields.get("default branch"),
                  fields.get("commit read"))
        ours = (f["repo"], f["former_repos"], f["default_branch"], f["verified_snapshot"]["commit"])
        for label, a, b in zip(("repository", "former names", "default branch", "commit"),
                               theirs, ours, strict=True):
            if a != b:
                out.append(f"frameworks/{f['id']}/SOURCE.txt {label} {a!r} differs from "
                           f"catalog.json {b!r}")
    return out


# ---------------------------------------------------------------------------------------------
# Reading the project's own fields


@dataclass
class Project:
    headers: dict[str, str]
    frameworks: dict[str, dict[str, Any]]
    failure_blocks: dict[str, str]
    methods: dict[str, dict[str, Any]]


def _header(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def _load_yaml(path: Path) -> tuple[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        return text, yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BuildRefused(f"{path.name}: not readable YAML ({first})") from None


def _failure_blocks(text: str, name: str) -> dict[str, str]:
    """failures.yaml's kinds, each as the exact text of its block (own words, hand-wrapped)."""
    lines = text.splitlines(keepends=True)
    i = len(_header(text).splitlines())
    if i >= len(lines) or lines[i].rstrip() != "failures:":
        raise BuildRefused(f"{name}: expected 'failures:' after the header comment")
    blocks: dict[str, str] = {}
    key = None
    for line in lines[i + 1:]:
        match = _FAILURE_BLOCK.match(line)
        if match:
            key = match.group(1)
            if key in blocks:
                raise BuildRefused(f"{name}: failure kind {key!r} repeats")
            blocks[key] = ""
        elif key is None or not (line.startswith("    ") or not line.strip()):
            raise BuildRefused(f"{name}: unexpected line {line.rstrip()[:60]!r}")
        blocks[key] += line
    for key, block in blocks.items():
        try:
            parsed = yaml.safe_load("failures:\n" + block)
        except yaml.YAMLError:
            raise BuildRefused(f"{name}: the block of {key!r} is not readable YAML") from None
        body = parsed["failures"][key] if isinstance(parsed, dict) else None
        if not isinstance(body, dict):
            raise BuildRefused(f"{name}: {key!r} is not a mapping")
        for field_name in ("title", "title_zh", "description", "description_zh"):
            _text(body, field_name, f"{name} {key!r}")
    return blocks


def read_project(catalog_dir: Path) -> Project:
    headers: dict[str, str] = {}
    texts: dict[str, Any] = {}
    for name in FILES:
        path = catalog_dir / name
        if not path.is_file():
            raise BuildRefused(f"{path} is not present (the project's own fields are kept from it)")
        text, data = _load_yaml(path)
        headers[name] = _header(text)
        texts[name] = (text, data)

    fw_data = _mapping(texts["frameworks.yaml"][1], "frameworks.yaml").get("frameworks")
    frameworks: dict[str, dict[str, Any]] = {}
    for i, f in enumerate(_list(fw_data, "frameworks.yaml frameworks")):
        f = _mapping(f, f"frameworks.yaml frameworks[{i}]")
        frameworks[str(_text(f, "id", f"frameworks.yaml frameworks[{i}]"))] = f

    meth_data = _mapping(texts["methods.yaml"][1], "methods.yaml").get("methods")
    methods: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(_list(meth_data, "methods.yaml methods")):
        m = _mapping(m, f"methods.yaml methods[{i}]")
        mid = str(_text(m, "id", f"methods.yaml methods[{i}]"))
        if mid in methods:
            raise BuildRefused(f"methods.yaml: method {mid!r} repeats")
        methods[mid] = m
    blocks = _failure_blocks(texts["failures.yaml"][0], "failures.yaml")
    return Project(headers=headers, frameworks=frameworks, failure_blocks=blocks, methods=methods)


# ---------------------------------------------------------------------------------------------
# Building


def _dump_methods(header: str, methods: list[dict[str, Any]]) -> str:
    return header + yaml.dump({"methods": methods}, Dumper=yaml.SafeDumper, sort_keys=False,
                              allow_unicode=True, width=METHODS_WIDTH)


def _dump_frameworks(header: str, frameworks: list[dict[str, Any]]) -> str:
    return header + yaml.dump({"frameworks": frameworks}, Dumper=yaml.SafeDumper, sort_keys=False,
                              allow_unicode=True, width=float("inf"), default_flow_style=None)


def _paper(source: dict[str, Any], mine: list[dict[str, Any]], where: str,
           dropped: list[str]) -> dict[str, Any]:
    arxiv = source.get("arxiv")
    title = source["title"]
    match = None
    for p in mine:
        if not isinstance(p, dict):
            continue
        if arxiv is not None and p.get("arxiv_id") == arxiv:
            match = p
            break
        composed = f"{p.get('title')} ({p['source']})" if p.get("source") else p.get("title")
        if arxiv is None and p.get("arxiv_id") is None and composed == title:
            match = p
            break
    out: dict[str, Any] = {"arxiv_id": arxiv, "title": title}
    own_source = match.get("source") if match else None
    if own_source:
        suffix = f" ({own_source})"
        if title.endswith(suffix) and len(title) > len(suffix):
            out["title"] = title[: -len(suffix)]
            out["source"] = own_source
        else:
            dropped.append(f"{where}: source {own_source!r} (the shared title no longer ends with it)")
    if source.get("url") is not None:
        out["url"] = source["url"]
    return out


def _option(x: dict[str, Any], mine: dict[str, Any] | None, commit: str, where: str,
            missing: list[str]) -> dict[str, Any]:
    if mine is None or not isinstance(mine.get("keys"), list):
        missing.append(f"{where} keys")
        mine = mine or {}
    out: dict[str, Any] = {"name": x["option"], "set_by": x["set_by"]}
    if mine.get("set_by_zh") is not None:
        # our Chinese wording of the setting: the loader refuses it when the shared set_by
        # changed a fact it keeps (the build then names it)
        out["set_by_zh"] = mine["set_by_zh"]
    out["keys"] = mine.get("keys")
    if mine.get("value_hint") is not None:
        out["value_hint"] = mine["value_hint"]
    if mine.get("requires") is not None:
        out["requires"] = mine["requires"]
    if mine.get("on_by_default") is not None:
        out["on_by_default"] = mine["on_by_default"]
    out["file"] = x["file"]
    out["status"] = x["status"]
    if x.get("default") is not None:
        out["default"] = x["default"]
    out["commit"] = commit
    if x.get("first_commit_with_string") is not None:
        out["first_commit"] = x["first_commit_with_string"]
    for own in ("first_landing", "note"):
        if mine.get(own) is not None:
            out[own] = mine[own]
    return out


def _method(m: dict[str, Any], mine: dict[str, Any] | None, commits: dict[str, str],
            missing: list[str], dropped: list[str]) -> dict[str, Any]:
    mid = m["id"]
    where = f"methods.yaml {mid!r}"
    if mine is None:
        missing.append(f"{where} (new in ../shared: cautions' texts and options' keys)")
        mine = {}
    out: dict[str, Any] = {"id": mid, "name": m["name"], "aliases": list(m["aliases"])}
    my_papers = mine.get("papers") if isinstance(mine.get("papers"), list) else []
    out["papers"] = [_paper(s, my_papers, f"{where} papers[{i}]", dropped)
                     for i, s in enumerate(m["sources"])]
    out["first_public"] = m.get("first_public")
    out["failures"] = list(m["failures"])

    my_cautions = [c for c in (mine.get("cautions") or []) if isinstance(c, dict)]
    used: set[int] = set()
    cautions = []
    for c in m.get("cautions") or []:
        text = text_zh = None
        for j, own in enumerate(my_cautions):
            if j not in used and own.get("source") == c["source"]:
                used.add(j)
                text, text_zh = own.get("text"), own.get("text_zh")
                break
        if not isinstance(text, str) or not text.strip():
            missing.append(f"{where} caution text for source {c['source']!r}")
        caution = {"text": text, "source": c["source"]}
        if text_zh is not None:
            caution["text_zh"] = text_zh
        cautions.append(caution)
    for j, own in enumerate(my_cautions):
        if j not in used:
            dropped.append(f"{where} caution from {own.get('source')!r} (not in ../shared)")
    out["cautions"] = cautions

    for group in ("options", "related"):
        my_group = mine.get(group) if isinstance(mine.get(group), dict) else {}
        built: dict[str, list[dict[str, Any]]] = {}
        for fw, v in m["frameworks"].items():
            mine_fw = {o.get("name"): o for o in (my_group.get(fw) or []) if isinstance(o, dict)}
            for x in v["verification"]:
                status = x["status"]
                if status.startswith("not found") or status.startswith("related") != (group == "related"):
                    continue
                built.setdefault(fw, []).append(_option(
                    x, mine_fw.pop(x["option"], None), commits[fw],
                    f"{where} {group}.{fw} {x['option']!r}", missing))
            for name in mine_fw:
                dropped.append(f"{where} {group}.{fw} {name!r} (not in ../shared at the snapshot)")
        for fw in my_group:
            if fw not in m["frameworks"]:
                for o in my_group[fw] or []:
                    name = o.get("name") if isinstance(o, dict) else o
                    dropped.append(f"{where} {group}.{fw} {name!r} (not in ../shared)")
        if built or group == "options":
            out[group] = built
    if mine.get("note") is not None:
        out["note"] = mine["note"]
    return out


def build(data: dict[str, Any], project: Project) -> Build:
    """The three files' texts from checked shared facts and the project's own fields."""
    missing: list[str] = []
    dropped: list[str] = []

    frameworks = []
    for f in data["frameworks"]:
        mine = project.frameworks.get(f["id"])
        style = mine.get("config_style") if mine else None
        if not isinstance(style, str) or not style.strip():
            missing.append(f"frameworks.yaml {f['id']!r} config_style")
        frameworks.append({
            "id": f["id"], "name": f["name"], "repo": f["repo"],
            "former_repos": list(f["former_repos"]), "default_branch": f["default_branch"],
            "verified_commit": f["verified_snapshot"]["commit"],
            "verified_date": f["verified_snapshot"]["date"], "config_style": style,
        })
    for fid in project.frameworks:
        if fid not in {f["id"] for f in data["frameworks"]}:
            dropped.append(f"frameworks.yaml {fid!r} (not in ../shared)")

    kinds = list(CONTRACT_FAILURE_KEYS) + [k for k in data["failure_keys"] if k not in CONTRACT_FAILURE_KEYS]
    for key in kinds:
        if key not in project.failure_blocks:
            missing.append(f"failures.yaml {key!r} titles and descriptions")
    for key in project.failure_blocks:
        if key not in kinds:
            dropped.append(f"failures.yaml {key!r} (neither a contract key nor in ../shared)")
    failures_text = (project.headers["failures.yaml"] + "failures:\n"
                     + "".join(project.failure_blocks.get(k, "") for k in kinds))

    commits = {f["id"]: f["verified_snapshot"]["commit"] for f in data["frameworks"]}
    methods = [_method(m, project.methods.get(m["id"]), commits, missing, dropped)
               for m in data["methods"]]
    for mid in project.methods:
        if mid not in {m["id"] for m in data["methods"]}:
            dropped.append(f"methods.yaml {mid!r} (not in ../shared)")

    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise BuildRefused("the project's own fields are missing, write them in analyzers/catalog "
                           "first: " + "; ".join(missing[:3]) + more)
    return Build(
        texts={
            "frameworks.yaml": _dump_frameworks(project.headers["frameworks.yaml"], frameworks),
            "failures.yaml": failures_text,
            "methods.yaml": _dump_methods(project.headers["methods.yaml"], methods),
        },
        dropped=dropped,
        counts={"methods": len(methods), "frameworks": len(frameworks), "failure kinds": len(kinds)},
    )


# ---------------------------------------------------------------------------------------------
# Writing


def changed_files(catalog_dir: Path, texts: dict[str, str]) -> list[str]:
    out = []
    for name, text in texts.items():
        path = catalog_dir / name
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            out.append(name)
    return out


def write(catalog_dir: Path, texts: dict[str, str]) -> list[str]:
    """Write the files that changed: all into a temporary directory beside them, validated by the
    app's loader, then each renamed into place whole. Nothing is written when validation fails."""
    changed = changed_files(catalog_dir, texts)
    if not changed:
        return []
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=catalog_dir))
    try:
        for name, text in texts.items():
            with (tmp / name).open("w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        try:
            load_catalog_from(tmp)
        except CatalogError as exc:
            raise BuildRefused(f"the rebuilt catalog does not load: {exc}") from None
        for name in changed:
            os.replace(tmp / name, catalog_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return changed


def run(shared: Path, catalog_dir: Path, *, check: bool = False) -> tuple[Build, list[str], list[str]]:
    """Build and (unless `check`) write; returns the build, the files changed (or that would
    change) and warnings. Raises BuildRefused."""
    data = read_shared(shared)
    project = read_project(catalog_dir)
    result = build(data, project)
    warnings = source_txt_differences(shared, data)
    if check:
        return result, changed_files(catalog_dir, result.texts), warnings
    try:
        return result, write(catalog_dir, result.texts), warnings
    except OSError as exc:
        raise BuildRefused(f"could not write {catalog_dir}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a file would change")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared directory (../shared)")
    ap.add_argument("--catalog", type=Path, default=CATALOG_DIR, help="analyzers/catalog")
    args = ap.parse_args(argv)
    try:
        result, changed, warnings = run(args.shared, args.catalog, check=args.check)
    except BuildRefused as exc:
        print(f"make catalog refused: {exc}", file=sys.stderr)
        return 2
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in result.dropped:
        print(f"dropped: {line}")
    counts = ", ".join(f"{n} {what}" for what, n in result.counts.items())
    if args.check:
        print(f"{', '.join(changed)} would change ({counts})" if changed
              else f"catalog up to date ({counts})")
        return 1 if changed else 0
    print(f"wrote {', '.join(changed)} ({counts})" if changed
          else f"catalog unchanged: {', '.join(FILES)} ({counts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
