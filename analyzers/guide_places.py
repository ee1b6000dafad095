"""Where a repository keeps its contribution guides, said once for the fetch that reads them
(bot/speaking/contribution.py) and the extractor that scopes their rules (analyzers/rules.py):
which folders below the root hold a sub-project's own guide, and which file a stub guide points
to in another repository (fetch82: the two had their own lists, so a guide the fetch read in
`sdk/python/` had its rules said of every PR).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# A CONTRIBUTING in any of these spellings (lower case; the first wins in a folder).
CONTRIBUTING_NAMES = ("contributing.md", "contributing.rst", "contributing.txt", "contributing")
# The repository's own guide's places (GitHub shows a CONTRIBUTING from the root, `.github/` or
# `docs/`): read as the top guide, never a sub-project's (`.github/` is hidden, below).
REPO_GUIDE_FOLDERS = ("", "docs")
MAX_GUIDE_DEPTH = 3  # folders above the file: `a/b/c/CONTRIBUTING.md` counts, one deeper does not
# A CONTRIBUTING under a docs site's folder (`docs/source/contributing.rst`, `doc/contributing.md`)
# is the documentation's copy of the repository's guide, no sub-project: the fetch reads it as a
# page of the top guide, its rules the repository's (fetch79).
DOCS_SITE_FOLDERS = frozenset({"docs", "doc", "documentation", "website"})
# Folders whose CONTRIBUTING is another project's (vendored code, installed dependencies), build
# output (a docs site, a wheel's tree) or test data; hidden folders (`.github`, `.venv`, `.tox`)
# and template folders (`{{cookiecutter.name}}`) neither.
_NOT_THE_PROJECTS = re.compile(
    r"(?:vendor|vendored|third[_-]?party|3rd[_-]?party|external|externals|extern|deps"
    r"|node_modules|bower_components|site-packages|venv|_build|build|dist|site|_site|public"
    r"|fixtures|testdata|test_data|__fixtures__)", re.I)
# A stub guide's pointer to another repository's file: (owner, name, path).
POINTER = re.compile(r"github\.com/([\w.-]{1,100})/([\w.-]{1,100})/blob/[\w.-]{1,100}/([\w./-]{1,200})")
MAX_STUB_CHARS = 600  # a guide this short that links another repository's file is a stub


def guide_below_root(path: str) -> bool:
    """Whether `path` is a CONTRIBUTING (CONTRIBUTING_NAMES) in a folder below the root that
    may hold a guide of its own: at most MAX_GUIDE_DEPTH deep, not the repository's own places
    (REPO_GUIDE_FOLDERS, `.github/`), not in a hidden, template, vendored, build or test-data
    folder. A docs site's copy (docs_site_guide) is one, read as the top guide's page."""
    folder, _, name = path.rpartition("/")
    if name.lower() not in CONTRIBUTING_NAMES or folder in REPO_GUIDE_FOLDERS:
        return False
    parts = folder.split("/")
    return len(parts) <= MAX_GUIDE_DEPTH and not any(
        p.startswith(".") or "{{" in p or _NOT_THE_PROJECTS.fullmatch(p) for p in parts)


def guide_folder(path: str) -> str | None:
    """The folder (`sdk/python/`) whose own guide `path` is (guide_below_root, not a docs
    site's copy); None for any other path."""
    if not guide_below_root(path) or docs_site_guide(path):
        return None
    return path.rpartition("/")[0] + "/"


def docs_site_guide(path: str) -> bool:
    """Whether a file below the root is under a docs site's folder (DOCS_SITE_FOLDERS): a
    CONTRIBUTING there is the documentation's copy of the repository's guide."""
    return "/" in path and path.split("/", 1)[0].lower() in DOCS_SITE_FOLDERS


def pointed_to(path: str, text: str) -> tuple[str, str] | None:
    """(repository, path) of the file another repository holds that the stub guide or
    governance file `path` points to (a short CONTRIBUTING / GOVERNANCE naming a
    `github.com/<owner>/<name>/blob/` file); None for any other file."""
    if not path.upper().endswith(("CONTRIBUTING.MD", "GOVERNANCE.MD")) or len(text) >= MAX_STUB_CHARS:
        return None
    m = POINTER.search(text)
    return (f"{m.group(1)}/{m.group(2)}", m.group(3)) if m else None


def sub_project_guides(files: Mapping[str, str]) -> dict[str, str]:
    """{path: folder} of the sub-projects' own guides among `files` ({repository path: text}):
    guide_folder's, but for a file a stub points to in another repository (keyed
    `owner/name/path`, as `sdk/python/CONTRIBUTING.md` is two folders deep)."""
    others = {f"{repo}/{target}" for path, text in files.items() if (pointer := pointed_to(path, text))
              for repo, target in [pointer]}
    return {path: folder for path in files if path not in others and (folder := guide_folder(path))}


def sub_project_of(path: str, folders: set[str] | frozenset[str]) -> str | None:
    """The deepest of `folders` (sub-projects' folders, `sdk/python/`) that holds `path`."""
    return max((f for f in folders if path.startswith(f)), key=len, default=None)
