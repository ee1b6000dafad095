"""`rltracker rules PATH` on a local checkout follows the pages its guides link to, as the
app's GitHub fetch does (bot.speaking.contribution.fetch_rule_files): the top guide's and
the package guides' links, one level, MAX_LINKED_PAGES each, read only inside the checkout
(left81). Before, a checkout's linked pages were never read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.cli.rules import summary_for
from bot.speaking.contribution import MAX_LINKED_PAGES

DEV_GUIDE = ("# Development\n\nAll pull requests must be linked to an issue.\n\n"
             "Run `pre-commit run --all-files` before you open a pull request.\n")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_top_guide_s_linked_page_is_read(tmp_path: Path) -> None:
    """A CONTRIBUTING that is a table of contents gave a summary of nothing: its page
    `docs/development.md` was not read (failed on main: files were CONTRIBUTING.md alone)."""
    checkout = tmp_path / "project"
    write(checkout / "CONTRIBUTING.md", "# Contributing\n\nSee [the dev guide](docs/development.md).\n")
    write(checkout / "docs" / "development.md", DEV_GUIDE)
    write(checkout / "docs" / "unlinked.md", DEV_GUIDE)
    summary = summary_for(str(checkout))
    assert summary["files"] == ["CONTRIBUTING.md", "docs/development.md"], summary["files"]
    assert "lint" not in summary["not_stated"], summary


def test_a_package_guide_s_linked_page_is_read(tmp_path: Path) -> None:
    checkout = tmp_path / "project"
    write(checkout / "CONTRIBUTING.md", "# Contributing\n\nBe kind.\n")
    write(checkout / "packages" / "core" / "CONTRIBUTING.md",
          "# Core\n\nRead [setup](../../docs/setup.md) first.\n")
    write(checkout / "docs" / "setup.md", DEV_GUIDE)
    assert "docs/setup.md" in summary_for(str(checkout))["files"]


def test_linked_pages_are_bounded_as_the_fetch_bounds_them(tmp_path: Path) -> None:
    checkout = tmp_path / "project"
    links = "".join(f"- [p{i}](docs/p{i}.md)\n" for i in range(MAX_LINKED_PAGES + 3))
    write(checkout / "CONTRIBUTING.md", f"# Contributing\n\n{links}")
    for i in range(MAX_LINKED_PAGES + 3):
        write(checkout / "docs" / f"p{i}.md", DEV_GUIDE)
    files = summary_for(str(checkout))["files"]
    assert files == ["CONTRIBUTING.md", *(f"docs/p{i}.md" for i in range(MAX_LINKED_PAGES))], files


def test_no_link_leaves_the_checkout(tmp_path: Path) -> None:
    """A `..` past the checkout's root is no page (linked_pages refuses it), and a page that
    is a symlink to a file outside, or inside a folder that is one, is not read."""
    outside = tmp_path / "secret.md"
    write(outside, "# Secret\n\nAll pull requests must be linked to an issue.\n")
    checkout = tmp_path / "project"
    write(checkout / "CONTRIBUTING.md",
          "# Contributing\n\n[a](../secret.md) [b](docs/link.md) [c](elsewhere/secret.md)"
          " [d](/../secret.md)\n")
    (checkout / "docs").mkdir()
    try:
        os.symlink(outside, checkout / "docs" / "link.md")
        os.symlink(tmp_path, checkout / "elsewhere")
    except OSError:
        pytest.skip("no symlinks here")
    summary = summary_for(str(checkout))
    assert summary["files"] == ["CONTRIBUTING.md"], summary["files"]
    assert "issue-first" in summary["not_stated"]


def test_a_symlink_inside_the_checkout_is_read(tmp_path: Path) -> None:
    checkout = tmp_path / "project"
    write(checkout / "CONTRIBUTING.md", "# Contributing\n\nSee [dev](docs/dev.md).\n")
    write(checkout / "guide" / "development.md", DEV_GUIDE)
    (checkout / "docs").mkdir()
    try:
        os.symlink(checkout / "guide" / "development.md", checkout / "docs" / "dev.md")
    except OSError:
        pytest.skip("no symlinks here")
    assert "docs/dev.md" in summary_for(str(checkout))["files"]


def test_a_framework_checkout_s_absolute_links_to_its_repository_count(tmp_path: Path) -> None:
    """A checkout in a folder named as a framework (`verl`) is read as that repository: a
    link `https://github.com/<its repository>/blob/<ref>/...` is a page of the checkout."""
    checkout = tmp_path / "verl"
    write(checkout / "CONTRIBUTING.md", "# Contributing\n\nSee "
          "[dev](https://github.com/verl-project/verl/blob/main/docs/dev.md).\n")
    write(checkout / "docs" / "dev.md", DEV_GUIDE)
    assert "docs/dev.md" in summary_for(str(checkout))["files"]
