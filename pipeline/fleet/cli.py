"""`memconsolidate fleet plan|apply|run`: a single-store command over many stores.

stdout: one JSON line per store as it finishes (machine-readable, nothing else); stderr: messages
and, at the end, the summary table. Exit 0 when every store is ok or not due, 1 when any store
failed, crashed or ran out of the fleet's budget, 2 for bad usage (one line, no traceback).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, cast

import typer

from ..cli_errors import guarded, say
from ..cli_options import (
    MODEL, ConfigOpt, NowOpt, Options, ResolveOpt, SelectOpt, TrustModelOpt, YesOpt, make_settings, with_options,
)
from ..errors import UsageError

# Each store's own options: the planning ones minus --layout and --repo (detected and found per
# store) and minus --max-calls/--max-cost, which here are the fleet's budget, not each store's.
FLEET = (("config", ConfigOpt), ("now", NowOpt), *MODEL, ("trust_model", TrustModelOpt))

app: typer.Typer = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="Plan, apply or run many stores at once: one JSON line per store on stdout, a summary on stderr.",
)

PathsArg = Annotated[Optional[list[str]], typer.Argument(help="Stores (folders).", show_default=False)]
StoresOpt = Annotated[Optional[str], typer.Option("--stores", help="A file of store paths, one a line (# comments).")]
DiscoverOpt = Annotated[Optional[str], typer.Option("--discover", help="Every store found under this folder.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="local (a process pool) | ray")]
WorkersOpt = Annotated[Optional[int], typer.Option("--workers", min=1, help="Stores at once (local default: CPU count; ray: the cluster's).")]
AddressOpt = Annotated[Optional[str], typer.Option("--address", help="Ray cluster: auto | ray://host:port (default: a local Ray instance).")]
FleetCallsOpt = Annotated[Optional[int], typer.Option(
    "--max-calls", min=0, help="LLM requests for the whole fleet (each retry and re-ask is one; a store that times out keeps its requests counted).")]
FleetCostOpt = Annotated[Optional[float], typer.Option("--max-cost", min=0, help="USD for the whole fleet.")]
RpmOpt = Annotated[Optional[float], typer.Option("--rpm", min=0.001, help="LLM requests per minute, shared by all workers.")]
# A nightly fleet must end: one store on a stalled mount held its worker, and the fleet, forever
# (and `run --if-due`'s state file with it, so the next night's run refused to start). An hour is far
# more than a store normally takes, its waits for --rpm slots included, and ends the fleet the same night.
DEFAULT_STORE_TIMEOUT_S = 3600.0
# A week: a longer wait is no limit at all, and the clocks' waits overflow far beyond it (inf).
MAX_STORE_TIMEOUT_S = 7 * 24 * 3600.0
StoreTimeoutOpt = Annotated[float, typer.Option(
    "--store-timeout", min=0, max=MAX_STORE_TIMEOUT_S, metavar="SECONDS",
    help="A store still running this long after its worker started on it is stopped (its worker killed; one "
         "killed mid-apply is recovered by its journal on its next run) and reported failed; 0: no limit.")]


@dataclass
class Fleet:
    """The options every fleet command shares: which stores, on which engine, within which budget."""

    paths: list[str] | None = None
    stores: str | None = None
    discover: str | None = None
    engine: str = "local"
    workers: int | None = None
    address: str | None = None
    max_calls: int | None = None
    max_cost: float | None = None
    rpm: float | None = None
    store_timeout: float = DEFAULT_STORE_TIMEOUT_S


TARGETS = (("paths", PathsArg), ("stores", StoresOpt), ("discover", DiscoverOpt), ("engine", EngineOpt),
           ("workers", WorkersOpt), ("address", AddressOpt), ("max_calls", FleetCallsOpt), ("max_cost", FleetCostOpt),
           ("rpm", RpmOpt), ("store_timeout", StoreTimeoutOpt))


def _fleet(command: str, o: dict[str, Any], opts: Options, **task: Any) -> None:
    def body() -> None:
        from .budget import Limits
        from .engines import get_engine
        from .report import Report
        from .targets import collect
        from .task import TaskSpec

        _paths_for_workers(opts)
        # Each store's settings are made in its worker, with its own config file as alone; these
        # are the fleet's (its schedule), made first so a bad option is exit 2 before any store.
        settings, _ = make_settings(opts)
        engine = get_engine(o["engine"], workers=o["workers"], address=o["address"], store_timeout=o["store_timeout"] or None)
        targets = collect(o["paths"] or [], o["stores"], o["discover"], say)
        if task.get("plans_dir"):
            task["plans_dir"] = _plans_dir(task["plans_dir"], targets.paths, write=command == "plan")
            if command == "plan":
                from .plans import forget_plan

                for path in targets.paths:  # before any store runs: one that fails leaves no older plan
                    forget_plan(Path(task["plans_dir"]), path)
        spec = TaskSpec(command=command, options=opts, **task)  # type: ignore[arg-type]
        report = Report()
        state = _open_state(o, settings, targets.paths) if o.get("state_wanted") else None
        todo = targets.paths
        spent = (0, 0.0)
        if state is not None:
            for path in todo:
                if path in state.finished:
                    report.add({**state.finished[path], "path": path, "resumed": True})
            todo = [p for p in todo if p not in state.finished]
            spent = state.spent()
        limits = None
        if o["max_calls"] is not None or o["max_cost"] is not None or o["rpm"] is not None:
            limits = Limits(max_calls=o["max_calls"], max_cost=o["max_cost"], rpm=o["rpm"], spent_calls=spent[0], spent_cost=spent[1])

        def done(record: dict[str, Any]) -> None:
            if state is not None:
                state.record(record)  # first: a kill right after must not run this store again
            report.add(record)

        started = time.monotonic()
        complete = False
        try:
            budget = engine.run(todo, spec, limits, done)
            complete = True
        finally:
            if state is not None:
                state.close(complete)
        sys.stderr.write(report.summary(time.monotonic() - started, engine.name, budget))
        if report.failed:
            raise typer.Exit(1)

    guarded(body)


def _plans_dir(given: str, stores: list[str], write: bool) -> str:
    """The plans folder, resolved (workers may run elsewhere). Never inside a store: `plan` would
    write to it, and the plans `apply` reads there would be the store's own files, which its agent
    writes, not the plans a person reviewed. `plan` makes it; `apply` needs it there."""
    from .targets import refuse_inside_a_store

    try:
        folder = Path(given).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop (RuntimeError on Python 3.11), a NUL byte
        raise UsageError(f"--plans-dir {given}: not a folder that can be {'written' if write else 'read'} (a symlink loop?)") from None
    refuse_inside_a_store(folder, stores, f"--plans-dir {given}", "--plans-dir")
    if write and folder.exists() and not folder.is_dir():
        raise UsageError(f"--plans-dir {given}: not a folder")
    if write:
        folder.mkdir(parents=True, exist_ok=True)
    elif not folder.is_dir():
        raise UsageError(f"--plans-dir {given}: no such folder (the one `fleet plan --plans-dir` wrote the plans to)")
    return str(folder)


def _paths_for_workers(opts: Options) -> None:
    """The path options each store's task receives, made absolute as this folder names them: a
    worker may run in another folder (a Ray node's), where a relative path names another one."""
    if opts.config is not None:
        opts.config = os.path.abspath(opts.config)
    if opts.cache_dir:  # "" is no --cache-dir to the single-store command, not the current folder
        opts.cache_dir = os.path.abspath(os.path.expanduser(opts.cache_dir))  # `~` as the single-store command reads it
    elif env := os.environ.get("MEMCONSOLIDATE_CACHE_DIR"):
        # The environment's cache folder, carried as the option (which it would give way to, and
        # which beats a store's config as the environment does): a worker on another node has
        # neither this environment nor this folder to read a relative one from.
        opts.cache_dir = os.path.abspath(os.path.expanduser(env))


def _open_state(o: dict[str, Any], settings: Any, targets: list[str]):
    from .resume import FleetState, default_path

    path = Path(o["state"]) if o["state"] else default_path(o["discover"])
    return FleetState(path, targets, settings.schedule.wait(), note=say)


@app.command("plan")
@with_options(FLEET)
@with_options(TARGETS, into=Fleet, arg="fleet")
def plan(
    plans_dir: Annotated[Optional[str], typer.Option("--plans-dir", help="Write each store's plan JSON (the bytes `plan --json` prints) here.")] = None,
    *,
    opts: Options,
    fleet: Fleet,
) -> None:
    """Plan every store; never writes to a store."""
    _fleet("plan", asdict(fleet), opts, plans_dir=plans_dir)


@app.command("apply")
@with_options(FLEET)
@with_options(TARGETS, into=Fleet, arg="fleet")
def apply(
    yes: YesOpt = False,
    select: SelectOpt = None,
    resolve: ResolveOpt = None,
    plans_dir: Annotated[Optional[str], typer.Option("--plans-dir", help=(
        "Apply exactly the plans `fleet plan --plans-dir` wrote here: in each store the actions its saved plan would "
        "apply (or --select names in it), each pinned by its fingerprint; a store without a saved plan, or whose "
        "plan changed since, fails and is left untouched."))] = None,
    *,
    opts: Options,
    fleet: Fleet,
) -> None:
    """Plan and apply every store's automatic actions (or --select; with --plans-dir, only those of its reviewed plan); journaled and undoable per store."""

    def check() -> None:
        from ..apply import parse_select

        if resolve not in (None, "newer", "keep-both"):
            raise UsageError(f"--resolve must be newer or keep-both, not {resolve!r}")
        # a wrong kind, or a number without its fingerprint (each store's plan numbers its own actions): exit 2 before any store
        parse_select(select, cast(Literal["newer", "keep-both"] | None, resolve), unattended=True)
        if not yes:
            raise UsageError("fleet apply changes every store without a prompt: pass --yes")

    guarded(check)
    _fleet("apply", asdict(fleet), opts, select=tuple(select) if select else None, resolve=resolve, plans_dir=plans_dir)


@app.command("run")
@with_options(FLEET)
@with_options(TARGETS, into=Fleet, arg="fleet")
def run(
    if_due: Annotated[bool, typer.Option("--if-due", help="Only the stores that are due; resumable (--state).")] = False,
    state: Annotated[
        Optional[str], typer.Option("--state", help="Fleet state file for --if-due (default: .memconsolidate-fleet.jsonl in the --discover folder, else here).")
    ] = None,
    *,
    opts: Options,
    fleet: Fleet,
) -> None:
    """The nightly entry point for many stores: `run` on each; with --if-due, a killed fleet run resumes."""
    if state and not if_due:
        guarded(_state_needs_if_due)
    options = {**asdict(fleet), "state": state, "state_wanted": if_due}
    _fleet("run", options, opts, if_due=if_due)


def _state_needs_if_due() -> None:
    raise UsageError("--state needs --if-due (only a --if-due fleet run is resumable)")
