"""`rltracker serve`: the web app, the inbox worker and the scheduler in one process."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import os
import secrets
import signal
import sys
import threading
import time
from typing import Any

from aiohttp import web

from bot.config import Settings, UserError, log_level, public_url_set, require_database
from bot.logs import configure_logging, register_settings_secrets

log = logging.getLogger(__name__)
SHUTDOWN_GRACE = 10.0  # seconds background tasks get to finish before they are cancelled
# Seconds the stop's last steps get after a second signal (giving back what the workers held,
# the last commits, the scheduler's record: each one short statement), before `serve` ends
# without them: with the database locked or gone each waited 30 s or more.
HURRY_GRACE = 5.0


def _fail(message: str, exit_code: int = 2) -> int:
    """One line on stderr; exit status 2 for a setting or argument that cannot be used, 1 for
    a failure to act on while it runs (README, "When something is wrong")."""
    print(f"rltracker serve: {message}", file=sys.stderr, flush=True)
    return exit_code


def _say(text: str) -> bool:
    """A line for the person who started `serve`, on standard output; False when it cannot
    be written (closed: `>&-`, a supervisor's; a reader gone). The logs are on stderr, and
    the line is not worth stopping a server for (it stopped it, exit 2, once started)."""
    try:
        print(text, flush=True)
    except OSError:
        try:  # what is buffered would fail again at exit: standard output to /dev/null
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (AttributeError, OSError, ValueError):
            pass  # (closed from the start: nothing is buffered)
        return False
    return True


def _address(host: str, port: int) -> str:
    """HOST:PORT as a URL holds it: an IPv6 address in brackets (`[::1]:8000`)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _bind_failure(host: str, port: int, exc: OSError) -> str:
    # asyncio's strerror repeats the address; a host that does not resolve has errno < 0
    reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        hint = "another process listens there: stop it or choose another --port / PORT"
    elif exc.errno == errno.EACCES:
        hint = "ports below 1024 need privileges: choose another --port / PORT"
    else:
        hint = "check --host"
    return f"cannot listen on {_address(host, port)} ({reason}); {hint}"


async def _check_address(host: str, port: int) -> None:
    """Bind the address once and let it go, so that a taken port (or a host that is not this
    machine's) is told before the start-up work; if it is taken in between, the real bind
    reports it the same way."""
    try:
        probe = await asyncio.get_running_loop().create_server(asyncio.Protocol, host, port)
    except OSError as exc:
        raise UserError(_bind_failure(host, port, exc)) from exc
    probe.close()
    await probe.wait_closed()


def settings_for_serve(dev: bool, env: dict[str, str] | None = None) -> tuple[Settings, str | None]:
    """Settings from the environment; in dev mode a random secret (returned to be printed) and
    dry-run. Raises SystemExit-worthy ValueError when a secret is required but missing."""
    settings = Settings.from_env(env)
    generated = None
    if dev:
        if not settings.webhook_secret:
            generated = secrets.token_hex(20)
            settings = dataclasses.replace(settings, webhook_secret=generated)
        settings = dataclasses.replace(settings, dry_run=True)
    elif not settings.webhook_secret:
        raise ValueError(
            "GITHUB_WEBHOOK_SECRET is not set; set it to the app's webhook secret "
            "(or run `rltracker serve --dev` for a local, dry-run service)"
        )
    elif not settings.dry_run and not public_url_set(env):
        # Posting on GitHub: every link of every comment would lead to this machine's default.
        raise ValueError(
            f"RLTRACKER_PUBLIC_URL is not set: the comments this service posts on GitHub would "
            f"link to {settings.public_url}; set it to where the tracker is reachable "
            "(https://...), or RLTRACKER_DRY_RUN=1 to post nothing"
        )
    return settings, generated


def _github_client(settings: Settings) -> Any:
    from bot.github.client import GitHubClient

    return GitHubClient(settings)


def _start_worker_processes(settings: Settings, count: int, counts: list[Any] | None = None,
                            ids: list[str] | None = None) -> list[Any]:
    """`--workers N`: the inbox worker in N processes of their own (spawned), so analyses
    and handlers never hold the web process's interpreter lock. Each counts its outcomes in
    memory shared with this process (appended to `counts`), which /metrics sums. Each works
    under a worker id given here (appended to `ids`): what a process held when it ended
    without finishing it (killed) is given back under that id (bot.webhooks.worker.give_back)."""
    import multiprocessing
    from multiprocessing import resource_tracker

    from bot.metrics import shared_counts_array
    from bot.webhooks.worker import make_worker_id, worker_process_main

    spawn = multiprocessing.get_context("spawn")
    level = log_level(os.environ)
    arrays = [shared_counts_array(spawn) for _ in range(count)]
    if counts is not None:
        counts.extend(arrays)
    worker_ids = [f"{make_worker_id()}-w{k}" for k in range(count)]
    if ids is not None:
        ids.extend(worker_ids)
    procs = [spawn.Process(target=worker_process_main,
                           args=(settings, _github_client, level, arrays[k], worker_ids[k]),
                           name=f"rltracker-worker-{k}") for k in range(count)]
    # Each starts with the stop signals blocked (a thread's mask is inherited through fork and
    # exec) and unblocks them once its stop handlers are installed (worker_process_main): a
    # Ctrl-C or SIGHUP to the terminal's group, or a SIGTERM to the group (systemd), while it
    # was still importing (a second or so) killed it, or printed a KeyboardInterrupt traceback
    # of the imports, and serve exited 1 saying its worker process ended. A signal sent to
    # serve meanwhile is not lost: another thread takes it, or it is delivered on unblocking.
    # The spawn's resource tracker first: its launch unblocks SIGINT and SIGTERM after it.
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for p in procs:
            p.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return procs


def _watch_worker_processes(procs: list[Any], stop: asyncio.Event, worker: Any = None) -> list[str]:
    """Stop serving when a worker process ends by itself (killed, crashed), or the inbox
    worker running in this process does (its start failed): the web process would go on
    answering 202 and /healthz "ok" with nothing working the inbox. Returns the list the
    watchers fill with what happened."""
    loop = asyncio.get_running_loop()
    died: list[str] = []

    def worker_ended(task: asyncio.Task[Any]) -> None:
        if stop.is_set() or task.cancelled():
            return
        exc = task.exception()
        reason = (str(exc).splitlines() or [""])[0][:200] if exc else ""
        died.append("the inbox worker stopped" + (f" ({type(exc).__name__}: {reason})" if exc else ""))
        log.error("%s; stopping", died[-1])
        stop.set()

    task = worker.task if worker is not None else None  # bot.webhooks.worker.Worker, started with the app
    if task is not None:
        task.add_done_callback(worker_ended)

    def ended(p: Any) -> None:
        loop.remove_reader(p.sentinel)
        if stop.is_set():
            return
        p.join(1)  # the sentinel fired: it has exited, reap it for its status
        died.append(f"worker process {p.name} exited (status {p.exitcode})")
        log.error("%s; stopping", died[-1])
        stop.set()

    for p in procs:
        loop.add_reader(p.sentinel, ended, p)
    return died


def _stop_worker_processes(procs: list[Any], hurry: threading.Event | None = None) -> None:
    """SIGTERM: each finishes the rows in hand; those that have not ended within the grace,
    or when the stop is hurried (a second signal), are killed (what they held is then given
    back by `_Started.stop`)."""
    for p in procs:
        p.terminate()
    deadline = time.monotonic() + SHUTDOWN_GRACE
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        if hurry is not None and hurry.wait(0.05):
            break
        if hurry is None:
            time.sleep(0.05)  # a poll of the processes' state
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()


class _StopAsked(Exception):
    """SIGTERM, SIGINT or SIGHUP arrived while `serve` was still starting."""


class _Asked:
    """What the stop signals asked for. The first SIGTERM, SIGINT or SIGHUP sets `stop`: stop
    in order, waiting for what is in hand. One more while stopping (or a signal after serve
    began stopping by itself) sets `hurry`: stop now, cutting what is in hand and giving back
    what the workers held (`_Started.stop`)."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.hurry = asyncio.Event()
        self.signal: str | None = None
        self.on_hurry: Any = None  # called once, with the hurry (serve's last-steps bound)

    def __call__(self, sig: signal.Signals) -> None:
        if not self.stop.is_set():
            self.signal = sig.name
            self.stop.set()
        elif not self.hurry.is_set():
            log.warning("stopping now (%s while stopping): the work in hand is cut and given "
                        "back for another attempt", sig.name, extra={"signal": sig.name})
            self.hurry.set()
            if self.on_hurry is not None:
                self.on_hurry()


# SIGHUP (the terminal `serve` runs in closed, `kill -HUP`) is a stop too: its default action
# killed the process with no shutdown, leaving a claimed delivery `processing`. Nothing can be
# reloaded (the settings are the environment, read at start), so it is not read as "reload".
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _install_stop_handlers(asked: _Asked) -> list[signal.Signals]:
    """SIGINT, SIGTERM and SIGHUP ask `asked` to stop (a second one: to hurry). Installed
    before any start-up work, so that a stop asked for while starting is as orderly as one
    while serving (it killed the process: a claimed delivery, a job run or a request in
    flight was left as it stood). SIGHUP ignored when serve started (`nohup`) stays ignored."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in STOP_SIGNALS:
        if sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
            continue
        try:
            loop.add_signal_handler(sig, asked, sig)
        except RuntimeError:  # not the main thread: whoever runs us there stops us
            continue
        installed.append(sig)
    return installed


async def _unless_stopped(stop: asyncio.Event, work: Any) -> Any:
    """Await `work` (a check that leaves nothing behind when cancelled), or cancel it and
    raise _StopAsked when a stop is asked for first."""
    if stop.is_set():
        work.close()
        raise _StopAsked
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((task, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled() and stop.is_set():
        raise _StopAsked
    return task.result()


def _stop_asked_between(stop: asyncio.Event) -> None:
    if stop.is_set():
        raise _StopAsked


def _end_now(grace: float) -> None:
    """A stop asked twice whose last steps have not finished within `grace` seconds: the
    process ends without them (exit status 0, as any stop asked for). What they would have
    written is not lost: a row not given back is taken again when its lease ends, a nightly
    run not recorded as cancelled is seen as dead by the next start's watch, a delivery
    whose commit did not land was not answered, so GitHub delivers it again."""
    log.warning("stopped without the stop's last steps: not finished %.0f s after the second "
                "signal (the database locked or not answering?); what the workers held is "
                "taken again when its lease ends", grace)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


async def serve(settings: Settings, host: str, port: int, *, worker: bool = True,
                scheduler: bool = True, backfill: bool = True,
                ready: asyncio.Event | None = None, worker_processes: int = 0,
                hurry_grace: float | None = None, dev_secret: str | None = None) -> int:
    """`hurry_grace`: after a second signal, end the process (os._exit) when the stop has not
    finished within that many seconds (`rltracker serve`; None in a caller's own process).
    `dev_secret`: the webhook secret `serve --dev` made, printed once the port is bound."""
    stop = asyncio.Event()
    asked = _Asked(stop)
    loop = asyncio.get_running_loop()
    if hurry_grace is not None:
        deadline = threading.Timer(hurry_grace, _end_now, args=(hurry_grace,))
        deadline.daemon = True  # (a process that ends first does not wait for it)
        asked.on_hurry = deadline.start
    installed = _install_stop_handlers(asked)  # first: a stop while starting is orderly too
    try:
        return await _serve(settings, host, port, asked, worker=worker, scheduler=scheduler,
                            backfill=backfill, ready=ready, worker_processes=worker_processes,
                            dev_secret=dev_secret)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


@dataclasses.dataclass
class _Started:
    """What `serve` has started so far: what its shutdown stops, in this order."""

    sched: Any = None
    first_backfill: asyncio.Task[Any] | None = None
    credentials_check: asyncio.Task[Any] | None = None
    runner: web.AppRunner | None = None
    procs: list[Any] = dataclasses.field(default_factory=list)
    worker_ids: list[str] = dataclasses.field(default_factory=list)  # of the worker processes

    async def stop(self, ctx: Any, hurry: asyncio.Event | None = None) -> None:
        """In order, each step waiting for what it has in hand; when `hurry` is set (a second
        signal), what is still in hand is cut instead (`_cut`)."""
        cut = threading.Event()
        watch = asyncio.ensure_future(self._cut(ctx, hurry, cut)) if hurry is not None else None
        try:
            await self._stop(ctx, cut)
        finally:
            if watch is not None:
                watch.cancel()
                await asyncio.gather(watch, return_exceptions=True)

    async def _cut(self, ctx: Any, hurry: asyncio.Event, cut: threading.Event) -> None:
        """A stop asked twice: the in-process worker's handler is cancelled and its rows given
        back, requests in flight cancelled (a webhook not answered yet is delivered again by
        GitHub: what its inbox commit stored is a duplicate then), worker processes killed
        (their rows given back after), background tasks cancelled. Each of these was already
        what happened to whatever outlived its grace, or to a process killed outright."""
        await hurry.wait()
        cut.set()
        from bot.app import REQUESTS
        from bot.context import WORKER
        from bot.speaking.preview import BACKGROUND_KEY

        for p in self.procs:  # now, not when the stop reaches them (a step before may wait)
            p.kill()  # (no poll here: the stop's thread may be reaping them; a reaped one is skipped)
        app = self.runner.app if self.runner is not None else None
        if app is not None and WORKER in app:
            app[WORKER].abort()
        for task in list(app.get(REQUESTS) or ()) if app is not None else ():
            task.cancel()
        for task in list(ctx.extras.get(BACKGROUND_KEY) or ()):
            task.cancel()

    async def _stop(self, ctx: Any, cut: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        for p in self.procs:
            loop.remove_reader(p.sentinel)
        if self.sched is not None:  # a nightly run in progress is recorded as interrupted
            from bot.scheduler import stop_scheduler

            await stop_scheduler(ctx, self.sched)
        if self.credentials_check is not None:
            self.credentials_check.cancel()
            await asyncio.gather(self.credentials_check, return_exceptions=True)
        if self.first_backfill is not None:  # the stored cursors resume it at the next start
            self.first_backfill.cancel()
            await asyncio.gather(self.first_backfill, return_exceptions=True)
        if self.runner is not None:  # the server (requests in flight finish), the inbox
            await self.runner.cleanup()  # writer, then the worker (its rows in hand finish)
        await loop.run_in_executor(None, _stop_worker_processes, self.procs, cut)
        from bot.webhooks.worker import give_back

        for worker_id in self.worker_ids:  # what a killed worker process held, given back
            try:
                await give_back(ctx.engine, worker_id)
            except Exception as exc:  # noqa: BLE001 - its lease runs out instead
                # the database's failure (a lock not granted, unreachable): one line
                reason = (str(exc).splitlines() or [""])[0][:300]
                log.warning("could not give back what worker %s held (%s: %s); taken again "
                            "when its lease ends", worker_id, type(exc).__name__, reason)
        from bot.speaking.preview import wait_background

        await wait_background(ctx, grace=0 if cut.is_set() else SHUTDOWN_GRACE)  # e.g. a preview


async def _check_credentials(ctx: Any) -> None:
    """One line at start when GitHub refuses the app's credentials (401 for its JWT: a key
    that is not the app's, one revoked in the app's settings, the id of another app): the
    settings check only reads the key's form, and each delivery then met the 401, retried
    for hours, one warning per attempt. Serving goes on (deliveries are received and kept);
    other answers (GitHub unreachable, a 5xx) are the deliveries' retries' to meet."""
    import gidgethub

    try:
        await ctx.github.check_access()
    except gidgethub.BadRequest as exc:
        log.error("GitHub refuses the app's credentials (GITHUB_APP_ID=%s and the private "
                  "key: %d %s): nothing is read or posted as the app until they are fixed; "
                  "deliveries are received and kept", ctx.settings.app_id,
                  int(exc.status_code), str(exc)[:200])
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a check only: unreachable now, met later
        log.debug("the start's check of the app's credentials did not answer (%s)",
                  type(exc).__name__)


async def _serve(settings: Settings, host: str, port: int, asked: _Asked, *,
                 worker: bool, scheduler: bool, backfill: bool, ready: asyncio.Event | None,
                 worker_processes: int, dev_secret: str | None = None) -> int:
    stop = asked.stop
    try:
        await _unless_stopped(stop, _check_address(host, port))
    except _StopAsked:
        return _stopped_while_starting(asked)
    from bot.app import create_app
    from bot.context import WORKER, WORKER_PROCESS_COUNTS, AppContext
    from bot.store.migrate import check_revision

    ctx = AppContext.create(settings)
    started = _Started()
    died: list[str] = []
    try:
        # unreachable: one line (bot.cli.errors)
        # behind or ahead of this code: the one line every command says (bot.store.migrate)
        await _unless_stopped(stop, check_revision(ctx.engine))
        if worker_processes and ctx.engine.dialect.name == "sqlite" and worker_processes > 1:
            return _fail("SQLite takes one worker process (--workers 1); use PostgreSQL for more")
        ctx.github = _github_client(settings)
        app = create_app(ctx, worker=worker and not worker_processes)
        started.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await started.runner.setup()  # the inbox writer and worker start here
        _stop_asked_between(stop)
        site = web.TCPSite(started.runner, host, port, backlog=1024)
        try:
            await site.start()
        except OSError as exc:  # taken, not ours to bind, or no such host: one line
            raise UserError(_bind_failure(host, port, exc)) from exc
        if dev_secret is not None:
            # Printed on purpose (stdout, not the logs): the developer needs it to sign
            # deliveries. After the bind: a port taken got the secret of a service never run.
            if not _say(f"dev mode: dry-run on; webhook secret for this run: {dev_secret}"):
                log.warning("dev mode: the webhook secret for this run could not be printed "
                            "(standard output cannot be written); set GITHUB_WEBHOOK_SECRET "
                            "to sign deliveries with a secret of your own")
        _say(f"rltracker serving on http://{_address(host, port)}")  # (the "serving" log line too)
        _stop_asked_between(stop)
        if worker:
            started.procs = _start_worker_processes(
                settings, worker_processes, ctx.extras.setdefault(WORKER_PROCESS_COUNTS, []),
                started.worker_ids)
        if scheduler:
            from bot.scheduler import create_scheduler

            started.sched = create_scheduler(ctx)
            if started.sched is not None:
                started.sched.start()
        from bot.scheduler import start_first_backfill  # first start with a token: sync now

        if backfill:  # its check only reads: cancelled by a stop; the task is made after it
            started.first_backfill = await _unless_stopped(stop, start_first_backfill(ctx))
        log.info("serving", extra={"host": host, "port": port, "dry_run": settings.dry_run,
                                   "worker": worker, "scheduler": started.sched is not None})
        if settings.has_app_credentials:  # (in the background: serving does not wait for it)
            started.credentials_check = asyncio.ensure_future(_check_credentials(ctx))
        died = _watch_worker_processes(started.procs, stop, app.get(WORKER))
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("stopping", extra={"signal": asked.signal} if asked.signal else {})
        await started.stop(ctx, asked.hurry)
        if died:  # a failure while running: one line, exit status 1
            print(f"rltracker serve: {died[0]}; stopped so that it is restarted (what was stored "
                  "stays queued)", file=sys.stderr, flush=True)
            return 1
        return 0
    except _StopAsked:
        log.info("stopping (asked to while starting)",
                 extra={"signal": asked.signal} if asked.signal else {})
        await started.stop(ctx, asked.hurry)
        return _stopped_while_starting(asked)
    except BaseException:
        # A start-up that failed (or was cancelled): what it had started is stopped, then
        # the failure is told (one line, bot.cli.errors).
        try:
            await started.stop(ctx)
        except Exception:  # noqa: BLE001 - the failure that stopped the start-up is the one told
            log.warning("could not stop everything after a failed start", exc_info=True)
        raise
    finally:
        await ctx.close()


def _stopped_while_starting(asked: _Asked) -> int:
    """A stop asked for during start-up: done in order, exit status 0 as for any stop."""
    print(f"rltracker serve: stopped while starting ({asked.signal or 'asked to stop'})",
          file=sys.stderr, flush=True)
    return 0


def serve_command(args: Any) -> int:
    env = dict(os.environ)
    if getattr(args, "port", None):
        # --port is PORT for this run: the port served on, and the links in comments and pages
        # when RLTRACKER_PUBLIC_URL does not say otherwise (Settings derives both from it).
        env["PORT"] = str(args.port)
    try:  # checked before anything starts (bot.config.check_env): a bad value is one line
        settings, generated = settings_for_serve(bool(getattr(args, "dev", False)), env)
    except ValueError as exc:
        return _fail(str(exc))
    # A SQLite file that does not exist (a typo in DATABASE_URL, a volume not mounted) is
    # refused before anything opens it: SQLite would create it empty, and `rltracker migrate`
    # (which `make run` and the image run first) is the one step that creates the database.
    require_database(env)
    configure_logging(log_level(os.environ))
    register_settings_secrets(settings)
    port = settings.port
    # --dev is a local service (its pages, exports, /metrics and the deliveries replayed into
    # it were anyone's on a shared network, as no development server's are): this machine
    # only unless --host says otherwise. The image's `serve` listens on every interface.
    host = getattr(args, "host", None) or ("127.0.0.1" if getattr(args, "dev", False)
                                           else "0.0.0.0")
    return asyncio.run(
        serve(
            settings,
            host,
            port,
            dev_secret=generated,
            worker=not getattr(args, "no_worker", False),
            scheduler=not getattr(args, "no_scheduler", False),
            backfill=not getattr(args, "no_backfill", False),
            worker_processes=int(getattr(args, "workers", 0) or 0),
            hurry_grace=HURRY_GRACE,
        )
    )
