"""The tracker pages the app's comments send readers to, driven in-process (aiohttp
TestServer, SQLite and PostgreSQL): every link every failure comment and methods reply makes,
for each framework, kind and language, answers; a method page links each of its sources."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from analyzers.catalog import load_catalog
from bot.speaking.render import (
    command_note,
    compose_failure_comment,
    methods_reply,
    rules_reply,
    withdrawn_comment,
)

CAT = load_catalog()


@pytest.fixture
async def client(ctx) -> Any:
    from bot.app import create_app

    app = create_app(ctx, worker=False)
    async with TestClient(TestServer(app)) as c:
        yield c


def _comments(public: str) -> list[str]:
    bodies = []
    for lang in ("en", "zh"):
        for fid in CAT.frameworks:
            for kind in CAT.failures:
                for also in ([], [k for k in CAT.failures if k != kind][:1]):
                    c = compose_failure_comment(
                        {"failure": {"is_failure_report": True, "category": kind,
                                     "categories": [kind, *also], "confidence": 0.9}},
                        fid, setup=None, lang=lang, public_url=public)
                    if c is not None:
                        bodies.append(c.body)
                bodies.append(methods_reply(kind, fid, lang, public))
            bodies.append(rules_reply(None, fid, lang, public))
        bodies.append(methods_reply("no_such_kind", None, lang, public))
        bodies.append(withdrawn_comment(lang, public))
        bodies.append(command_note("unknown", lang))
    return bodies


async def test_every_link_of_every_comment_answers(client) -> None:
    public = str(client.make_url("")).rstrip("/")
    links: set[str] = set()
    for body in _comments(public):
        found = re.findall(r"\]\(([^)\s]+)\)", body)
        assert all(u.startswith(public) for u in found), [u for u in found if not u.startswith(public)]
        links.update(u[len(public):] or "/" for u in found)
    # every method and failure page the comments can name is among them
    assert {f"/methods/{m}" for m in CAT.methods if any(CAT.methods[m].options.values())} & links
    assert {f"/failures/{k}" for k in CAT.failures} <= links
    bad = []
    for path in sorted(links):
        resp = await client.get(path)
        if resp.status != 200:
            bad.append((path, resp.status))
    assert not bad, bad


async def test_a_method_page_links_each_source(client) -> None:
    """A blog post is a source with a link too (TIS, k3, IcePop, masked IS, truncation
    penalty): the page links it and says what it is."""
    for method in CAT.methods.values():
        resp = await client.get(f"/methods/{method.id}")
        assert resp.status == 200
        html = await resp.text()
        for paper in method.papers:
            url = getattr(paper, "url", None) or (f"https://arxiv.org/abs/{paper.arxiv_id}" if paper.arxiv_id else None)
            if url is not None or paper.source:  # (a 1991 paper has neither id nor link)
                assert url and f'href="{url}"' in html, (method.id, paper.title)
            if paper.source:
                assert paper.source in html, (method.id, paper.source)


def _source_txt(shared_dir, fid: str) -> tuple[str, list[str]]:
    text = (shared_dir / "data" / "frameworks" / fid / "SOURCE.txt").read_text(encoding="utf-8")
    repo = re.search(r"^repository: (\S+)", text, re.M).group(1)
    return repo, text.splitlines()


async def test_a_framework_pages_rules_cite_files_of_the_repository_they_are_in(
        client, shared_dir) -> None:
    """The rule summary a framework page shows before the nightly fetch (the development
    snapshot) cites each file by where it is: AReaL's rules live in areal-project/community's
    CONTRIBUTING.md and GOVERNANCE.md, not in a community/ folder of AReaL; NeMo-RL's stale job
    is a reusable workflow of NVIDIA-NeMo/FW-CI-templates, not a file of NVIDIA-NeMo/RL. As the
    live fetch keys a followed pointer: `owner/repo/path`."""
    import html as html_lib

    cited: dict[str, set[str]] = {}
    for fid in CAT.frameworks:
        resp = await client.get(f"/frameworks/{fid}")
        assert resp.status == 200
        page = re.sub(r"</?bdi>", "", html_lib.unescape(await resp.text()))  # the cited files are isolated
        facts = re.findall(r'<li>.*?<span class="small muted">\(([^()]*?)(?:, observed)?\)</span></li>',
                           page)
        assert facts, fid
        cited[fid] = {s.strip() for f in facts for s in f.split(";") if s.strip()}
    assert "community/CONTRIBUTING.md" not in cited["areal"]
    assert "community/GOVERNANCE.md" not in cited["areal"]
    assert "areal-project/community/CONTRIBUTING.md" in cited["areal"]
    assert ".github/workflows/_close_inactive_issue_pr.yml" not in cited["nemo-rl"]
    assert "NVIDIA-NeMo/FW-CI-templates/.github/workflows/_close_inactive_issue_pr.yml" in cited["nemo-rl"]
    # every other file cited is one the snapshot copied from that repository, or a path an
    # observation names
    from analyzers.rules import observed_facts

    for fid, paths in cited.items():
        repo, lines = _source_txt(shared_dir, fid)
        copied = {line.partition("<-")[2].strip() for line in lines if "<-" in line}
        observed = {o["source"] for o in observed_facts().get(fid, [])}
        for path in paths:
            other = path.count("/") >= 2 and any(f"repo {'/'.join(path.split('/')[:2])}" in line
                                                 for line in lines)
            assert path in copied or path in observed or other, (fid, path)


async def test_failure_pages_label_each_source_link_by_what_it_is(client) -> None:
    """A failure page links each method's sources: an arXiv paper as `arXiv:<id>`, a blog post
    by what it is (never `arXiv:None`)."""
    for key in CAT.failures:
        resp = await client.get(f"/failures/{key}")
        assert resp.status == 200
        page = await resp.text()
        assert "arXiv:None" not in page and "None</a>" not in page, key
        for method in CAT.methods_for_failure(key):
            for paper in method.papers:
                if paper.arxiv_id:
                    assert f'href="https://arxiv.org/abs/{paper.arxiv_id}">arXiv:{paper.arxiv_id}<' in page
                elif paper.url:
                    assert f'href="{paper.url}">{paper.source}<' in page, (key, method.id)


async def test_a_fact_without_a_file_shows_no_empty_citation(client, shared_dir) -> None:
    """ROLL has no CONTRIBUTING file: that fact cites no file, and the page shows no "()".
    (The page's rules before the nightly fetch are the snapshot in ../shared: skipped
    without it.)"""
    resp = await client.get("/frameworks/roll")
    page = await resp.text()
    assert "No CONTRIBUTING file" in page
    assert '<span class="small muted">()</span>' not in page
