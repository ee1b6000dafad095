"""Where contribution rules live besides the files of `bot.speaking.contribution.FILES`: the
owner's `.github` repository (GitHub's organisation defaults), a folder of PR templates, and
the pages a CONTRIBUTING table of contents links to. Read through the fake GitHub over HTTP;
each test counts the requests a summary costs."""

from __future__ import annotations

from bot.speaking.contribution import (
    MAX_LINKED_PAGES,
    fetch_rule_files,
    format_rules_markdown,
    rules_for_repo,
)

REPO = "acme/widgets"
ORG = "acme/.github"
SIGNOFF = "Every commit must be signed off (`git commit -s`); we require the DCO.\n"
APPROVALS = "Every pull request needs at least two approvals from maintainers.\n"


def _contents_calls(fake) -> list[str]:
    return [c.path for c in fake.requests("GET", r"/contents")]


async def test_organisation_defaults_fill_the_kinds_the_repository_lacks(app_ctx, fake_github) -> None:
    # The repository has its own PR template, but no CONTRIBUTING and no issue templates:
    # GitHub shows the organisation's for those, and so does the summary.
    fake_github.set_file(REPO, ".github/PULL_REQUEST_TEMPLATE.md", "## What does this PR do?\n")
    fake_github.set_file(ORG, "CONTRIBUTING.md", "# Contributing\n\n" + SIGNOFF)
    fake_github.set_file(ORG, ".github/PULL_REQUEST_TEMPLATE.md",
                         "- [ ] Did you update the documentation with your changes?\n")
    fake_github.set_file(ORG, ".github/ISSUE_TEMPLATE/bug.yml",
                         "name: Bug report\nbody:\n  - type: textarea\n    attributes:\n"
                         "      label: Reproduction\n    validations:\n      required: true\n")
    fake_github.set_file(ORG, "profile/README.md", "We build widgets.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == sorted([
        ".github/PULL_REQUEST_TEMPLATE.md", f"{ORG}/CONTRIBUTING.md",
        f"{ORG}/.github/ISSUE_TEMPLATE/bug.yml"])
    rules = {f["rule"]: f for f in summary["facts"]}
    assert rules["signoff_required"]["source"] == f"{ORG}/CONTRIBUTING.md"
    assert "no_contributing" not in rules
    assert "form_required" in rules
    # The repository's own PR template wins: the organisation's is not read.
    assert f"/repos/{ORG}/contents/.github/PULL_REQUEST_TEMPLATE.md" not in _contents_calls(fake_github)
    assert f"`{ORG}/CONTRIBUTING.md`" in format_rules_markdown(summary)
    # repo: root, .github; org: root, .github, ISSUE_TEMPLATE; files: 1 + 2
    assert len(_contents_calls(fake_github)) == 8


async def test_a_repository_with_all_its_own_files_never_asks_the_organisation(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", SIGNOFF)
    fake_github.set_file(REPO, ".github/pull_request_template.md", "## Summary\n")
    fake_github.set_file(REPO, ".github/ISSUE_TEMPLATE/bug.md", "Describe the bug.\n")
    fake_github.set_file(REPO, ".github/DISCUSSION_TEMPLATE/ideas.yml", "body: []\n")
    fake_github.set_file(REPO, "GOVERNANCE.md", "Maintainers decide by consensus.\n")
    fake_github.set_file(ORG, "CONTRIBUTING.md", APPROVALS)
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert not any(p.startswith(ORG) for p in files)
    assert not any(f"/repos/{ORG}/" in p for p in _contents_calls(fake_github))


async def test_a_missing_or_private_organisation_repository_is_absent(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "README.md", "Widgets.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["files"] == [] and "no_contributing" in {f["rule"] for f in summary["facts"]}
    # One listing of the organisation's root (404), nothing more.
    assert [p for p in _contents_calls(fake_github) if ORG in p] == [f"/repos/{ORG}/contents"]


async def test_the_organisation_repository_itself_is_read_once(app_ctx, fake_github) -> None:
    fake_github.set_file(ORG, "CONTRIBUTING.md", SIGNOFF)
    files = await fetch_rule_files(await app_ctx.github.api(None), ORG)
    assert list(files) == ["CONTRIBUTING.md"]


async def test_every_pr_template_of_a_template_folder_is_read(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md", "# Contributing\n")
    fake_github.set_file(REPO, ".github/PULL_REQUEST_TEMPLATE/bugfix.md",
                         "- [ ] Did you add a regression test?\n")
    fake_github.set_file(REPO, ".github/PULL_REQUEST_TEMPLATE/feature.md",
                         "- [ ] Did you update the documentation with your changes?\n")
    fake_github.set_file(REPO, "docs/PULL_REQUEST_TEMPLATE/release.md", "## Release notes\n")
    for n in range(45):
        fake_github.set_file(REPO, f"PULL_REQUEST_TEMPLATE/t{n:02}.md", "## Summary\n")
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert {".github/PULL_REQUEST_TEMPLATE/bugfix.md", ".github/PULL_REQUEST_TEMPLATE/feature.md",
            "docs/PULL_REQUEST_TEMPLATE/release.md"} <= set(files)
    # Bounded as the issue templates are: 40 files of a folder.
    assert len([p for p in files if p.startswith("PULL_REQUEST_TEMPLATE/")]) == 40
    summary = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert "docs_update" in {f["rule"] for f in summary["facts"]}
    # The organisation's PR template is not wanted: the repository has its own.
    assert not any(f"/repos/{ORG}/contents/.github" in p for p in _contents_calls(fake_github))


TOC = """\
# Contributing

This guide is split into pages, one per step of a contribution, so that each stays short
enough to read before you start. Read the ones that concern your change; the maintainers
link to the relevant page when they review a pull request that missed one of them.

- [Pull requests](docs/contributing/pull-requests.md#checklist)
- [Development setup](./docs/development.md?plain=1)
- [Commits][commits]
- [Again](docs/contributing/pull-requests.md)
- [Outside](../other/README.md)
- [Elsewhere](https://example.com/guide.md)
- [Absolute](https://github.com/evil/repo/blob/main/GUIDE.md)
- [Own, absolute](https://github.com/acme/widgets/blob/main/docs/review.md)
- [Code](src/main.py)
- [Missing](docs/gone.md)
- [Top](#top)
- [Mail](mailto:team@example.com)

[commits]: /docs/commits.rst
"""


async def test_a_table_of_contents_is_followed_two_levels(app_ctx, fake_github) -> None:
    assert len(TOC) > 600  # not a stub: its absolute link to another repository is no pointer
    fake_github.set_file(REPO, "CONTRIBUTING.md", TOC)
    fake_github.set_file(REPO, "docs/contributing/pull-requests.md",
                         APPROVALS + "\nSee [deeper](deeper.md).\n")
    fake_github.set_file(REPO, "docs/contributing/deeper.md", "All contributors must sign our CLA.\n")
    fake_github.set_file(REPO, "docs/development.md", "Make sure all tests pass before opening a pull request.\n")
    fake_github.set_file(REPO, "docs/commits.rst", SIGNOFF)
    fake_github.set_file(REPO, "docs/review.md", "Please open an issue before you start work on a new feature.\n")
    fake_github.set_file(REPO, "src/main.py", "print('hi')\n")
    fake_github.set_file("acme/other", "README.md", "Every pull request must have a title in English.\n")
    fake_github.set_file("evil/repo", "GUIDE.md", "All contributors must sign our CLA.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert set(summary["files"]) == {
        "CONTRIBUTING.md", "docs/contributing/pull-requests.md", "docs/development.md",
        "docs/commits.rst", "docs/review.md", "docs/contributing/deeper.md"}
    rules = {f["rule"]: f for f in summary["facts"]}
    assert rules["review_approvals"]["source"] == "docs/contributing/pull-requests.md"
    assert rules["signoff_required"]["source"] == "docs/commits.rst"
    assert {"tests_pass", "issue_first"} <= set(rules)
    # a contribution page's own page is read (fetch82: two levels); no other repository
    assert rules["cla_required"]["sources"] == ["docs/contributing/deeper.md"]
    fetched = _contents_calls(fake_github)
    assert fetched.count(f"/repos/{REPO}/contents/docs/contributing/pull-requests.md") == 1
    assert not any(("src/main.py" in p or "evil" in p or "acme/other" in p) for p in fetched)
    # repo: root and docs/ listings + CONTRIBUTING + 5 pages tried (one 404) + 1 page of a page;
    # org: root (404). (9 before fetch82 followed the second level.)
    assert len(fetched) == 10


async def test_linked_pages_are_bounded_and_a_long_one_is_cut(app_ctx, fake_github) -> None:
    links = "".join(f"- [page {n}](docs/p{n}.md)\n" for n in range(MAX_LINKED_PAGES + 4))
    fake_github.set_file(REPO, "CONTRIBUTING.md", "# Contributing\n\n" + links)
    for n in range(MAX_LINKED_PAGES + 4):
        fake_github.set_file(REPO, f"docs/p{n}.md", f"Page {n}.\n")
    fake_github.set_file(REPO, "docs/p0.md", ("Make sure all tests pass. " * 20 + "\n") * 600)
    summary = await rules_for_repo(app_ctx, REPO)
    pages = [p for p in summary["files"] if p.startswith("docs/")]
    assert len(pages) == MAX_LINKED_PAGES
    assert summary["partial"] == {"docs/p0.md": "cut"}
    assert "`docs/p0.md`" in format_rules_markdown(summary)
    # root and docs/ listings, CONTRIBUTING, the pages, the organisation's root (404)
    assert len(_contents_calls(fake_github)) == 3 + MAX_LINKED_PAGES + 1


async def test_a_followed_pointer_cut_is_named_by_its_key(app_ctx, fake_github) -> None:
    """The pointer's file was noted partial under its path in the other repository: the note
    named `CONTRIBUTING.md`, the repository's own (absent) file."""
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "See https://github.com/acme/community/blob/main/GUIDE.md\n")
    fake_github.set_file("acme/community", "GUIDE.md", ("Make sure all tests pass. " * 20 + "\n") * 600)
    summary = await rules_for_repo(app_ctx, REPO)
    assert summary["partial"] == {"acme/community/GUIDE.md": "cut"}


async def test_a_followed_pointers_links_are_not_read_as_the_repositorys(app_ctx, fake_github) -> None:
    """The file a stub points to lives in another repository: its relative links are not
    pages of this one (they were looked up under `acme/community/...` here)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "See https://github.com/acme/community/blob/main/CONTRIBUTING.md\n")
    fake_github.set_file("acme/community", "CONTRIBUTING.md", "- [Reviews](docs/reviews.md)\n")
    fake_github.set_file("acme/community", "docs/reviews.md", APPROVALS)
    files = await fetch_rule_files(await app_ctx.github.api(None), REPO)
    assert set(files) == {"CONTRIBUTING.md", "acme/community/CONTRIBUTING.md"}
    assert not any("docs/reviews.md" in p for p in _contents_calls(fake_github))


async def test_stored_files_keep_the_pages_and_defaults_for_a_remade_summary(app_ctx, fake_github) -> None:
    """A summary of an earlier RULES_VERSION is made again from the stored files, with no
    request: those files include the organisation's and the linked pages."""
    from sqlalchemy import select

    from bot.store.models import ContributionRules

    fake_github.set_file(REPO, "CONTRIBUTING.md", "# Contributing\n\n- [Commits](docs/commits.md)\n")
    fake_github.set_file(REPO, "docs/commits.md", SIGNOFF)
    fake_github.set_file(ORG, ".github/PULL_REQUEST_TEMPLATE.md",
                         "- [ ] Did you update the documentation with your changes?\n")
    first = await rules_for_repo(app_ctx, REPO)
    async with app_ctx.sessionmaker() as session, session.begin():
        row = await session.scalar(select(ContributionRules))
        assert set(row.files) == {"CONTRIBUTING.md", "docs/commits.md",
                                  f"{ORG}/.github/PULL_REQUEST_TEMPLATE.md"}
        row.summary = {**row.summary, "version": "an earlier one"}
    before = len(fake_github.calls)
    remade = await rules_for_repo(app_ctx, REPO)
    assert len(fake_github.calls) == before
    assert remade["files"] == first["files"] and remade["facts"] == first["facts"]
    assert {"signoff_required", "docs_update"} <= {f["rule"] for f in remade["facts"]}
