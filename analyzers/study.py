"""The study, computed: how fast catalog methods reach each framework, and what became of
proposals and their review. Pure: a catalog and thread records in, plain JSON-ready dicts out.

The rules (also returned as text under "rules", so every reader of the numbers has them):

- Study methods: catalog methods whose `first_public` is in 2025 or later. A month-only date
  (`2025-08`) counts as the first of that month; a method without a date is left out.
- A landing: a framework the catalog lists options for (an option whose status calls it
  related, `found (related, ...)`, is a near relative, not a landing). Its date is the earliest
  `first_commit` date among those options (the date written right after the commit hash;
  notes in parentheses are shown, not used), or an option's `first_landing` when earlier (a
  commit that brought the same method under an earlier option name, as the note says). Days = landing date - first public date;
  negative days are kept and marked "code before the paper". Dates are UTC days: the
  catalog's carry no zone and are read as UTC days; a merge time is dated by its UTC day
  (an offset it carries is converted first). A landing whose options carry no
  date counts as landed, but not in the days, the median or first-anywhere.
- First anywhere: the framework(s) holding a method's earliest dated landing (a tie counts
  for each framework sharing that date).
- Reached: the study methods with at least one verified landing; given beside the published
  study's headline (PUBLISHED: 37 of 1,598 papers), which counts papers, not catalog methods.
- Median days: the median of a framework's landing days (the mean of the two middle values
  for an even count).
- Detected landing: a merged pull request in a framework's repository that the analyzers call
  a method proposal and that proposes a catalog method (any, study method or not; proposed as
  in the proposals' rule below: "like GRPO but ..." is no GRPO landing) the catalog does not
  list for that framework; dated by its merge. Kept apart (`"detected": true` in
  `landings`): it counts in no verified number until the catalog lists the method there.
- Proposals for methods no framework carries: proposals in the framework's repositories
  whose proposed catalog methods are carried by no framework (proposing none counts: the
  method is not in the catalog). The proposed methods are those of the linked ones the title
  names, else the opening post cites, else it names, outside a comparison or the place the
  new one goes (analyzers.proposed): "add FooPO, like GRPO but ..." proposes none. open = open_no_reply + open_replied; declined = declined +
  redirected; lapsed = lapsed.
- Review records: method pull requests (proposals) merged, not merged, and method requests
  (issues that are proposals): threads, replied to by someone other than the proposer, with at
  least one concern, and the count per concern kind.

Links: every number comes with a set name (`sets[name]` lists the method ids or thread keys
`owner/repo#N` it counts), so pages can link each number to what it counts.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from analyzers.catalog import Catalog, Method, Option
from analyzers.proposed import proposed_methods

STUDY_FROM_YEAR = 2025
REVIEW_GROUPS = ("merged_prs", "unmerged_prs", "requests")
PROPOSAL_BUCKETS = ("all", "open", "declined", "lapsed")
OPEN_STATES = frozenset({"open_no_reply", "open_replied"})
DECLINED_STATES = frozenset({"declined", "redirected"})
# The published study's headline (the paper the catalog's verified landings come from, dated
# 2026-10-20; its framework snapshots of September and October 2026): how many papers it
# followed and how many of them reached at least one framework. Stated beside the live figure,
# which counts the catalog's study methods, not those papers (the catalog holds 35 methods).
PUBLISHED = {"date": "2026-10-20", "papers": 1598, "reached": 37}
CONCERN_KINDS = ("design_or_interface", "tests_or_docs", "maintenance_burden", "evidence",
                 "placement", "demand", "already_covered", "other")

RULES: dict[str, str] = {
    "study_methods": f"catalog methods whose first public version is dated {STUDY_FROM_YEAR} or "
                     "later; a month-only date counts as the first of that month",
    "landing": "a framework the catalog lists options for (an option whose status calls it "
               "related to the method is a near relative, not a landing); its date is the "
               "earliest first-commit "
               "date among those options (the oldest commit adding the option string: an upper "
               "bound of the landing), or the earlier commit that brought the method under a "
               "former option name where the catalog names one (first_landing)",
    "days": "landing date minus the method's first public date; negative days are kept and "
            "marked 'code before the paper'",
    "dates": "the catalog's dates (first public, first commit) are calendar days with no time "
             "of day or zone, read as UTC days; a merge is dated by its day in UTC, as every "
             "date the tracker shows; days are whole days between two such dates, so a landing "
             "within a day of the paper may be one day off (the shared data does not say in "
             "which zone a commit was dated)",
    "reached": "study methods with at least one verified landing (detected landings not "
               "counted); the published study's 37 of 1,598 counts papers up to its own "
               "snapshots, which the catalog does not hold, so the two are not the same count",
    "undated_landing": "a landing whose options carry no first-commit date counts in methods "
                       "landed, not in days, medians or first-anywhere",
    "first_anywhere": "the framework(s) with the method's earliest dated landing; a tie counts "
                      "for each framework sharing the date",
    "median_days": "median of the framework's landing days; the mean of the two middle values "
                   "for an even count",
    "detected_landing": "a merged pull request in the framework's repositories that is a method "
                        "proposal and proposes a catalog method the catalog does not list for "
                        "that framework (proposed as in the proposals' rule: a method it names "
                        "as a comparison, a base or the place the new one goes is not landed); "
                        "dated by the merge, counted in no verified number",
    "proposals": "proposals (issues, pull requests, discussions) in the framework's repositories "
                 "whose proposed catalog methods no framework carries (none proposed counts: what "
                 "it proposes is not in the catalog); the proposed methods are those of the "
                 "linked ones the title names, else the opening post cites by arXiv id or paper "
                 "title, else it names, leaving out a method named in a comparison ('like "
                 "GRPO', 'compared with PPO'), as a base ('based on') or as the place the new "
                 "one goes ('to GRPO'); a title that names a method the catalog lacks decides "
                 "alone; open = "
                 "open_no_reply + open_replied, declined = declined + redirected, lapsed = "
                 "lapsed (closed as inactive or by a stale bot)",
    "review_records": "method pull requests (proposals) merged or not merged, and method requests "
                      "(issues that are proposals) in the seven frameworks: threads, replied to by "
                      "someone other than the proposer, with at least one concern, count per "
                      "concern kind (concerns raised by someone other than the proposer)",
}

_COMMIT_DATE = re.compile(r"^\s*[0-9a-f]{6,40}\s+(\d{4}-\d{2}-\d{2})\b")
_PUBLIC_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


@dataclass(frozen=True)
class StudyThread:
    """One stored thread with its analysis, as the study needs it."""

    repo: str
    number: int
    kind: str  # issue | pull_request | discussion
    state: str  # open | closed | merged
    is_proposal: bool
    review_state: str | None
    methods: tuple[str, ...] = ()
    replied_from_other: bool = False
    concerns: tuple[str, ...] = ()
    closed_at: str | None = None  # ISO date or datetime; a merged PR's merge time
    # The title and the opening post, which say what a proposal proposes; None: the texts
    # were not given, and every linked method stands for a proposed one.
    title: str | None = None
    body: str | None = None
    # What analyzers.proposed already found in those texts (the site remembers it per thread
    # text, bot.site.study.ProposedMemo, so a recompute does not read every opening post again).
    proposes: tuple[str, ...] | None = None

    def proposed(self) -> list[str]:
        """The linked catalog methods the thread proposes (analyzers.proposed)."""
        if self.proposes is not None:
            return list(self.proposes)
        if self.title is None:
            return list(self.methods)
        return proposed_methods({"title": self.title, "body": self.body}, self.methods)

    @property
    def key(self) -> str:
        return f"{self.repo}#{self.number}"

    @property
    def merged(self) -> bool:
        return self.state == "merged" or self.review_state == "merged"


@dataclass
class _Sets:
    sets: dict[str, list[str]] = field(default_factory=dict)

    def put(self, name: str, items: Iterable[str]) -> str:
        self.sets[name] = list(items)
        return name


def public_date(value: str | None) -> date | None:
    """`2025-03-18` as is, `2025-08` as 2025-08-01, `2025` as 2025-01-01; None when unreadable."""
    m = _PUBLIC_DATE.match((value or "").strip())
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None


def commit_date(first_commit: str | None) -> tuple[str | None, date | None]:
    """(hash, date) from a catalog `first_commit` such as `3a27a9864 2025-04-04 (note)`."""
    m = _COMMIT_DATE.match(first_commit or "")
    if not m:
        return None, None
    return (first_commit or "").split()[0], date.fromisoformat(m.group(1))


def _utc(value: str | None) -> datetime | None:
    """A merge time in UTC (a day-only value is that day's midnight, a time without an
    offset is UTC); None when absent or unreadable."""
    try:
        when = datetime.fromisoformat((value or "").strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _day(value: str | None) -> date | None:
    """The UTC day of a merge time: `2025-06-19T21:30:00-05:00` is 2025-06-20."""
    when = _utc(value)
    return when.date() if when is not None else None


def landing_options(method: Method, framework: str) -> list[Option]:
    """The options that are the method in `framework`: those the catalog lists, less those
    whose status calls them a relative (`found (related, not counted by paper)`: AReaL's
    action clamp for TIS), which the catalog keeps beside the method for the comments."""
    return [o for o in method.options.get(framework, []) if "related" not in o.status]


def lands(method: Method, framework: str) -> bool:
    """Whether the method has landed in `framework` (an option that is the method)."""
    return bool(landing_options(method, framework))


def study_methods(catalog: Catalog) -> list[Method]:
    """The methods whose source appeared in STUDY_FROM_YEAR or later, oldest first."""
    dated = [(public_date(m.first_public), m) for m in catalog.methods.values()]
    chosen = [(d, m) for d, m in dated if d is not None and d.year >= STUDY_FROM_YEAR]
    return [m for _, m in sorted(chosen, key=lambda dm: (dm[0], dm[1].id))]


def _landing(method: Method, framework: str, repo: str, published: date) -> dict[str, Any]:
    best: tuple[date, str | None, str | None] | None = None
    for option in landing_options(method, framework):
        # the option's first commit, or an earlier one that brought the method under another
        # name (`first_landing`, named in the first commit's note)
        for sha, when in (commit_date(option.first_commit), commit_date(option.first_landing)):
            if when is not None and (best is None or when < best[0]):
                best = (when, sha, option.first_commit)
    days = (best[0] - published).days if best else None
    return {
        "method": method.id, "framework": framework,
        "date": best[0].isoformat() if best else None,
        "days": days, "before_paper": days is not None and days < 0,
        "commit": best[1] if best else None,
        "commit_url": f"https://github.com/{repo}/commit/{best[1]}" if best and best[1] else None,
        "first_commit": best[2] if best else None,
        "detected": False,
    }


def _moment(value: str | None) -> datetime:
    """A merge time for ordering merges (UTC; unknown ones last)."""
    return _utc(value) or datetime.max.replace(tzinfo=UTC)


def _median(values: list[int]) -> float | int | None:
    if not values:
        return None
    m = statistics.median(values)
    return int(m) if float(m).is_integer() else round(float(m), 1)


def _detected(catalog: Catalog, threads: list[StudyThread], published: Mapping[str, date | None],
              seen: Mapping[str, str]) -> list[dict[str, Any]]:
    """One detected landing per (method, framework): the earliest merged PR proposing it (the
    proposals' one rule, StudyThread.proposed: a PR citing GRPO as context does not land it)."""
    found: dict[tuple[str, str], list[StudyThread]] = {}
    for t in threads:
        fw = catalog.framework_for_repo(t.repo)
        if fw is None or t.kind != "pull_request" or not t.is_proposal or not t.merged:
            continue
        for mid in t.proposed():
            method = catalog.methods.get(mid)
            if method is not None and not lands(method, fw.id):
                found.setdefault((mid, fw.id), []).append(t)
    out = []
    for (mid, fid), prs in found.items():
        # the earliest merge; at the same moment (or a day-only date) the lower number
        prs.sort(key=lambda t: (_day(t.closed_at) or date.max, _moment(t.closed_at),
                                _key_order(t.key)))
        first = prs[0]
        merged = _day(first.closed_at)
        start = published.get(mid)
        days = (merged - start).days if merged and start else None
        key = f"{mid}@{fid}"
        out.append({
            "method": mid, "framework": fid, "date": merged.isoformat() if merged else None,
            "days": days, "before_paper": days is not None and days < 0,
            "detected": True, "pull_request": first.key, "pull_requests": [t.key for t in prs],
            "in_study": mid in published and start is not None and start.year >= STUDY_FROM_YEAR,
            "detected_at": seen.get(key),
        })
    order = {fid: i for i, fid in enumerate(catalog.frameworks)}
    return sorted(out, key=lambda d: (d["date"] or "9999", d["method"], order[d["framework"]]))


def compute_study(catalog: Catalog, threads: Iterable[StudyThread],
                  seen: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The whole study. `seen` maps `method@framework` of detected landings to the time they
    were first recorded (kept by the caller between runs; carried into `detected_at`)."""
    threads = list(threads)
    sets = _Sets()
    frameworks = list(catalog.frameworks)
    methods = study_methods(catalog)
    published = {m.id: public_date(m.first_public) for m in catalog.methods.values()}

    landings: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for m in methods:
        start = published[m.id]
        assert start is not None
        mine = [_landing(m, fid, catalog.frameworks[fid].repo, start)
                for fid in frameworks if lands(m, fid)]
        dated = [x for x in mine if x["date"]]
        earliest = min((x["date"] for x in dated), default=None)
        for x in mine:
            x["first_anywhere"] = earliest is not None and x["date"] == earliest
        landings.extend(mine)
        rows.append({"method": m.id, "name": m.name, "first_public": m.first_public,
                     "first_public_date": start.isoformat(),
                     "frameworks": [x["framework"] for x in mine],
                     "first_landing": earliest,
                     "first_landing_days": min((x["days"] for x in dated), default=None)})

    detected = _detected(catalog, threads, published, seen or {})
    carried = {m.id for m in catalog.methods.values() if any(lands(m, f) for f in frameworks)}

    per_fw: dict[str, Any] = {}
    for fid in frameworks:
        mine = [x for x in landings if x["framework"] == fid]
        days = [x["days"] for x in mine if x["days"] is not None]
        proposals = [t for t in threads if _framework(catalog, t) == fid and t.is_proposal
                     and not (set(t.proposed()) & carried)]
        buckets = {
            "all": proposals,
            "open": [t for t in proposals if _state(t) in OPEN_STATES],
            "declined": [t for t in proposals if _state(t) in DECLINED_STATES],
            "lapsed": [t for t in proposals if _state(t) == "lapsed"],
        }
        found = [d for d in detected if d["framework"] == fid]
        per_fw[fid] = {
            "name": catalog.frameworks[fid].name,
            "methods": len(mine),
            "first_anywhere": sum(1 for x in mine if x["first_anywhere"]),
            "median_days": _median(days),
            "dated": len(days),
            "detected": len(found),
            "proposals": {b: len(ts) for b, ts in buckets.items()},
            "sets": {
                "methods": sets.put(f"landed.{fid}", (x["method"] for x in mine)),
                "first_anywhere": sets.put(f"first.{fid}",
                                           (x["method"] for x in mine if x["first_anywhere"])),
                "median_days": sets.put(f"dated.{fid}",
                                        (x["method"] for x in mine if x["days"] is not None)),
                "detected": sets.put(f"detected.{fid}", (d["method"] for d in found)),
                "proposals": {b: sets.put(f"proposals.{fid}.{b}", _keys(ts))
                              for b, ts in buckets.items()},
            },
        }

    sets.put("reached", sorted(r["method"] for r in rows if r["frameworks"]))
    review: dict[str, Any] = {}
    for group in REVIEW_GROUPS:
        members = [t for t in threads if _framework(catalog, t) and _group(t) == group]
        replied = [t for t in members if t.replied_from_other]
        concerned = [t for t in members if t.concerns]
        by_kind = {k: [t for t in members if k in t.concerns] for k in CONCERN_KINDS}
        review[group] = {
            "threads": len(members), "replied": len(replied), "with_concern": len(concerned),
            "concerns": {k: len(ts) for k, ts in by_kind.items()},
            "sets": {
                "threads": sets.put(f"review.{group}.threads", _keys(members)),
                "replied": sets.put(f"review.{group}.replied", _keys(replied)),
                "with_concern": sets.put(f"review.{group}.with_concern", _keys(concerned)),
                "concerns": {k: sets.put(f"review.{group}.concern.{k}", _keys(ts))
                             for k, ts in by_kind.items()},
            },
        }

    reached = [r["method"] for r in rows if r["frameworks"]]
    return {
        "rules": dict(RULES),
        "published": dict(PUBLISHED),
        "reached": {"methods": len(reached), "of": len(rows)},
        "frameworks": per_fw,
        "methods": rows,
        "landings": landings + detected,
        "review_records": review,
        "proposals_stored": sum(1 for t in threads if t.is_proposal and _framework(catalog, t)),
        "sets": sets.sets,
    }


def _framework(catalog: Catalog, thread: StudyThread) -> str | None:
    fw = catalog.framework_for_repo(thread.repo)
    return fw.id if fw else None


def _state(thread: StudyThread) -> str:
    if thread.review_state:
        return thread.review_state
    return "merged" if thread.state == "merged" else "open_no_reply" if thread.state == "open" \
        else "closed_other"


def _group(thread: StudyThread) -> str | None:
    if not thread.is_proposal:
        return None
    if thread.kind == "pull_request":
        return "merged_prs" if thread.merged else "unmerged_prs"
    return "requests" if thread.kind == "issue" else None


def _keys(threads: Iterable[StudyThread]) -> list[str]:
    return sorted((t.key for t in threads), key=_key_order)


def _key_order(key: str) -> tuple[str, int]:
    repo, _, number = key.rpartition("#")
    return repo.lower(), int(number) if number.isdigit() else 0


__all__ = [
    "CONCERN_KINDS",
    "PROPOSAL_BUCKETS",
    "PUBLISHED",
    "REVIEW_GROUPS",
    "RULES",
    "STUDY_FROM_YEAR",
    "StudyThread",
    "commit_date",
    "compute_study",
    "landing_options",
    "lands",
    "public_date",
    "study_methods",
]
