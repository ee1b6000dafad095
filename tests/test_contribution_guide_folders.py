"""Which folders have their own contribution guide, said once for the fetch and the extractor
(fetch82): a sub-project's guide in any folder the fetch reads one from (`sdk/python/`,
`frontend/`, not only `packages/<name>/`) has its rules said of that folder, and so have the
pages it links to; the repository's own places (the root, `.github/`, `docs/`), a docs site's
copy and another repository's file a stub points to are no sub-project. Pages linked from a
linked contribution page are followed, within the same bound, each once, in the same
repository. Read through the fake GitHub over HTTP, stored in SQLite and PostgreSQL."""

from __future__ import annotations

from bot.speaking.contribution import (
    MAX_LINKED_PAGES,
    fetch_rule_files,
    format_rules_markdown,
    rules_for_repo,
)
from tests.test_contribution_package_scope import POLICY, REPO, _facts

ROOT_GUIDE = "# Contributing\n\nThanks for helping. Each part of the repository has its own guide.\n"
SIGNOFF = "# Contributing to {name}\n\nAll commits must be signed off with `git commit -s`.\n"


async def test_a_sub_projects_guide_outside_packages_is_said_of_its_folder(app_ctx, fake_github) -> None:
    """Failed on main: `sdk/python/` and `frontend/` are read by the fetch but the extractor
    took only `packages/`, `libs/`, ... for packages: their sign-off rule was every PR's."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "sdk/python/CONTRIBUTING.md", SIGNOFF.format(name="the Python SDK"))
    fake_github.set_file(REPO, "frontend/CONTRIBUTING.md", SIGNOFF.format(name="the frontend"))
    summary = await rules_for_repo(app_ctx, REPO)
    said = _facts(summary, "signoff")
    assert [f["packages"] for f in said] == [["frontend/", "sdk/python/"]]
    assert said[0]["sources"] == ["frontend/CONTRIBUTING.md", "sdk/python/CONTRIBUTING.md"]
    md = format_rules_markdown(summary)
    line = next(x for x in md.splitlines() if "Signed-off-by" in x)
    assert "“frontend/”, “sdk/python/”" in line
    zh = next(x for x in format_rules_markdown(summary, lang="zh").splitlines() if "Signed-off-by" in x)
    assert "“frontend/”, “sdk/python/” 的改动，见各自的贡献指南" in zh
    # stored as read
    assert (await rules_for_repo(app_ctx, REPO))["facts"] == summary["facts"]


async def test_settings_of_a_folders_guide_are_that_folders(app_ctx, fake_github) -> None:
    """Failed on main: a policy block in `python/CONTRIBUTING.md` was said of every PR."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "python/CONTRIBUTING.md", POLICY.format(name="pyacme"))
    summary = await rules_for_repo(app_ctx, REPO)
    assert [f["packages"] for f in _facts(summary, "policy_approvals")] == [["python/"]]


async def test_a_page_a_folders_guide_links_to_is_that_folders(app_ctx, fake_github) -> None:
    """Failed on main: `frontend/docs/testing.md` (linked from `frontend/CONTRIBUTING.md`) was
    read but its rule said of every PR (only pages under `packages/<name>/` were scoped)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    fake_github.set_file(REPO, "frontend/CONTRIBUTING.md",
                         "# Contributing to the frontend\n\nSee [testing](docs/testing.md).\n")
    fake_github.set_file(REPO, "frontend/docs/testing.md", SIGNOFF.format(name="the frontend"))
    summary = await rules_for_repo(app_ctx, REPO)
    assert [(f["packages"], f["sources"]) for f in _facts(summary, "signoff")] == [
        (["frontend/"], ["frontend/docs/testing.md"])]


async def test_the_repositorys_own_places_docs_copies_and_pointers_are_no_sub_project(
        app_ctx, fake_github) -> None:
    """A guard (passed on main, must still): the docs site's copy, `.github/`'s guide and a
    stub's target in another repository (keyed `owner/name/CONTRIBUTING.md`, two folders deep
    like `sdk/python/`) state the repository's rules, said of every PR."""
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "See https://github.com/acme/community/blob/main/CONTRIBUTING.md\n")
    fake_github.set_file("acme/community", "CONTRIBUTING.md", SIGNOFF.format(name="acme"))
    fake_github.set_file(REPO, "doc/source/contributing.rst",
                         "Contributing\n============\n\nRun ``pytest`` before opening a pull request.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert {"acme/community/CONTRIBUTING.md", "doc/source/contributing.rst"} <= set(summary["files"])
    for rule in ("signoff", "tests"):
        said = _facts(summary, rule)
        assert said and not [f for f in said if f.get("packages")], rule
    # `.github/`'s guide: the repository's own
    fake_github.set_file("acme/other", ".github/CONTRIBUTING.md", SIGNOFF.format(name="other"))
    other = await rules_for_repo(app_ctx, "acme/other")
    assert [f.get("packages") for f in _facts(other, "signoff")] == [None]


def test_rules_of_a_checkout_scope_a_folders_guide(tmp_path, capsys) -> None:
    """`rltracker rules PATH --json` on a checkout (failed on main: every PR's)."""
    import json

    from bot.cli import main

    (tmp_path / "CONTRIBUTING.md").write_text(ROOT_GUIDE, encoding="utf-8")
    (tmp_path / "sdk" / "python").mkdir(parents=True)
    (tmp_path / "sdk" / "python" / "CONTRIBUTING.md").write_text(POLICY.format(name="sdk"),
                                                                 encoding="utf-8")
    assert main(["rules", str(tmp_path), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert [f["packages"] for f in facts if f["rule"] == "policy_approvals"] == [["sdk/python/"]]


async def test_a_rule_several_folders_state_says_guides_in_the_plural(app_ctx, fake_github) -> None:
    """Failed on main: "(for changes to “a/”, “b/”, as the package guide says)"."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", ROOT_GUIDE)
    for name in ("alpha", "beta"):
        fake_github.set_file(REPO, f"packages/{name}/CONTRIBUTING.md", POLICY.format(name=name))
    summary = await rules_for_repo(app_ctx, REPO)
    md = format_rules_markdown(summary)
    line = next(x for x in md.splitlines() if "approving reviews" in x)
    assert "(for changes to “packages/alpha/”, “packages/beta/”, as their guides say)" in line
    # one package: the singular, as before
    fake_github.set_file("acme/one", "packages/alpha/CONTRIBUTING.md", POLICY.format(name="alpha"))
    one = format_rules_markdown(await rules_for_repo(app_ctx, "acme/one"))
    assert "(for changes to “packages/alpha/”, as the package guide says)" in one


# Pages linked from linked pages (a table of contents that leads to another).

TOC = "# Contributing\n\nRead [the contributor docs](docs/contributing/index.md).\n"
INDEX = ("# Contributor docs\n\n- [Pull requests](pull-requests.md)\n- [Style](../style.md)\n"
         "- [Back](../../CONTRIBUTING.md)\n- [Index again](index.md)\n")


async def test_a_page_linked_from_a_linked_contribution_page_is_read(app_ctx, fake_github) -> None:
    """Failed on main: only the index (one level) was read; the rule on the page it links to
    was not in the summary."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", TOC)
    fake_github.set_file(REPO, "docs/contributing/index.md", INDEX)
    fake_github.set_file(REPO, "docs/contributing/pull-requests.md", SIGNOFF.format(name="acme"))
    fake_github.set_file(REPO, "docs/style.md", "# Style\n\nWe lint with ruff.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert {"docs/contributing/index.md", "docs/contributing/pull-requests.md",
            "docs/style.md"} <= set(summary["files"])
    assert [f["sources"] for f in _facts(summary, "signoff")] == [["docs/contributing/pull-requests.md"]]
    # no page twice, no cycle: the guide and the index linked back are not asked again
    for page in (r"CONTRIBUTING\.md", r"docs/contributing/index\.md", r"docs/style\.md"):
        assert len(fake_github.requests("GET", rf"/repos/{REPO}/contents/{page}$")) == 1, page


async def test_second_level_pages_share_the_bound_and_stay_in_the_repository(app_ctx, fake_github) -> None:
    """The two levels together read MAX_LINKED_PAGES pages at most (the first level first);
    an ordinary page's links are not followed (only a contribution page's), nor another
    repository's."""
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "# Contributing\n\n- [contributing docs](docs/contributing/more.md)\n"
                         "- [setup](docs/setup.md)\n")
    many = "".join(f"- [p{n}](p{n}.md)\n" for n in range(MAX_LINKED_PAGES + 2))
    fake_github.set_file(REPO, "docs/contributing/more.md",
                         f"# More\n\n{many}- [elsewhere](https://github.com/acme/other/blob/main/x.md)\n")
    fake_github.set_file(REPO, "docs/setup.md", "# Setup\n\n[not followed](install.md)\n")
    fake_github.set_file(REPO, "docs/install.md", "# Install\n")
    for n in range(MAX_LINKED_PAGES + 2):
        fake_github.set_file(REPO, f"docs/contributing/p{n}.md", f"# Page {n}\n")
    fake_github.set_file("acme/other", "x.md", "# Other\n")
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    pages = [p for p in files if p.startswith("docs/")]
    assert pages == ["docs/contributing/more.md", "docs/setup.md",
                     *[f"docs/contributing/p{n}.md" for n in range(MAX_LINKED_PAGES - 2)]]
    assert not fake_github.requests("GET", r"/contents/docs/install\.md$")
    assert not fake_github.requests("GET", r"/repos/acme/other/")


def test_a_page_is_a_sub_projects_only_inside_a_folder_whose_guide_was_read() -> None:
    """A folder is a sub-project by its own guide, not by its name: the top guide's page under
    `packages/x/` (no guide there) states the repository's rule (main scoped any page under
    `packages/<name>/` to it); under `tools/cli/`, whose guide is read, the page is its."""
    from analyzers.rules import summarize_rules

    page = "# Testing\n\nAll commits must be signed off with `git commit -s`.\n"
    files = {"CONTRIBUTING.md": "# Contributing\n\nSee [testing](packages/x/docs/testing.md).\n",
             "packages/x/docs/testing.md": page}
    said = _facts(summarize_rules(files), "signoff")
    assert [f.get("packages") for f in said] == [None]
    files = {"CONTRIBUTING.md": ROOT_GUIDE, "tools/cli/CONTRIBUTING.md": "# CLI\n\n[t](docs/testing.md)\n",
             "tools/cli/docs/testing.md": page}
    assert [f["packages"] for f in _facts(summarize_rules(files), "signoff")] == [["tools/cli/"]]
