"""The study's "proposals for methods no framework carries" counts what a stored proposal
proposes (analyzers.proposed), not every catalog method it names: a proposal of a method the
catalog lacks that names GRPO as its comparison counts (proposed66). On SQLite and
PostgreSQL, through /api/study."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.context import AppContext
from bot.store.models import Analysis, Thread

V = "verl-project/verl"
# (number, title, opening post, linked catalog methods as the analysis stores them)
PROPOSALS = [
    (601, "Add FooPO loss", "FooPO works like GRPO but with a learned baseline.", ["grpo"]),
    (602, "Add a new advantage estimator to GRPO", "It replaces the group mean.", ["grpo"]),
    (603, "Support GSPO", "GSPO is better than GRPO on MoE models.", ["grpo", "gspo"]),
    (604, "[Feature] a new estimator", "Please add RLOO. It outperforms PPO.", ["ppo", "rloo"]),
]


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def store(ctx: AppContext, repo: str, rows: list[tuple[int, str, str, list[str]]], *,
                kind: str, state: str, review_state: str,
                closed: Callable[[int], datetime]) -> None:
    """Proposals stored with their analysis (linked methods as the analysis stores them)."""
    async with ctx.sessionmaker() as session:
        for number, title, body, methods in rows:
            thread = Thread(repo=repo, number=number, kind=kind, state=state, title=title,
                            body=body, closed_at=closed(number))
            session.add(thread)
            await session.flush()
            session.add(Analysis(thread_id=thread.id, analyzer_version="test", is_proposal=True,
                                 review_state=review_state, methods=methods,
                                 result={"review": {"state": review_state}}))
        await session.commit()


async def test_a_proposal_naming_grpo_as_context_counts(ctx: AppContext,
                                                        client: TestClient) -> None:
    await store(ctx, V, PROPOSALS, kind="issue", state="closed", review_state="declined",
                closed=lambda number: datetime(2025, 12, 1, tzinfo=UTC))
    data = await (await client.get("/api/study")).json()
    # FooPO (GRPO its comparison) and the estimator (GRPO where it goes) propose no catalog
    # method; GSPO and RLOO are carried (RLOO named by the opening post: the title names none)
    assert data["sets"]["proposals.verl.all"] == [f"{V}#601", f"{V}#602"]
    assert data["frameworks"]["verl"]["proposals"]["declined"] == 2
    assert "none proposed counts" in data["rules"]["proposals"]


def test_texts_not_given_keep_every_linked_method_as_proposed() -> None:
    from analyzers.catalog import load_catalog
    from analyzers.study import StudyThread, compute_study

    def record(number: int, **texts: str) -> StudyThread:
        return StudyThread(repo=V, number=number, kind="issue", state="open", is_proposal=True,
                           review_state="open_no_reply", methods=("grpo",), **texts)

    study = compute_study(load_catalog(), [record(1), record(2, title="Add FooPO",
                                                          body="like GRPO, but ...")])
    assert study["sets"]["proposals.verl.all"] == [f"{V}#2"]


OR = "OpenRLHF/OpenRLHF"
# Merged method pull requests in OpenRLHF, which the catalog lists without CISPO:
# (number, title, opening post, linked catalog methods as the analysis stores them)
MERGED = [
    (701, "Add FooPO loss", "FooPO clips like CISPO but keeps the token gradient.", ["cispo"]),
    (702, "feat: add CISPO loss", "Implements CISPO from MiniMax-M1.", ["cispo"]),
]


async def test_a_merged_pull_request_citing_a_method_as_context_is_no_landing_of_it(
        ctx: AppContext, client: TestClient) -> None:
    """A detected landing counts what a merged proposal proposes, as the proposals table
    does (review study71): FooPO's pull request names CISPO as its comparison, so it is no
    CISPO landing in OpenRLHF; the one adding CISPO is. Failed on main (#701 the landing:
    the earlier merge of the two)."""
    await store(ctx, OR, MERGED, kind="pull_request", state="merged", review_state="merged",
                closed=lambda number: datetime(2026, 11, number - 690, tzinfo=UTC))
    data = await (await client.get("/api/study")).json()
    [landing] = [x for x in data["landings"] if x["detected"]]
    assert (landing["method"], landing["framework"]) == ("cispo", "openrlhf")
    assert landing["pull_requests"] == [f"{OR}#702"]
    assert landing["date"] == "2026-11-12"
    assert "proposes" in data["rules"]["detected_landing"]
