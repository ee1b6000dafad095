"""A monorepo's per-package contribution guides (`packages/<name>/CONTRIBUTING.md`): found in
one git tree listing, read for MAX_PACKAGE_GUIDES folders at most, cited by their paths; a tree
cut short or refused, and a guide refused, degrade to what was read with a note. Read through
the fake GitHub over HTTP; each test counts the requests a summary costs."""

from __future__ import annotations

from bot.speaking.contribution import (
    MAX_PACKAGE_GUIDES,
    TREE_KEY,
    fetch_rule_files,
    format_rules_markdown,
    rules_for_repo,
)

REPO = "acme/mono"
ROOT_GUIDE = "# Contributing\n\nRun `just check` before you push; we lint with ruff and mypy.\n"
BACKENDS = ("# Contributing to acme-rollout\n\n## Adding a backend\n\n"
            "New backends go in `acme_rollout/backends/<name>.py` and are registered in "
            "`pyproject.toml`.\n")
SIGNOFF = "Every commit must be signed off (`git commit -s`); we require the DCO.\n"


def _trees(fake) -> list:
    return fake.requests("GET", r"/git/trees/")


def _contents_paths(fake) -> list[str]:
    return [c.path for c in fake.requests("GET", r"/contents")]


async def test_package_guides_are_read_and_cited_by_their_paths(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/acme-rollout/CONTRIBUTING.md", BACKENDS)
    fake_github.set_file(REPO, "packages/acme-rollout/acme_rollout/__init__.py", "")
    fake_github.set_file(REPO, "libs/acme-eval/contributing.rst", SIGNOFF)
    # another project's guide, build output, test data, a template, hidden, too deep: not read
    fake_github.set_file(REPO, "node_modules/left-pad/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "third_party/nccl/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "docs/_build/html/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "tests/fixtures/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "template/{{cookiecutter.name}}/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, ".venv/lib/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "a/b/c/d/CONTRIBUTING.md", SIGNOFF)
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == sorted(["CONTRIBUTING.md", "libs/acme-eval/contributing.rst",
                                       "packages/acme-rollout/CONTRIBUTING.md"])
    sources = {f["rule"]: f["source"] for f in summary["facts"]}
    assert sources["signoff_required"] == "libs/acme-eval/contributing.rst"
    text = format_rules_markdown(summary)
    assert "`packages/acme-rollout/CONTRIBUTING.md`" in text
    assert "acme_rollout/backends/<name>.py" in text
    assert "partial" not in summary
    # One tree listing, no content request for a file it ruled out.
    assert [c.query for c in _trees(fake_github)] == [{"recursive": "1"}]
    assert _trees(fake_github)[0].path == f"/repos/{REPO}/git/trees/HEAD"
    assert not [p for p in _contents_paths(fake_github) if "node_modules" in p or "/d/" in p]
    # root listing, .github listing, org root (404), root guide, 2 package guides, the tree
    assert len(fake_github.calls) == 7


async def test_package_guides_are_bounded_shallowest_first_then_by_path(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    deep = ["a/b/c/CONTRIBUTING.md", "a/b/CONTRIBUTING.md"]
    shallow = [f"pkg{n}/CONTRIBUTING.md" for n in range(MAX_PACKAGE_GUIDES + 2)]
    for path in [*deep, *shallow]:
        fake_github.set_file(REPO, path, SIGNOFF)
    # two spellings in one folder: one guide, the first of CONTRIBUTING_NAMES
    fake_github.set_file(REPO, "pkg0/CONTRIBUTING.rst", SIGNOFF)
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert [p for p in files if p != "CONTRIBUTING.md"] == shallow[:MAX_PACKAGE_GUIDES]


async def test_a_guide_read_as_a_linked_page_is_not_read_again(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         ROOT_GUIDE + "\nSee [the rollout guide](packages/acme-rollout/CONTRIBUTING.md).\n")
    fake_github.set_file(REPO, "packages/acme-rollout/CONTRIBUTING.md", BACKENDS)
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert "packages/acme-rollout/CONTRIBUTING.md" in files
    assert _contents_paths(fake_github).count(f"/repos/{REPO}/contents/packages/acme-rollout/CONTRIBUTING.md") == 1


async def test_a_truncated_tree_reads_what_it_lists_and_says_so(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "aa/CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "zz/CONTRIBUTING.md", BACKENDS)
    fake_github.tree_entry_limit = 3  # CONTRIBUTING.md, aa, aa/CONTRIBUTING.md
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == ["CONTRIBUTING.md", "aa/CONTRIBUTING.md"]
    assert summary["partial"] == {TREE_KEY: "unlisted"}
    # a tree cut short names no file: the repository's own CONTRIBUTING decides
    assert "no_contributing" not in {f["rule"] for f in summary["facts"]}


async def test_a_refused_tree_keeps_the_repositorys_own_files(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, "packages/a/CONTRIBUTING.md", BACKENDS)
    fake_github.rate_limited("GET", r"/git/trees/", times=10)
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == ["CONTRIBUTING.md"]
    assert summary["partial"] == {TREE_KEY: "unlisted"}
    assert "signoff_required" in {f["rule"] for f in summary["facts"]}


async def test_an_empty_repository_has_no_tree_and_no_note(app_ctx, fake_github) -> None:
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == [] and "partial" not in summary
    assert len(_trees(fake_github)) == 1
    # GitHub answers an empty repository's tree 409 "Git Repository is empty."
    fake_github.fail_next("GET", r"/git/trees/", 409, body={"message": "Git Repository is empty."})
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO, partial := {})
    assert files == {} and partial == {}


async def test_a_refused_or_huge_package_guide_is_noted_not_fatal(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/a/CONTRIBUTING.md", BACKENDS)
    fake_github.set_file(REPO, "packages/b/CONTRIBUTING.md", SIGNOFF + "x\n" * 140_000)
    fake_github.fail_next("GET", r"/contents/packages/a/CONTRIBUTING\.md$", 403, times=10,
                          body={"message": "Resource not accessible by integration"})
    partial: dict[str, str] = {}
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO, partial)
    assert sorted(files) == ["CONTRIBUTING.md", "packages/b/CONTRIBUTING.md"]
    assert partial == {"packages/a/CONTRIBUTING.md": "failed", "packages/b/CONTRIBUTING.md": "cut"}


async def test_the_tree_listing_is_not_kept_in_the_etag_cache(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/a/CONTRIBUTING.md", BACKENDS)
    api = await app_ctx.github.api(None)
    await fetch_rule_files(api, REPO)
    await fetch_rule_files(api, REPO)
    first, second = _trees(fake_github)
    assert second.status == 200 and "If-None-Match" not in second.headers
    # (contents answers still are: a 304 costs no rate limit)
    assert fake_github.requests("GET", r"/contents/CONTRIBUTING\.md$")[-1].status == 304


async def test_a_refused_tree_and_a_refused_guide_are_said_in_the_summary(app_ctx, fake_github) -> None:
    """A cut or refused tree listing and a package guide GitHub refused were stored in
    `partial` but not said: a reader took the package's rules for absent. Each is said in
    English and Chinese, as a file read only in part is."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/a/CONTRIBUTING.md", BACKENDS)
    fake_github.fail_next("GET", r"/contents/packages/a/CONTRIBUTING\.md$", 403, times=10,
                          body={"message": "Resource not accessible by integration"})
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["partial"] == {"packages/a/CONTRIBUTING.md": "failed"}
    md = format_rules_markdown(summary)
    assert "Not read (GitHub refused it): `packages/a/CONTRIBUTING.md`." in md
    assert "`packages/a/CONTRIBUTING.md`" in format_rules_markdown(summary, lang="zh")

    fake_github.rate_limited("GET", r"/git/trees/", times=10)
    summary = await rules_for_repo(app_ctx, "acme/other")
    assert summary["partial"] == {TREE_KEY: "unlisted"}
    md = format_rules_markdown(summary)
    assert "Package guides may be missing (GitHub did not list the repository's files in full)." in md
    assert TREE_KEY not in md  # a search pattern, not a file to cite
