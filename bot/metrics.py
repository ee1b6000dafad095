"""Prometheus text exposition, written by hand: a handful of counters and one histogram do not
need another dependency. Format: https://prometheus.io/docs/instrumenting/exposition_formats/
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


# What the inbox worker counts: handled (done), failed for good, to be retried, its lease
# lost to another worker, and given back unfinished when it was cut short (`Worker.abort`:
# left `processing`, claimed by no one, taken again; `rltracker deliveries` lists them).
WORKER_OUTCOMES = ("done", "failed", "retry", "lost", "given_back")


class SharedCounts(MutableMapping[str, int]):
    """An inbox worker's outcome counts in memory shared with the process that spawned it
    (`serve --workers N`: `shared_counts_array` made there, handed to the worker process), so
    the web process's /metrics sums what every worker process handled. One process writes
    each array; the web process only reads it."""

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, key: str) -> int:
        return int(self.array[WORKER_OUTCOMES.index(key)])

    def __setitem__(self, key: str, value: int) -> None:
        self.array[WORKER_OUTCOMES.index(key)] = int(value)

    def __delitem__(self, key: str) -> None:
        raise TypeError("worker outcome counts are not removed")

    def __iter__(self) -> Iterator[str]:
        return iter(WORKER_OUTCOMES)

    def __len__(self) -> int:
        return len(WORKER_OUTCOMES)


def shared_counts_array(mp_context: Any) -> Any:
    """The shared array of one worker process's counts (64-bit, no lock: one writer)."""
    return mp_context.RawArray("q", len(WORKER_OUTCOMES))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _num(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class Metrics:
    """Per-process figures. Gauges that live in the database are read at scrape time."""

    def __init__(self) -> None:
        # (status code) -> count
        self.webhook_responses: dict[str, int] = defaultdict(int)
        # (event) -> count of accepted deliveries
        self.webhook_events: dict[str, int] = defaultdict(int)
        self._bucket_counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0
        self._latency_count = 0

    def observe_webhook(self, status: int, seconds: float, event: str | None = None) -> None:
        self.webhook_responses[str(status)] += 1
        if event is not None and status in (200, 202):
            self.webhook_events[event[:64]] += 1
        self._bucket_counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self._latency_sum += seconds
        self._latency_count += 1

    def render(
        self,
        *,
        deliveries: dict[str, int] | None = None,
        worker: dict[str, int] | None = None,
        inbox: dict[str, int] | None = None,
        actions: dict[tuple[str, str], int] | None = None,
        jobs: dict[str, tuple[str, Any, Any, dict[str, Any]]] | None = None,
        database_up: bool | None = None,
        database_busy: bool | None = None,
        schema_current: bool | None = None,
    ) -> str:
        out: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")

        family("rltracker_webhook_responses_total", "counter", "POST /webhook answers by status code")
        for code, n in sorted(self.webhook_responses.items()):
            out.append(f"rltracker_webhook_responses_total{_labels([('code', code)])} {n}")

        family("rltracker_webhook_deliveries_total", "counter", "accepted deliveries by event")
        for event, n in sorted(self.webhook_events.items()):
            out.append(f"rltracker_webhook_deliveries_total{_labels([('event', event)])} {n}")

        name = "rltracker_webhook_duration_seconds"
        family(name, "histogram", "time from request to answer of POST /webhook")
        cumulative = 0
        for bound, n in zip(LATENCY_BUCKETS, self._bucket_counts, strict=False):
            cumulative += n
            out.append(f"{name}_bucket{_labels([('le', repr(bound))])} {cumulative}")
        out.append(f"{name}_bucket{_labels([('le', '+Inf')])} {self._latency_count}")
        out.append(f"{name}_sum {_num(self._latency_sum)}")
        out.append(f"{name}_count {self._latency_count}")

        if deliveries is not None:
            family("rltracker_inbox_deliveries", "gauge", "stored deliveries by status")
            for status, n in sorted(deliveries.items()):
                out.append(f"rltracker_inbox_deliveries{_labels([('status', status)])} {n}")
        if worker is not None:
            family("rltracker_worker_outcomes_total", "counter",
                   "deliveries handled by this service's inbox workers (in its web process or "
                   "its --workers processes) by outcome")
            for outcome, n in sorted(worker.items()):
                out.append(f"rltracker_worker_outcomes_total{_labels([('outcome', outcome)])} {n}")
        if inbox is not None:
            for key, n in sorted(inbox.items()):
                metric = f"rltracker_inbox_{key}"
                family(metric, "counter" if key.endswith("_total") else "gauge", f"inbox writer {key}")
                out.append(f"{metric} {n}")
        if actions is not None:
            family("rltracker_actions", "gauge",
                   "what the app stored it did or would do (comments posted, dry runs, failures,"
                   " quiet decisions) by kind and status")
            for (kind, status), n in sorted(actions.items()):
                out.append(f"rltracker_actions{_labels([('kind', kind), ('status', status)])} {n}")
        if jobs is not None:
            name = "rltracker_job_last_run_timestamp_seconds"
            family(name, "gauge", "start of each background job's latest run, with its outcome "
                   "as it stands (interrupted: its process died)")
            for job, (outcome, started, _, _) in sorted(jobs.items()):
                if started is not None:
                    out.append(f"{name}{_labels([('job', job), ('outcome', outcome)])} "
                               f"{_num(float(started.timestamp()))}")
            name = "rltracker_job_last_success_timestamp_seconds"
            family(name, "gauge", "end of each background job's latest successful run")
            for job, (_, _, ok, _) in sorted(jobs.items()):
                if ok is not None:
                    out.append(f"{name}{_labels([('job', job)])} {_num(float(ok.timestamp()))}")
            # A `partial` night ran (one thread not re-analysed, one repository refused): the
            # success gauge above reads it as no run. Each outcome's latest end, so an alert
            # can take `ok` alone or any run that finished (`ok|partial`).
            name = "rltracker_job_last_finish_timestamp_seconds"
            family(name, "gauge", "end of each background job's latest run that ended with each "
                   "outcome (ok, partial, failed, cancelled)")
            for job, (_, _, _, ends) in sorted(jobs.items()):
                for outcome, end in sorted(ends.items()):
                    if end is not None:
                        out.append(f"{name}{_labels([('job', job), ('outcome', outcome)])} "
                                   f"{_num(float(end.timestamp()))}")
        if database_up is not None:
            family("rltracker_database_up", "gauge", "1 when the database answered the scrape")
            out.append(f"rltracker_database_up {1 if database_up else 0}")
        if database_busy is not None:
            family("rltracker_database_busy", "gauge",
                   "1 when the database answered but a table the scrape reads was locked by "
                   "another session (a migration): its counts are left out")
            out.append(f"rltracker_database_busy {1 if database_busy else 0}")
        if schema_current is not None:
            family("rltracker_database_schema_current", "gauge",
                   "1 when the database is at this code's latest migration; 0 when another "
                   "version migrated it under the running app (/healthz says which)")
            out.append(f"rltracker_database_schema_current {1 if schema_current else 0}")
        return "\n".join(out) + "\n"
