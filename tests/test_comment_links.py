"""Every link of every kind of comment the app writes, crawled against the served app
(review speech64; aiohttp TestServer, SQLite and PostgreSQL): the rule summary with earlier
proposals found in the store (thread pages, method pages, the proposals list, the framework
page), the failure comment with a setting already on and a second kind, a kind a person set,
the withdrawal, `/rltracker methods` and `rules` replies and every command note. Each link is a
tracker page that answers 200; the method pages they lead to link each paper as
https://arxiv.org/abs/<the catalog's id>."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from analyzers.catalog import load_catalog
from analyzers.setup_config import parse_setup
from bot.speaking.render import (
    command_note,
    compose_failure_comment,
    methods_reply,
    rule_summary_reply,
    rules_reply,
    withdrawn_comment,
)
from bot.speaking.situation import earlier_proposals
from bot.store.models import Analysis
from bot.store.threads import upsert_thread

CAT = load_catalog()
NOW = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.fixture
async def client(ctx) -> Any:
    from bot.app import create_app

    app = create_app(ctx, worker=False)
    async with TestClient(TestServer(app)) as c:
        yield c


async def _proposals(ctx) -> int:
    """Two earlier GSPO proposals (TRL, verl) and the new one in verl; returns its id."""
    rows = [("huggingface/trl", 300, "declined"), ("verl-project/verl", 12, "merged"),
            ("verl-project/verl", 40, "open_no_reply")]
    new_id = 0
    async with ctx.sessionmaker() as session, session.begin():
        for i, (repo, number, state) in enumerate(rows):
            thread = await upsert_thread(session, {
                "repo": repo, "number": number, "kind": "issue", "title": "Support GSPO",
                "state": "open", "created_at": (NOW - timedelta(days=10 - i)).isoformat()})
            session.add(Analysis(
                thread_id=thread.id, analyzer_version="test",
                result={"proposal": {"is_proposal": True, "confidence": 0.9},
                        "review": {"state": state}, "papers": []},
                is_proposal=True, review_state=state, methods=["gspo"], arxiv_ids=["2507.18071"]))
            new_id = thread.id
    return new_id


def _bodies(public: str, earlier: list[dict[str, Any]]) -> list[str]:
    bodies = []
    for lang in ("en", "zh"):
        bodies.append(rule_summary_reply(rules_markdown=None, framework_id="verl", earlier=earlier,
                                         lang=lang, public_url=public))
        many = earlier * 3  # more than four: the "and N more" link
        bodies.append(rule_summary_reply(rules_markdown="- a rule", framework_id="trl",
                                         earlier=many, lang=lang, public_url=public))
        bodies.append(rule_summary_reply(rules_markdown=None, framework_id=None, earlier=[],
                                         lang=lang, public_url=public))
        for fid in CAT.frameworks:
            bodies.append(rules_reply(None, fid, lang, public))
        setup = parse_setup("actor_rollout_ref.actor.clip_ratio_high=0.28", "verl")
        for failure in (
            {"is_failure_report": True, "category": "entropy_collapse",
             "categories": ["entropy_collapse", "kl_growth"], "confidence": 0.8},
            {"is_failure_report": True, "category": "kl_growth", "set_by": "maintainer"},
        ):
            c = compose_failure_comment({"failure": failure}, "verl", setup=setup, lang=lang,
                                        public_url=public)
            assert c is not None
            bodies.append(c.body)
        bodies.append(withdrawn_comment(lang, public))
        bodies.append(withdrawn_comment(lang, public, set_by=True))
        bodies.append(methods_reply("entropy_collapse", None, lang, public))
        for problem in ("unknown", "unknown_kind", "help", "more", "edited"):
            bodies.append(command_note(problem, lang, done="rules", command="kind"))
    return bodies


async def test_every_link_of_every_kind_of_comment_answers(client, ctx) -> None:
    public = str(client.make_url("")).rstrip("/")
    new_id = await _proposals(ctx)
    earlier = await earlier_proposals(ctx, new_id, ["gspo"], ["2507.18071"])
    assert {(e["repo"], e["number"]) for e in earlier} == {("huggingface/trl", 300),
                                                          ("verl-project/verl", 12)}
    links: set[str] = set()
    for body in _bodies(public, earlier):
        found = re.findall(r"\]\(([^)\s]+)\)", body)
        assert all(u.startswith(public + "/") for u in found), [u for u in found
                                                              if not u.startswith(public)]
        links.update(u[len(public):] for u in found)
    assert {"/threads/huggingface/trl/300", "/threads/verl-project/verl/12", "/proposals",
            "/frameworks/verl", "/methods/gspo", "/failures/kl_growth"} <= links
    bad = []
    for path in sorted(links):
        resp = await client.get(path)
        if resp.status != 200:
            bad.append((path, resp.status))
    assert not bad, bad
    # the method pages a comment leads to link each paper at arXiv by the catalog's id
    for path in sorted(p for p in links if p.startswith("/methods/")):
        method = CAT.methods[path.rsplit("/", 1)[1]]
        html = await (await client.get(path)).text()
        shown = set(re.findall(r'href="https://arxiv\.org/abs/([^"#?]+)"', html))
        assert set(method.arxiv_ids) <= shown, (path, method.arxiv_ids, shown)
        assert not re.search(r'href="https?://arxiv\.org/(?!abs/)', html), path
