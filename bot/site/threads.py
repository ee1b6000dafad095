"""The thread page, `GET /threads/{owner}/{repo}/{number}`: what the app knows about one thread.

A person's verdict on it when there is one (`/rltracker kind`, `not-a-failure`: "kind set by
@login"), its analysis (failure kind with confidence and the cue words, linked papers, proposal state
and concerns), what the app posted or would have posted (the Action rows, with their bodies)
and why it stayed quiet when it did (the recorded skip reasons), with links to GitHub and to
the catalog pages. Unknown threads answer the 404 page.

Text from GitHub (title, labels, author, the verdict's login) is autoescaped by the template. Action bodies are the
app's own Markdown; they are rendered with markdown-it with raw HTML turned off (so any HTML
in them shows as text) and its link validation (no `javascript:` links). Afterwards the
escaped spellings of the few attribute-less tags our comment templates use (`<details>`,
`<summary>`, `<sub>`) become tags again outside code (a code span may hold the reporter's
own text): no attribute can come with them, so nothing else is let through.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from aiohttp import web
from markupsafe import Markup
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import framework_id
from bot.context import app_context
from bot.site import data
from bot.site.api import actions_of_repo, listed_action
from bot.site.pages import not_found, render
from bot.store.history import SOURCE_LABELS, thread_history
from bot.store.models import Action, Analysis, Repository
from bot.store.types import format_datetime, parse_thread_number
from bot.store.verdicts import thread_verdict, verdict_dict

# The thread page's "Review history": its latest changes (a proposal reopened and closed 200
# times listed 200; left78); the earlier ones are counted and in /api/threads.
HISTORY_SHOWN = 20
# "What the app did": its latest actions (a thread answered thousands of times listed them
# all; bounds79); the earlier ones are counted and in /api/actions, which lists them oldest first.
ACTIONS_SHOWN = 20

ACTION_KINDS = {"failure_comment": "Failure comment", "rule_summary": "Contribution-rule summary",
                "command": "Reply to a command", "report": "Nightly report", "label": "Label",
                "config": "Repository config"}
# The tags of templates/comments/*.j2 that GitHub renders, escaped by markdown-it: restored.
COMMENT_TAGS = {f"&lt;{slash}{tag}&gt;": f"<{slash}{tag}>"
                for tag in ("details", "summary", "sub") for slash in ("", "/")}
# A line that is one of the app's hidden markers (`<!-- rltracker:failure-comment -->`, a
# reply's `<!-- rltracker:reply-to:REF -->`, the report's `<!-- rltracker:report:DAY -->`).
MARKER_LINE = re.compile(r"<!-- rltracker:[a-z0-9_:-]{1,80} -->")
_CODE = re.compile(r"(<code[^>]*>.*?</code>)", re.S)  # markdown-it's code spans and blocks
# The templates' <details><summary>...</summary> line and </details> line, as markdown-it
# sets each in a paragraph once their tags are restored: the tags without the paragraph.
_WRAPPED_BLOCK_TAGS = (("<p><details>", "<details>"), ("</summary></p>", "</summary>"),
                       ("<p></details></p>", "</details>"))
ACTION_STATUSES = {"posted": "posted", "dry_run": "would have posted (dry run)",
                   "skipped": "stayed quiet", "failed": "failed", "pending": "in progress"}


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def without_markers(body: str) -> str:
    """The app's Markdown without its hidden marker lines (`MARKER_LINE`). Nothing else is
    taken as an HTML comment: a rules reply stored before security66 cites a template's file
    name with its raw `<!--` in a code span, and dropping every comment cut the reply there
    (to its end when nothing closed it); markdown-it shows such a `<!--` as the text it is."""
    return "".join(line for line in body.splitlines(keepends=True)
                   if MARKER_LINE.fullmatch(line.strip()) is None)


def comment_html(body: str | None) -> Markup:
    """An action body (the app's Markdown) as HTML: raw HTML stays text except COMMENT_TAGS,
    the hidden marker goes."""
    html = _markdown().render(without_markers(body or "").strip())
    # Not inside code: a code span may hold the reporter's own text (the key of a setting
    # they have), and a `<details>` typed there became a tag hiding the rest of the page.
    parts = _CODE.split(html)
    for i in range(0, len(parts), 2):
        for escaped, tag in COMMENT_TAGS.items():
            parts[i] = parts[i].replace(escaped, tag)
        # A line of the template that is only these tags is a paragraph to markdown-it, and
        # <details> may not stand in a <p>: a browser made empty paragraphs of the rest.
        for wrapped, bare in _WRAPPED_BLOCK_TAGS:
            parts[i] = parts[i].replace(wrapped, bare)
    return Markup("".join(parts))


async def thread_page_data(session: AsyncSession, repo: str, number: int) -> dict[str, Any] | None:
    thread = await data.find_thread(session, repo, number)
    if thread is None:
        return None
    cat = data.catalog()
    analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    # under every name of its repository, as the page's link, /api/actions?repo=, lists them:
    # the page counted only those under the thread's own name (left81)
    of_thread = (actions_of_repo(thread.repo), Action.number == thread.number)
    # what the page's link lists: an action in progress was counted among the earlier ones
    # not shown, and the link did not give it (left80)
    actions_listed = await session.scalar(select(func.count()).select_from(Action)
                                          .where(*of_thread, listed_action())) or 0
    actions = list(reversed(list(await session.scalars(
        select(Action).where(*of_thread)
        .order_by(Action.created_at.desc(), Action.id.desc()).limit(ACTIONS_SHOWN)))))
    installed = await session.scalar(
        select(Repository.installation_id).where(func.lower(Repository.full_name) == thread.repo.lower()))
    from bot.store.installations import silenced_installations

    suspended = installed is not None and installed in await silenced_installations(session)
    verdict = await thread_verdict(session, thread.id)
    history, history_total = await thread_history(session, thread.id, limit=HISTORY_SHOWN)
    framework = framework_id(thread.repo)
    result: dict[str, Any] = (analysis.result if analysis is not None else None) or {}
    failure = result.get("failure") or {}
    category = failure.get("category")
    papers = []
    for p in result.get("papers") or []:
        method = cat.methods.get(p.get("method") or "")
        papers.append({"arxiv_id": p.get("arxiv_id"), "title": p.get("title") or "",
                       "method": method.id if method else None,
                       "method_name": method.name if method else None})
    return {
        "thread": {
            "repo": thread.repo, "number": thread.number, "kind": thread.kind,
            "title": thread.title or "", "state": thread.state, "state_reason": thread.state_reason,
            "author": thread.author, "labels": list(thread.labels or []),
            # a discussion's category and chosen answer (None: not known, or not a discussion)
            "category": thread.category, "answered": thread.answered,
            "answer_chosen_by": thread.answer_chosen_by,
            "created_at": format_datetime(thread.created_at),
            "closed_at": format_datetime(thread.closed_at),
            "url": data.thread_url(thread.repo, thread.number, thread.kind),
            "framework": framework,
            "framework_name": cat.frameworks[framework].name if framework else None,
        },
        "analysed": analysis is not None,
        "analyzer_version": analysis.analyzer_version if analysis is not None else None,
        "failure": {
            "is_failure_report": bool(failure.get("is_failure_report")),
            "category": category,
            "title": data.kind_title(category),
            "confidence": failure.get("confidence"),
            # The runner-up kind the analysis lists, named as the failure comment names it: the
            # leading kind is wrong about twice as often when there is one
            # (docs/history/analyzers-journal.md, hedge11).
            "runner_up": {"key": r.key, "title": r.title} if (r := cat.runner_up(failure)) else None,
            "cues": list(dict.fromkeys(str(e) for e in failure.get("evidence") or []))[:12],
        },
        "papers": papers,
        "proposal": {
            "is_proposal": bool((result.get("proposal") or {}).get("is_proposal")),
            "confidence": (result.get("proposal") or {}).get("confidence"),
            "state": (result.get("review") or {}).get("state"),
            "concerns": list((result.get("review") or {}).get("concerns") or []),
        },
        # the proposal's review states as the store saw them change, oldest first
        "review_history": [{**h, "source_label": SOURCE_LABELS.get(h["source"], h["source"])}
                           for h in history],
        "review_history_earlier": history_total - len(history),  # not shown: /api/threads
        "actions": [{
            "kind": a.kind, "kind_label": ACTION_KINDS.get(a.kind, a.kind.replace("_", " ")),
            "status": a.status, "status_label": ACTION_STATUSES.get(a.status, a.status),
            "body": a.body, "reason": a.reason, "language": a.language,
            "created_at": format_datetime(a.created_at),
        } for a in actions],
        # not shown, and listed by /api/actions (an action in progress is shown, never listed)
        "actions_earlier": actions_listed - sum(a.status != "pending" for a in actions),
        "installed": installed is not None,
        "suspended": suspended,  # the installation is suspended: the app cannot act there
        "verdict": None if verdict is None else {
            **verdict_dict(verdict), "title": data.kind_title(verdict.category),
            "analyzer_title": data.kind_title(verdict.analyzer_category)},
    }


async def thread_page(request: web.Request) -> web.Response:
    repo = f"{request.match_info['owner']}/{request.match_info['repo']}"
    number = parse_thread_number(request.match_info["number"])
    if number is None:
        return not_found("thread")
    async with app_context(request).sessionmaker() as session:
        found = await thread_page_data(session, repo, number)
        gone = await data.gone_from_github(session, repo, number) if found is None else None
    if gone is not None:
        # A link from a report or an old list: it was here, and left GitHub's place.
        return render("thread_gone.html", status=410, g=gone)
    if found is None:
        return not_found("thread", missing=not_stored(repo, number))
    return render("thread.html", d=found, comment_html=comment_html)


def not_stored(repo: str, number: int) -> dict[str, Any] | None:
    """A thread of a repository the catalog tracks that is not stored (a link pasted from
    GitHub, newer than the last sync): its name as the catalog spells it and GitHub's address
    (`issues/N`, which GitHub forwards for a pull request). None for another name: no link is
    built from a name only typed into the address."""
    name = data.catalog().listed_name(repo)
    if name is None:
        return None
    return {"repo": name, "number": number, "url": data.thread_url(name, number, "issue")}


def setup(app: web.Application) -> None:
    """Adds the thread page to the app."""
    app.router.add_get("/threads/{owner}/{repo}/{number}", thread_page)
