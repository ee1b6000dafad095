"""A monorepo's package guides, as the summary says them (fetch79): a rule several packages'
guides state is said of each of those packages and cites each guide (Markdown and the JSON's
`packages`), never of one package only nor of the whole repository; the pages a package guide
links to are read as the top guide's are; a docs-site copy of the guide
(`docs/source/contributing.rst`) is a page of the top guide, not a package. Read through the
fake GitHub over HTTP, stored in SQLite and PostgreSQL."""

from __future__ import annotations

from bot.speaking.contribution import (
    MAX_LINKED_PAGES,
    MAX_PACKAGE_GUIDES,
    fetch_rule_files,
    format_rules_markdown,
    rules_for_repo,
)
from tests.fakegithub import install_app

REPO = "acme/mono"
ROOT_GUIDE = "# Contributing\n\nThanks for helping. Each package has its own guide.\n"
# The same rule in two wordings: the first is read by a stronger rule that makes the second's
# redundant where both are stated.
SIGNOFF_LINE = "# Contributing to {name}\n\nAll commits must be signed off with `git commit -s`.\n"
SIGNOFF_ASK = "# Contributing to {name}\n\nPlease sign off your commits (DCO): use `git commit -s`.\n"
POLICY = ("# Contributing to {name}\n\n```yaml\nreview:\n  approvals: 2\ntests:\n  run: pytest -q\n"
          "commits:\n  style: conventional\n```\n")


def _facts(summary: dict, rule_prefix: str) -> list[dict]:
    return [f for f in summary["facts"] if f["rule"].startswith(rule_prefix)]


async def test_a_rule_two_packages_state_in_two_wordings_is_said_of_both(app_ctx, fake_github) -> None:
    """Failed before: the sign-off fact named and cited packages/alpha only; beta's guide,
    read by a rule the stronger one makes redundant, was silenced with its package."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/alpha/CONTRIBUTING.md", SIGNOFF_LINE.format(name="alpha"))
    fake_github.set_file(REPO, "packages/beta/CONTRIBUTING.md", SIGNOFF_ASK.format(name="beta"))
    summary = await rules_for_repo(app_ctx, REPO)
    said = _facts(summary, "signoff")
    assert sorted(p for f in said for p in f["packages"]) == ["packages/alpha/", "packages/beta/"]
    assert {s for f in said for s in f["sources"]} == {"packages/alpha/CONTRIBUTING.md",
                                                       "packages/beta/CONTRIBUTING.md"}
    md = format_rules_markdown(summary)
    assert "`packages/beta/CONTRIBUTING.md`" in md and "“packages/beta/”" in md
    # stored as read: the row's summary says the same
    assert (await rules_for_repo(app_ctx, REPO))["facts"] == summary["facts"]


async def test_the_repositorys_rule_is_kept_beside_a_packages_stronger_one(app_ctx, fake_github) -> None:
    """Failed before: the top guide's sign-off rule (said of every PR) was silenced by the
    stronger reading of one package's guide, so the summary said it of that package only."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", SIGNOFF_ASK.format(name="mono"))
    fake_github.set_file(REPO, "packages/alpha/CONTRIBUTING.md", SIGNOFF_LINE.format(name="alpha"))
    summary = await rules_for_repo(app_ctx, REPO)
    said = _facts(summary, "signoff")
    everyone = [f for f in said if not f.get("packages")]
    assert [f["sources"] for f in everyone] == [["CONTRIBUTING.md"]]
    assert [f["packages"] for f in said if f.get("packages")] == [["packages/alpha/"]]


async def test_settings_two_package_guides_state_are_one_fact_of_both_packages(app_ctx, fake_github) -> None:
    """Failed before: a package guide's policy block was said as every PR's rule, once per
    package (the same sentence twice, each citing one guide)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/alpha/CONTRIBUTING.md", POLICY.format(name="alpha"))
    fake_github.set_file(REPO, "packages/beta/CONTRIBUTING.md", POLICY.format(name="beta"))
    summary = await rules_for_repo(app_ctx, REPO)
    approvals = _facts(summary, "policy_approvals")
    assert len(approvals) == 1
    assert approvals[0]["packages"] == ["packages/alpha/", "packages/beta/"]
    assert approvals[0]["sources"] == ["packages/alpha/CONTRIBUTING.md", "packages/beta/CONTRIBUTING.md"]
    md = format_rules_markdown(summary)
    line = next(x for x in md.splitlines() if "approving reviews" in x)
    assert "“packages/alpha/”, “packages/beta/”" in line
    assert "`packages/alpha/CONTRIBUTING.md`; `packages/beta/CONTRIBUTING.md`" in line
    assert md.count("approving reviews") == 1
    zh = format_rules_markdown(summary, lang="zh")
    assert "packages/beta/" in next(x for x in zh.splitlines() if "approving reviews" in x)


async def test_a_package_guides_pages_are_read_and_said_of_its_package(app_ctx, fake_github) -> None:
    """Failed before: the pages a package guide links to were not read (a top guide's are)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/alpha/CONTRIBUTING.md",
                         "# Contributing to alpha\n\nSee [testing](docs/testing.md), [the license]"
                         "(LICENSE.md) and [elsewhere](https://example.com/x.md).\n")
    fake_github.set_file(REPO, "packages/alpha/docs/testing.md",
                         "# Testing\n\nAll commits must be signed off with `git commit -s`.\n")
    fake_github.set_file(REPO, "packages/alpha/LICENSE.md", "MIT\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert "packages/alpha/docs/testing.md" in summary["files"]
    assert "packages/alpha/LICENSE.md" not in summary["files"]
    said = _facts(summary, "signoff")
    assert [(f["packages"], f["sources"]) for f in said] == [
        (["packages/alpha/"], ["packages/alpha/docs/testing.md"])]


async def test_package_guides_pages_are_bounded_and_read_once(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    links = "".join(f"- [page {n}](../shared/p{n}.md)\n" for n in range(MAX_LINKED_PAGES + 3))
    for package in ("alpha", "beta"):
        fake_github.set_file(REPO, f"packages/{package}/CONTRIBUTING.md", f"# {package}\n\n{links}")
    for n in range(MAX_LINKED_PAGES + 3):
        fake_github.set_file(REPO, f"packages/shared/p{n}.md", f"# Page {n}\n")
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    pages = [p for p in files if p.startswith("packages/shared/")]
    assert pages == [f"packages/shared/p{n}.md" for n in range(MAX_LINKED_PAGES)]
    for n in range(MAX_LINKED_PAGES):  # beta links to the same pages: not read twice
        assert len(fake_github.requests("GET", rf"/contents/packages/shared/p{n}\.md$")) == 1


async def test_a_docs_site_copy_of_the_guide_is_no_package(app_ctx, fake_github) -> None:
    """Failed before: `docs/source/contributing.rst` took a package guide's place (the last
    package's guide went unread)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    packages = [f"packages/p{n}/CONTRIBUTING.md" for n in range(MAX_PACKAGE_GUIDES)]
    for path in packages:
        fake_github.set_file(REPO, path, SIGNOFF_LINE.format(name=path))
    fake_github.set_file(REPO, "docs/source/contributing.rst",
                         "Contributing\n============\n\nRun ``pytest`` before opening a pull request.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert set(packages) <= set(summary["files"])
    assert "docs/source/contributing.rst" in summary["files"]
    # its rules are the repository's: said of every PR, no package named
    tests = _facts(summary, "tests")
    assert tests and all(not f.get("packages") for f in tests)
    assert any("docs/source/contributing.rst" in f["sources"] for f in tests)


async def test_a_docs_site_copy_counts_among_the_top_guides_pages(app_ctx, fake_github) -> None:
    links = "".join(f"- [page {n}](docs/p{n}.md)\n" for n in range(MAX_LINKED_PAGES))
    fake_github.set_file(REPO, "CONTRIBUTING.md", f"# Contributing\n\n{links}")
    for n in range(MAX_LINKED_PAGES):
        fake_github.set_file(REPO, f"docs/p{n}.md", f"# Page {n}\n")
    fake_github.set_file(REPO, "docs/source/contributing.rst", "Contributing\n============\n")
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert "docs/source/contributing.rst" not in files  # the pages' bound was spent
    # linked from the guide, it is read once, as a page
    fake_github.set_file(REPO, "CONTRIBUTING.md", "# Contributing\n\n[docs](docs/source/contributing.rst)\n")
    files = await fetch_rule_files(await app_ctx.github.api(None), "acme/mono")
    assert "docs/source/contributing.rst" in files
    assert len(fake_github.requests("GET", r"/contents/docs/source/contributing\.rst$")) == 1


async def test_an_unchanged_tree_keeps_the_pages_and_the_docs_copy_unread(app_ctx, fake_github) -> None:
    """GitHub's 304 to the tree listing: the package guides, their pages and the docs site's
    copy are the stored ones, none read again; the summary is the same."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "packages/alpha/CONTRIBUTING.md", "# alpha\n\n[testing](docs/testing.md)\n")
    fake_github.set_file(REPO, "packages/alpha/docs/testing.md", SIGNOFF_LINE.format(name="alpha"))
    fake_github.set_file(REPO, "docs/source/contributing.rst", "Contributing\n============\n")
    await install_app(app_ctx, fake_github, 91, "acme", [REPO])
    first = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert {"packages/alpha/docs/testing.md", "docs/source/contributing.rst"} <= set(first["files"])
    since = len(fake_github.calls)
    again = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert [c.status for c in fake_github.calls[since:] if "/git/trees/" in c.path] == [304]
    assert not [c for c in fake_github.calls[since:]
                if c.path.endswith(("/packages/alpha/docs/testing.md", "/docs/source/contributing.rst"))]
    assert again["files"] == first["files"] and again["facts"] == first["facts"]


def test_rules_of_a_checkout_say_which_packages(tmp_path, capsys) -> None:
    """`rltracker rules PATH [--json]` on a monorepo's checkout says the settings its package
    guides state of those packages (failed before: said twice, as every PR's)."""
    import json

    from bot.cli import main

    (tmp_path / "CONTRIBUTING.md").write_text(ROOT_GUIDE, encoding="utf-8")
    for name in ("alpha", "beta"):
        (tmp_path / "packages" / name).mkdir(parents=True)
        (tmp_path / "packages" / name / "CONTRIBUTING.md").write_text(POLICY.format(name=name),
                                                                      encoding="utf-8")
    assert main(["rules", str(tmp_path), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert [f["packages"] for f in facts if f["rule"] == "policy_approvals"] == [
        ["packages/alpha/", "packages/beta/"]]
    assert main(["rules", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("approving reviews") == 1 and "“packages/beta/”" in out
