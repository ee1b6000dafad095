"""Contribution rules of a repository: its CONTRIBUTING file, templates, agent guides, CODEOWNERS
and inactivity workflows read through the contents API, summarised by analyzers.rules, and
cached in the `contribution_rules` table (one row per repository, refreshed nightly).
"""

from __future__ import annotations

import base64
import functools
import logging
import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import aiohttp
from gidgethub import BadRequest, GitHubException
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from analyzers.catalog import canonical_repo, framework_id
from analyzers.guide_places import (
    CONTRIBUTING_NAMES,
    DOCS_SITE_FOLDERS,
    MAX_GUIDE_DEPTH,
    docs_site_guide,
    guide_below_root,
    pointed_to,
)
from analyzers.rules import RULES_VERSION, format_rules_markdown, summarize_rules
from analyzers.rules_text import file_kind
from bot.analysis import on_analysis_thread
from bot.config import PROJECT_ROOT
from bot.context import AppContext
from bot.files import decoded_text
from bot.github.client import UNCHANGED_LISTING
from bot.store.installations import silenced_installations
from bot.store.models import ContributionRules, Repository
from bot.store.privacy import lock_repositories
from bot.store.types import utcnow

# (the guide places are analyzers/guide_places.py's, named here for the docs' checks)
__all__ = ["format_rules_markdown", "rules_for_repo", "refresh_all", "fetch_rule_files",
           "MAX_AGE", "DOCS_SITE_FOLDERS", "MAX_GUIDE_DEPTH"]

log = logging.getLogger(__name__)

MAX_AGE = timedelta(hours=26)  # nightly refresh plus slack
MAX_FILE_BYTES = 256 * 1024
# Single files, by repository path (first existing spelling of each wins; a CONTRIBUTING is
# matched in any of CONTRIBUTING_NAMES' spellings in its folder).
FILES = (
    "CONTRIBUTING.md", ".github/CONTRIBUTING.md", "docs/CONTRIBUTING.md",
    "GOVERNANCE.md", "AGENTS.md", "CLAUDE.md", ".ai/AGENTS.md",
    ".github/PULL_REQUEST_TEMPLATE.md", "PULL_REQUEST_TEMPLATE.md", "docs/PULL_REQUEST_TEMPLATE.md",
    ".github/CODEOWNERS", "CODEOWNERS", ".github/stale.yml",
)
# Folders whose files are all read (issue, discussion and PR templates: GitHub offers every PR
# template of such a folder), or filtered (workflows); MAX_FOLDER_FILES of each.
FOLDERS = (".github/ISSUE_TEMPLATE", ".github/DISCUSSION_TEMPLATE", ".github/PULL_REQUEST_TEMPLATE",
           "PULL_REQUEST_TEMPLATE", "docs/PULL_REQUEST_TEMPLATE", ".github/workflows")
MAX_FOLDER_FILES = 40
WORKFLOW_NAMES = re.compile(r"stale|inactive|title|semantic|dco|cla|pre-?commit|lint|copyright", re.I)
# GitHub's community health files: a repository lacking one of these kinds is shown the file
# of its owner's `.github` repository (same paths), and so is our summary.
ORG_DEFAULT_KINDS = frozenset({"contributing", "governance", "pr_template", "issue_template",
                               "issue_config", "discussion_template"})
# Pages a CONTRIBUTING links to (a table of contents), in its repository, MAX_LINKED_PAGES in
# all; then the pages those of them that are contribution pages themselves link to (an index,
# `docs/contributing/index.md`, leading on), within the same bound: LINK_LEVELS (fetch82).
MAX_LINKED_PAGES = 8
LINK_LEVELS = 2
LINKED_SUFFIXES = (".md", ".rst", ".txt")
# Link targets: Markdown inline links and reference definitions, reStructuredText embedded
# URIs and targets. Bounded repeats only (linear on 64 KiB bodies).
_LINK = re.compile(
    r"\]\(\s{0,4}<?([^\s()<>]{1,300})"
    r"|^ {0,3}\[[^\]\n]{1,200}\]:[ \t]{0,8}<?([^\s<>]{1,300})"
    r"|<([^\s<>`]{1,300})>`__?"
    r"|^\.\. _[^:\n]{1,200}:[ \t]{0,8}(\S{1,300})",
    re.M,
)
# Linked files that are not contribution guides.
_NOT_A_GUIDE = re.compile(r"^(?:license|licence|copying|notice|changelog|changes|history|authors"
                          r"|code_of_conduct|security)(?:\.|$)", re.I)
# A monorepo's per-package guides (`packages/<name>/CONTRIBUTING.md`, `sdk/python/CONTRIBUTING.md`):
# a CONTRIBUTING in a folder below the root that may hold its own guide (analyzers/guide_places.py:
# the folders, said once with the extractor, which says their rules of the folder), found in ONE
# listing of the whole tree (the git trees API, recursive) and read for MAX_PACKAGE_GUIDES folders
# at most, the shallowest first, then by path. One under a docs site's folder (DOCS_SITE_FOLDERS)
# is the top guide's page instead (within its MAX_LINKED_PAGES, fetch79).
MAX_PACKAGE_GUIDES = 6
# The key under which `partial` says the tree listing was cut (GitHub lists 100,000 entries /
# 7 MB at most) or refused: package guides past it were not looked for.
TREE_KEY = "**/CONTRIBUTING.md"
# The nightly refresh's share of an installation's REST (core) budget: before each repository
# it reads what GitHub last said is left (`rate_left`) and, below REST_RESERVE plus the most one
# repository can ask (MAX_REPO_REQUESTS: docs/rules.md, Review fetch75), leaves that
# installation's remaining repositories to the next night (their stored rules kept, counted
# `deferred`). As the sync keeps RATE_LIMIT_RESERVE GraphQL points (bot/github/sync.py): the
# reserve is what webhooks' comments, labels and reads need until the hourly reset.
REST_RESERVE = 500
MAX_REPO_REQUESTS = 509


# (files, partial notes) of a stored fetch: ContributionRules.files, its summary's `partial`
StoredFiles = tuple[dict[str, str], dict[str, str]]

_REPO_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,99}/[\w.-]{1,100}")


def contents_url(repo: str, path: str) -> str | None:
    """The contents API URL of `path` in `repo`, each segment percent-encoded (a template
    named "feature #1.md" or "why?.md" is a name, not a fragment or a query); None for a
    path that could leave the repository's contents (".." or "." segments, a bad name)."""
    if not _REPO_NAME.fullmatch(repo) or repo.split("/")[1] in (".", ".."):
        return None
    parts = path.split("/") if path else []
    if any(p in ("", ".", "..") for p in parts):
        return None
    return f"/repos/{repo}/contents" + "".join("/" + quote(p, safe="") for p in parts)


def tree_url(repo: str) -> str | None:
    """The git trees API URL listing every file of `repo`'s default branch (HEAD); None for
    a name that is not a repository's (as contents_url)."""
    if contents_url(repo, "") is None:
        return None
    return f"/repos/{repo}/git/trees/HEAD?recursive=1"


class _Fetcher:
    def __init__(self, api: Any) -> None:
        self.api = api
        self.calls = 0
        # path -> "cut" (only its first MAX_FILE_BYTES read) or "unread" (GitHub served no
        # content: over 1 MB): said in the summary, never taken for an absent file. A package
        # guide GitHub refused (a rate limit, an error) is "failed"; a tree listing cut or
        # refused is TREE_KEY -> "unlisted" (guides past it not looked for).
        self.partial: dict[str, str] = {}

    async def get(self, repo: str, path: str) -> Any:
        url = contents_url(repo, path)
        if url is None:
            return None
        self.calls += 1
        try:
            return await self.api.getitem(url)
        except BadRequest as exc:
            # Only a 404 says the file is not there. A 403 (no `contents` permission, a rate
            # limit that outlasted the retries) says nothing about it: raised, so the stored
            # summary is kept instead of being replaced by one of no files.
            if int(getattr(exc, "status_code", 0) or 0) != 404:
                raise
            return None

    async def text(self, repo: str, path: str, key: str | None = None) -> str | None:
        """The text of `path` in `repo`; a partial read is noted under `key` (the path the
        summary cites: another repository's file is keyed `owner/name/path`)."""
        key = key or path
        data = await self.get(repo, path)
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        raw = data.get("content") or ""
        size = int(data.get("size") or 0)
        if not raw and size > 0:
            self.partial[key] = "unread"
            return None
        try:
            blob = base64.b64decode(raw)
        except ValueError:
            return None
        if len(blob) > MAX_FILE_BYTES or size > MAX_FILE_BYTES:
            # The rules of a long guide are near its top: its first 256 KiB, at a line end.
            blob = blob[:MAX_FILE_BYTES]
            blob = blob[: blob.rfind(b"\n") + 1] or blob
            self.partial[key] = "cut"
        return decoded_text(blob)


async def fetch_rule_files(api: Any, repo: str, partial: dict[str, str] | None = None,
                           stored: StoredFiles | None = None) -> dict[str, str]:
    """{path: text} of the contribution files of `repo` (contents API); the files read only
    in part, or not at all for their size, go into `partial` (path -> "cut" or "unread").

    A file of another repository is keyed `owner/name/path`: the kinds `repo` lacks read from
    its owner's `.github` repository (GitHub's organisation defaults), and the file a stub
    CONTRIBUTING points to. The pages a CONTRIBUTING links to in its own repository follow
    (MAX_LINKED_PAGES), then the guides of its packages (`packages/<name>/CONTRIBUTING.md`:
    one tree listing, MAX_PACKAGE_GUIDES; a failure there is noted in `partial`, not raised).
    Folders are listed first, so absent files cost no request: a typical repository needs 4
    listings plus one request per file; docs/rules.md gives the maximum. `stored`: the files
    and partial notes of the last fetch, whose package guides are kept when the tree has not
    changed."""
    fetch = _Fetcher(api)
    files = await _read_repo(fetch, repo, "", kinds=None)
    # where each guide whose links are followed lives: (repository, key prefix)
    origins = {key: (repo, "") for key in files}
    owner = repo.split("/", 1)[0]
    org = f"{owner}/.github"
    lacking = ORG_DEFAULT_KINDS - {file_kind(p) for p in [*files, *fetch.partial]}
    if {"issue_template", "issue_config"} - lacking:
        lacking -= {"issue_template", "issue_config"}  # one issue-template folder or the other
    if lacking and repo.lower() != org.lower():
        defaults = await _read_repo(fetch, org, f"{org}/", kinds=lacking)
        origins.update({key: (org, f"{org}/") for key in defaults})
        files.update(defaults)
    # A stub CONTRIBUTING / GOVERNANCE that points to another repository: follow it once.
    for path, text in list(files.items()):
        pointer = pointed_to(path, text)
        if pointer and pointer[0].lower() != repo.lower():
            other, target = pointer
            key = f"{other}/{target}"
            linked = await fetch.text(other, target, key)
            if linked is not None:
                files[key] = linked
    # A CONTRIBUTING that is a table of contents: its pages, and theirs (LinkWalk).
    # (The repository's and the organisation's: a followed pointer's file is not walked on.)
    walk = LinkWalk(origins, files, known={*files, *fetch.partial})
    while pages := walk.next_pages():
        for key, (source_repo, target) in pages.items():
            text = await fetch.text(source_repo, target, key)
            if text is not None:
                files[key] = text
                walk.read(key, text)
    files.update(await _package_guides(fetch, repo, known={*files, *fetch.partial, *walk.asked},
                                       stored=stored, pages_left=walk.left))
    if partial is not None:
        partial.update(fetch.partial)
    return files


async def _read_repo(fetch: _Fetcher, repo: str, prefix: str,
                     kinds: set[str] | frozenset[str] | None) -> dict[str, str]:
    """{prefix + path: text} of FILES and FOLDERS in `repo`, only those of `kinds` (file_kind)
    when given."""
    listings: dict[str, dict[str, dict[str, Any]] | None] = {}

    async def listing(folder: str) -> dict[str, dict[str, Any]] | None:
        """lower-case name -> entry of `folder`, or None when it does not exist."""
        if folder not in listings:
            parent, _, name = folder.rpartition("/")
            if folder and (await listing(parent) or {}).get(name.lower(), {}).get("type") != "dir":
                listings[folder] = None
            else:
                data = await fetch.get(repo, folder)
                listings[folder] = (
                    {str(e.get("name", "")).lower(): e for e in data if isinstance(e, dict)}
                    if isinstance(data, list) else None
                )
        return listings[folder]

    async def read(path: str) -> bool:
        text = await fetch.text(repo, path, prefix + path)
        if text is not None:
            files[prefix + path] = text
        return text is not None

    files: dict[str, str] = {}
    seen_kinds: set[str] = set()
    for path in FILES:
        if kinds is not None and file_kind(path) not in kinds:
            continue
        # One CONTRIBUTING / PR template / CODEOWNERS: later places are fallbacks.
        family = path.rsplit("/", 1)[-1].lower().split(".")[0]
        if family in seen_kinds and family in {"contributing", "pull_request_template", "codeowners"}:
            continue
        folder, _, name = path.rpartition("/")
        entries = await listing(folder) or {}
        names = CONTRIBUTING_NAMES if family == "contributing" else (name.lower(),)
        entry = next((entries[n] for n in names if entries.get(n, {}).get("type") == "file"), None)
        if entry is not None and await read(f"{folder}/{entry['name']}" if folder else str(entry["name"])):
            seen_kinds.add(family)
    for folder in FOLDERS:
        if kinds is not None and file_kind(f"{folder}/x.yml") not in kinds:
            continue
        entries = await listing(folder)
        for entry in list((entries or {}).values())[:MAX_FOLDER_FILES]:
            if entry.get("type") != "file":
                continue
            name = str(entry.get("name") or "")
            if folder.endswith("workflows") and not WORKFLOW_NAMES.search(name):
                continue
            await read(f"{folder}/{name}")
    return files


class LinkWalk:
    """The pages guides link to in their repositories, level by level: the guides' own links,
    then the links of those pages that are contribution pages themselves (`_linked_from` walks
    only those), LINK_LEVELS levels, MAX_LINKED_PAGES pages in all, the first level first. A
    page is asked once (read or not), none of `known` (read already: a link back to the guide,
    or between pages, is no cycle). The caller reads each level's `next_pages` and hands back
    what it read (`read`)."""

    def __init__(self, guides: dict[str, tuple[str, str]], texts: dict[str, str], known: set[str]) -> None:
        self.level = dict(guides)  # {key: (its repository, the prefix of its key)} walked next
        self.texts = {key: texts[key] for key in guides}
        self.asked = set(known) | set(guides)
        self.left = MAX_LINKED_PAGES
        self.depth = 0
        self.pending: dict[str, tuple[str, str]] = {}

    def next_pages(self) -> dict[str, tuple[str, str]]:
        """{key: (repository, path)} of the pages to read now; empty when the walk is done."""
        if self.depth >= LINK_LEVELS or self.left <= 0 or not self.level:
            return {}
        self.depth += 1
        pages = dict(list(_linked_from(self.level, self.texts, self.asked).items())[:self.left])
        self.left -= len(pages)
        self.asked.update(pages)
        self.level, self.pending = {}, pages
        return pages

    def read(self, key: str, text: str) -> None:
        """The page `key` of the last `next_pages` was read: its links are the next level's."""
        source_repo, target = self.pending[key]
        self.texts[key] = text
        self.level[key] = (source_repo, key[:len(key) - len(target)])


def _linked_from(guides: dict[str, tuple[str, str]], files: dict[str, str],
                 known: set[str]) -> dict[str, tuple[str, str]]:
    """{key: (repository, path)} of the pages the CONTRIBUTING files among `guides` ({key:
    (its repository, the prefix of its key)}) link to, in order, each once, none of `known`."""
    pages: dict[str, tuple[str, str]] = {}
    for key, (source_repo, prefix) in guides.items():
        if file_kind(key) != "contributing":
            continue
        for target in linked_pages(files[key], source_repo, key[len(prefix):]):
            page = prefix + target
            if page not in known:
                pages.setdefault(page, (source_repo, target))
    return pages


def package_guide_paths(tree: list[Any]) -> list[str]:
    """The guides below the root to read from a git tree listing: one CONTRIBUTING per folder
    (the first spelling of CONTRIBUTING_NAMES) where guide_below_root says a folder may hold its
    own; shallowest first, then by path (deterministic), all of them (the caller bounds). Those
    under a docs site's folder (docs_site_guide) are the top guide's pages, the others
    sub-projects' guides."""
    by_folder: dict[str, tuple[int, str]] = {}
    for entry in tree:
        if not isinstance(entry, dict) or entry.get("type") != "blob":
            continue
        path = str(entry.get("path") or "")
        if not guide_below_root(path):
            continue
        folder, _, name = path.rpartition("/")
        rank = CONTRIBUTING_NAMES.index(name.lower())
        if folder not in by_folder or rank < by_folder[folder][0]:
            by_folder[folder] = (rank, path)
    return sorted((path for _, path in by_folder.values()), key=lambda p: (p.count("/"), p))


async def _package_guides(fetch: _Fetcher, repo: str, known: set[str],
                          stored: StoredFiles | None = None, pages_left: int = 0) -> dict[str, str]:
    """{path: text} of the guides below `repo`'s root (package_guide_paths; those in `known`,
    read already, skipped): a docs site's copy of the guide as a page of the top guide (within
    the `pages_left` of its MAX_LINKED_PAGES), MAX_PACKAGE_GUIDES packages' guides, then the
    pages those link to in the repository (MAX_LINKED_PAGES, LinkWalk, as the top guide's):
    one tree request plus one per file. They add to the repository's own files, so a failure
    here degrades to what was read, said in `fetch.partial`, instead of failing the summary.

    `stored`: the files and partial notes of the last complete fetch. GitHub answering the tree
    listing 304 (its ETag kept, UNCHANGED_LISTING: free, a cheap night) says the tree is the
    same, so its guides and their pages are too: taken from there, not read again. Without
    `stored` the listing is asked whole."""
    url = tree_url(repo)
    if url is None:
        return {}
    if stored is None:
        fetch.api.forget_answer(url)
    fetch.calls += 1
    try:
        listing = await fetch.api.getitem(url)
    except (GitHubException, OSError, aiohttp.ClientError) as exc:
        # 404 / 409: no tree to list (an empty repository, no default branch); anything else
        # (a rate limit past the client's retries, 5xx, a dropped connection) is said.
        if int(getattr(exc, "status_code", 0) or 0) not in (404, 409):
            log.warning("file tree of %s not listed (%s); no package guides read", repo, exc)
            fetch.partial[TREE_KEY] = "unlisted"
        return {}
    if listing is UNCHANGED_LISTING:
        stored_files, notes = stored or ({}, {})
        entries: list[Any] = [{"type": "blob", "path": path} for path in [*stored_files, *notes]]

        async def read(path: str) -> str | None:
            if path in notes:
                fetch.partial[path] = notes[path]  # read in part ("cut") or not at all ("unread")
            return stored_files.get(path)
    else:
        if not isinstance(listing, dict):
            return {}
        if listing.get("truncated"):
            fetch.partial[TREE_KEY] = "unlisted"  # the entries served are still read
        entries = listing.get("tree") or []

        async def read(path: str) -> str | None:
            try:
                return await fetch.text(repo, path)
            except (GitHubException, OSError, aiohttp.ClientError) as exc:
                log.warning("%s of %s not read (%s)", path, repo, exc)
                fetch.partial[path] = "failed"
                return None

    found: dict[str, str] = {}

    async def read_each(paths: list[str]) -> dict[str, str]:
        read_now: dict[str, str] = {}
        for path in paths:
            text = await read(path)
            if text is not None:
                read_now[path] = text
        found.update(read_now)
        return read_now

    paths = [p for p in package_guide_paths(entries) if p not in known]
    await read_each([p for p in paths if docs_site_guide(p)][:max(pages_left, 0)])
    guides = await read_each([p for p in paths if not docs_site_guide(p)][:MAX_PACKAGE_GUIDES])
    walk = LinkWalk({path: (repo, "") for path in guides}, guides, known={*known, *found, *fetch.partial})
    while pages := walk.next_pages():
        for key, text in (await read_each(list(pages))).items():
            walk.read(key, text)
    return found


def linked_pages(text: str, repo: str, path: str) -> list[str]:
    """Repository paths of the Markdown / reStructuredText / text pages `text` (the file
    `path` of `repo`) links to in the same repository, in order, each once: relative links
    resolved from the file's folder, `/...` from the root, `https://github.com/<repo>/blob/
    <ref>/...` taken; anchors and queries dropped; a path leaving the repository refused."""
    folder = path.rpartition("/")[0]
    own = f"https://github.com/{repo}/blob/".lower()
    out: dict[str, None] = {}
    for m in _LINK.finditer(text[:MAX_FILE_BYTES]):
        target = next(g for g in m.groups() if g)
        target = target.split("#", 1)[0].split("?", 1)[0]
        if target.lower().startswith(own):
            ref_and_path = target[len(own):].split("/", 1)
            if len(ref_and_path) != 2:
                continue
            target = "/" + ref_and_path[1]
        elif ":" in target or target.startswith("//") or not target:
            continue  # another host, mailto:, a scheme
        start = [] if target.startswith("/") else [p for p in folder.split("/") if p]
        parts = start
        for part in unquote(target).split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    break
                parts.pop()
            else:
                parts.append(part)
        else:
            resolved = "/".join(parts)
            name = parts[-1] if parts else ""
            root_readme = len(parts) == 1 and name.lower().startswith("readme.")  # the project's
            if (resolved and resolved.lower().endswith(LINKED_SUFFIXES) and not _NOT_A_GUIDE.match(name)
                    and not root_readme
                    and resolved != path and contents_url(repo, resolved) is not None):
                out.setdefault(resolved, None)
    return list(out)


def note_partial(summary: dict[str, Any], partial: dict[str, str]) -> dict[str, Any]:
    """`summary` saying which files were read only in part or not at all; a CONTRIBUTING file
    GitHub would not serve is not "no CONTRIBUTING file"."""
    if not partial:
        return summary
    summary["partial"] = dict(sorted(partial.items()))
    # (a tree listing cut short, TREE_KEY, names no file that exists)
    if any(file_kind(p) == "contributing" and how != "unlisted" for p, how in partial.items()):
        summary["facts"] = [f for f in summary.get("facts", []) if f.get("rule") != "no_contributing"]
    return summary

# Folders read from disk (`rltracker rules PATH`, the development snapshots in ../shared).
SHARED_FRAMEWORKS = PROJECT_ROOT.parent / "shared" / "data" / "frameworks"
SKIP_DIRS = {".git", "node_modules", ".venv", "__pycache__"}
# Files of a real checkout that are read besides the kinds file_kind() recognises.
EXTRA_NAMES = {"agents.md", "claude.md", "governance.md"}


_OTHER_REPO = re.compile(r"\brepo ([\w.-]{1,100})/([\w.-]{1,100})")


def _source_map(folder: Path) -> dict[str, str]:
    """copy name -> repository path, from a snapshot's SOURCE.txt ("copy <- path" lines).

    A copy named `<name>__...` where SOURCE.txt says a file comes from `repo <owner>/<name>`
    (another repository: AReaL's rules in areal-project/community, NeMo-RL's stale job in
    NVIDIA-NeMo/FW-CI-templates) is that repository's file, keyed `<owner>/<name>/<path>` as the
    live fetch keys a followed pointer: it is not cited as a file of the framework's own
    repository. Otherwise a path claimed by two copies is not used for either."""
    source = folder / "SOURCE.txt"
    if not source.is_file():
        return {}
    text = source.read_text(encoding="utf-8", errors="replace")
    own = re.search(r"^repository:\s*(\S+)", text, re.M)
    others = {name: f"{owner}/{name}" for owner, name in _OTHER_REPO.findall(text)
              if not (own and f"{owner}/{name}".lower() == own.group(1).lower())}
    pairs = []
    for line in text.splitlines():
        if "<-" in line:
            copy, _, path = line.partition("<-")
            copy, path = copy.strip(), path.strip()
            prefix = copy.split("__", 1)[0] if "__" in copy else ""
            if prefix in others and path:
                path = f"{others[prefix]}/{path}"
            pairs.append((copy, path))
    counts: dict[str, int] = {}
    for _, path in pairs:
        counts[path] = counts.get(path, 0) + 1
    return {copy: path for copy, path in pairs if copy and path and counts[path] == 1}


def load_folder(folder: Path, partial: dict[str, str] | None = None,
                repo: str | None = None) -> dict[str, str]:
    """{repository path: text} of the contribution files in `folder`; those over
    MAX_FILE_BYTES are read to there (at a line end) and named in `partial` ("cut"). A
    checkout (not a snapshot, whose pages are copied already) adds the pages its guides link
    to (checkout_pages); `repo`, its GitHub name when known, lets its absolute links count."""
    mapping = _source_map(folder)
    snapshot = bool(mapping) or any("__" in p.name for p in folder.iterdir())
    root = folder.resolve()
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel_parts = path.relative_to(folder).parts
        if not path.is_file() or SKIP_DIRS.intersection(rel_parts) or path.name == "SOURCE.txt":
            continue
        rel = "/".join(rel_parts)
        repo_path = mapping.get(rel) or rel.replace("__", "/")
        kind = file_kind(repo_path)
        if not snapshot and kind in ("doc", "yaml") and path.name.lower() not in EXTRA_NAMES:
            continue  # a checkout: only contribution files, not every document
        if not snapshot and _inside(root, rel) is None:
            continue  # a symlink out of the checkout
        files[repo_path] = _read_capped(path, repo_path, partial)
    if not snapshot:
        files.update(checkout_pages(root, files, partial, repo or LOCAL_REPO))
    return files


# The name a checkout's links are resolved under when its GitHub name is not known: only its
# relative and root-relative links then count.
LOCAL_REPO = "local/checkout"


def _read_capped(path: Path, repo_path: str, partial: dict[str, str] | None) -> str:
    """The text of `path`, to MAX_FILE_BYTES (cut at a line end, noted in `partial`)."""
    with path.open("rb") as handle:
        blob = handle.read(MAX_FILE_BYTES + 1)
    if len(blob) > MAX_FILE_BYTES:
        blob = blob[:MAX_FILE_BYTES]
        blob = blob[: blob.rfind(b"\n") + 1] or blob
        if partial is not None:
            partial[repo_path] = "cut"
    return decoded_text(blob)


def _inside(root: Path, repo_path: str) -> Path | None:
    """The regular file `repo_path` names in the checkout `root` (resolved), symlinks
    followed, or None when it is absent, not a file, in SKIP_DIRS or resolves outside `root`."""
    parts = repo_path.split("/")
    if SKIP_DIRS.intersection(parts) or any(p in ("", ".", "..") for p in parts):
        return None
    try:
        resolved = root.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):  # absent, or a symlink loop
        return None
    return resolved if resolved.is_relative_to(root) and resolved.is_file() else None


def checkout_pages(root: Path, files: dict[str, str], partial: dict[str, str] | None,
                   repo: str) -> dict[str, str]:
    """{path: text} of the pages a checkout's guides link to, as fetch_rule_files follows
    them on GitHub (LinkWalk: two levels, each once, by the same filter): the top
    guide's (the first CONTRIBUTING of FILES' places), MAX_LINKED_PAGES; then those of
    MAX_PACKAGE_GUIDES package guides (package_guide_paths), MAX_LINKED_PAGES more. Only
    files inside `root` are read (`_inside`): a `..` past the root is no page, nor a symlink
    out (left81). A docs site's copy of the guide is read with the checkout's files already."""
    by_lower = {path.lower(): path for path in files}
    top_places = [p.rpartition("/")[0] for p in FILES if file_kind(p) == "contributing"]
    top = next((by_lower[f"{folder}/{name}".lstrip("/")] for folder in top_places
                for name in CONTRIBUTING_NAMES if f"{folder}/{name}".lstrip("/") in by_lower), None)
    packages = [p for p in package_guide_paths([{"type": "blob", "path": p} for p in files])
                if not docs_site_guide(p)][:MAX_PACKAGE_GUIDES]
    found: dict[str, str] = {}
    for guides in ([top] if top else [], packages):
        walk = LinkWalk({guide: (repo, "") for guide in guides}, files,
                        known={*files, *found, *(partial or {})})
        while pages := walk.next_pages():
            for page in pages:
                path = _inside(root, page)
                if path is not None:
                    found[page] = _read_capped(path, page, partial)
                    walk.read(page, found[page])
    return found


async def _installation_id(ctx: AppContext, repo: str) -> int | None:
    """The installation to read `repo` through; None (GITHUB_TOKEN, or anonymously) when it
    has none, or one suspended or uninstalled (its token is refused)."""
    async with ctx.sessionmaker() as session:
        installation_id = await session.scalar(
            select(Repository.installation_id).where(func.lower(Repository.full_name) == repo.lower())
        )
        if installation_id in await silenced_installations(session):
            return None
        return installation_id


async def cached_rules(ctx: AppContext, repo: str) -> ContributionRules | None:
    async with ctx.sessionmaker() as session:
        return await session.scalar(
            select(ContributionRules).where(func.lower(ContributionRules.repo) == repo.lower())
        )


async def store_rules(ctx: AppContext, repo: str, files: dict[str, str],
                      summary: dict[str, Any], fetched_at: Any = None) -> bool:
    """The row of `repo` written (inserted, or updated). Two first fetches at once both
    find no row: the second insert meets the unique name and updates the row instead.
    Nothing is written of a repository whose row is marked private, read under the lock a
    `forget` takes (`lock_repositories`): one made private while its files were read is not
    given its rules back after `forget` deleted them. False when nothing was written."""
    try:
        return await _store_rules(ctx, repo, files, summary, fetched_at)
    except IntegrityError:
        return await _store_rules(ctx, repo, files, summary, fetched_at)


async def _store_rules(ctx: AppContext, repo: str, files: dict[str, str],
                       summary: dict[str, Any], fetched_at: Any) -> bool:
    async with ctx.sessionmaker() as session, session.begin():
        if await lock_repositories(session, [repo]):
            log.info("contribution rules of %s not stored: the repository is private", repo)
            return False
        row = await session.scalar(
            select(ContributionRules).where(func.lower(ContributionRules.repo) == repo.lower())
        )
        if row is None:
            row = ContributionRules(repo=repo)
            session.add(row)
        row.files = files
        row.summary = summary
        row.fetched_at = fetched_at or utcnow()
        return True


_SNAPSHOTS: dict[str, dict[str, Any] | None] = {}


def snapshot_rules(framework: str) -> dict[str, Any] | None:
    """Development fallback: the framework's snapshot in ../shared, summarised once."""
    if framework not in _SNAPSHOTS:
        folder = SHARED_FRAMEWORKS / framework
        summary = None
        if folder.is_dir():
            summary = summarize_rules(load_folder(folder), framework=framework)
            summary["source"] = "snapshot"
            summary["fetched_at"] = None
        _SNAPSHOTS[framework] = summary
    return _SNAPSHOTS[framework]


async def rules_for_repo(ctx: AppContext, repo: str, *, refresh: bool = False,
                         max_age: timedelta = MAX_AGE) -> dict[str, Any]:
    """The rule summary of `repo`: from the cache when fresh, else fetched and stored.

    A failed fetch falls back to the cached summary however old it is; with no cache at all
    the error propagates (the caller decides whether to skip its comment)."""
    return (await _rules_for_repo(ctx, repo, refresh=refresh, max_age=max_age))[0]


async def _rules_for_repo(ctx: AppContext, repo: str, *, refresh: bool,
                          max_age: timedelta) -> tuple[dict[str, Any], str]:
    """(the summary, where it came from): `refreshed` (fetched and stored), `private` (fetched,
    not stored: the repository is marked private), `cached` (the stored summary: fresh, or
    GitHub failed), `snapshot` (no credentials: this checkout's development snapshot)."""
    repo = canonical_repo(repo)
    row = await cached_rules(ctx, repo)
    if row is not None and (row.summary or {}).get("version") != RULES_VERSION and row.files:
        # Written by an earlier extractor: its rules are made again from the stored files
        # (no request), so a release's corrections do not wait for the next fetch.
        redone = await on_analysis_thread(functools.partial(
            summarize_rules, dict(row.files), framework=framework_id(repo)))
        redone["repo"] = repo
        note_partial(redone, dict((row.summary or {}).get("partial") or {}))
        await store_rules(ctx, repo, dict(row.files), redone, fetched_at=row.fetched_at)
        row = await cached_rules(ctx, repo)
    if row is not None and not refresh and utcnow() - row.fetched_at <= max_age:
        return dict(row.summary), "cached"
    if ctx.github is None or not (ctx.settings.has_app_credentials or ctx.settings.token):
        # No credentials (dev mode, a demo replay): GitHub is not called, as for the
        # repository config; the cache, else this checkout's development snapshot.
        if row is not None:
            return dict(row.summary), "cached"
        framework = framework_id(repo)
        summary = await on_analysis_thread(snapshot_rules, framework) if framework else None
        if summary is not None:
            return dict(summary), "snapshot"
        raise RuntimeError("no GitHub credentials to fetch contribution rules")
    try:
        api = await ctx.github.api(await _installation_id(ctx, repo))
        partial: dict[str, str] = {}
        files = await fetch_rule_files(api, repo, partial, stored=_complete_files(row))
    except (GitHubException, OSError, aiohttp.ClientError) as exc:
        # (a dropped connection is an aiohttp.ClientError, not an OSError)
        if row is not None:
            log.warning("contribution rules of %s not refreshed (%s); using the cache", repo, exc)
            return dict(row.summary), "cached"
        raise
    summary = await on_analysis_thread(functools.partial(summarize_rules, files, framework=framework_id(repo)))
    summary["repo"] = repo
    note_partial(summary, partial)
    stored = await store_rules(ctx, repo, files, summary)
    return summary, "refreshed" if stored else "private"


def _complete_files(row: ContributionRules | None) -> StoredFiles | None:
    """The stored files and partial notes of `row`, whose package guides may be kept on an
    unchanged tree: None when there is no row, or its tree listing or a guide failed (both
    asked again)."""
    if row is None:
        return None
    partial = dict((row.summary or {}).get("partial") or {})
    if TREE_KEY in partial or "failed" in partial.values():
        return None
    return dict(row.files or {}), partial


async def refresh_all(ctx: AppContext) -> dict[str, int]:
    """Nightly: refresh the rules of the seven frameworks and of every installed repository."""
    repos: list[str] = []
    try:
        from analyzers.catalog import load_catalog

        repos += [f.repo for f in load_catalog().frameworks.values()]
    except Exception as exc:  # noqa: BLE001
        log.warning("catalog unavailable for the rules refresh: %s", exc)
    async with ctx.sessionmaker() as session:
        installed = await session.scalars(
            select(Repository.full_name).where(Repository.installation_id.is_not(None),
                                               Repository.private.is_not(True))
        )
        repos += list(installed)
    # refreshed: read from GitHub and stored; private: read, but not stored (the repository
    # is marked private, or was made private while its files were read); cached: nothing
    # read (GitHub failed, or no credentials) and what was stored before (or the checkout's
    # snapshot) kept; deferred: not asked tonight, what was stored kept (the REST budget its
    # installation keeps for webhooks, REST_RESERVE); failed: not even that. (All but failed
    # counted as refreshed: a write refused and a fetch that failed read as a night's refresh.)
    counts = {"refreshed": 0, "failed": 0, "private": 0, "cached": 0, "deferred": 0}
    spent: set[int | None] = set()  # installations (None: GITHUB_TOKEN) left for tomorrow
    for repo in dict.fromkeys(canonical_repo(r) for r in repos):
        try:
            if await _budget_spent(ctx, repo, spent):
                counts["deferred"] += 1
                continue
            _, outcome = await _rules_for_repo(ctx, repo, refresh=True, max_age=MAX_AGE)
            counts["cached" if outcome == "snapshot" else outcome] += 1
        except Exception as exc:  # noqa: BLE001 - one repository must not stop the others
            log.warning("contribution rules of %s failed: %s", repo, exc)
            counts["failed"] += 1
    return counts


async def _budget_spent(ctx: AppContext, repo: str, spent: set[int | None]) -> bool:
    """Whether `repo` is left to the next night: the REST budget of the credentials it is
    read through (its installation's, or GITHUB_TOKEN's) is in `spent`, or what GitHub last
    said is left of it is below REST_RESERVE + MAX_REPO_REQUESTS (then added to `spent`).
    Anonymous reads are nobody's webhooks' budget: never left."""
    if ctx.github is None:
        return False
    installation_id = await _installation_id(ctx, repo)
    if not (installation_id is not None and ctx.settings.has_app_credentials):
        if not ctx.settings.token:
            return False
        installation_id = None
    if installation_id in spent:
        return True
    left = (await ctx.github.api(installation_id)).rate_left("core")
    if left is None or left >= REST_RESERVE + MAX_REPO_REQUESTS:
        return False
    spent.add(installation_id)
    log.warning("rules refresh: %s has %d REST requests left (reserve %d + %d for one "
                "repository); its repositories from %s on keep their stored rules until the next night",
                f"installation {installation_id}" if installation_id is not None else "GITHUB_TOKEN",
                left, REST_RESERVE, MAX_REPO_REQUESTS, repo)
    return True
