"""The `memconsolidate` command line. Thin: parse options into Settings, call the pipeline, print.

`--json` writes data only to stdout; messages go to stderr. Bad usage, a bad path or a bad config
is one line on stderr and exit code 2, never a traceback (MEMCONSOLIDATE_DEBUG=1 shows it). What a
person reads is laid out by `pipeline.render`; the shared options are defined in `cli_options`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional

import typer
from typer._click import exceptions as click_errors  # typer vendors click: its errors are these

from . import __version__
from .cli_options import (
    MODEL, OUTPUT, PLANNING, STORE, Options, PathArg, ResolveOpt, SelectOpt, YesOpt, json_flag, make_settings, with_options,
)
from .cli_errors import fail, guarded, say
from .errors import RunFailed, UsageError
from .fleet.cli import app as _fleet_app
from .printable import printable
from .render.text import terminal_width
from .storage.gc_pause import freeze_at_exit
from .text.counts import plural

if TYPE_CHECKING:
    from .model import Action

EPILOG = """\
Exit codes: 0 success (also `run --if-due` when not due or when another run holds the store);
1 the run failed (a stage error in `run`, a declined prompt, a failed apply or undo);
2 bad usage, path, config or a store that cannot be written (one line on stderr).

Environment: MEMCONSOLIDATE_MODEL (default --model), MEMCONSOLIDATE_CACHE_DIR (LLM reply cache),
MEMCONSOLIDATE_EVALS (eval datasets, thresholds, recordings), MEMCONSOLIDATE_RECORDINGS (the mock's
replies), MEMCONSOLIDATE_DEBUG=1 (tracebacks), XDG_CONFIG_HOME (user config), COLUMNS (width at a
terminal), and the provider's key for a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).

Config: --config FILE, else STORE/.memconsolidate.toml, else $XDG_CONFIG_HOME/memconsolidate/config.toml.
"""

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    help="Keep AI-agent memory stores healthy: plan, apply, undo.",
    epilog=EPILOG,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"memconsolidate {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Keep AI-agent memory stores healthy: plan, apply, undo."""


def _print(*lines: str) -> None:
    """Lines for a person on stdout, each kept one line whatever the file names in it hold."""
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def _progress(opts: Options, as_json: bool = False):
    from .render.progress import stage_progress

    return stage_progress(sys.stderr, enabled=not (as_json or opts.quiet), verbose=opts.verbose)


def with_progress(opts: Options, as_json: bool, body: Callable[[Any], None]) -> None:
    """`body(progress)` under the error handler, the stage bars closed (marked cut short on Ctrl-C)
    before anything else is printed."""

    def run() -> None:
        bars = _progress(opts, as_json)
        try:
            body(bars)
        except KeyboardInterrupt:
            if bars:
                bars.close(interrupted=True)
            raise
        finally:
            if bars:
                bars.close()

    guarded(run)


def _width() -> int:
    return terminal_width(sys.stdout)


def _config_shown(used: Path | None) -> str | None:
    return str(used) if used else None


# --- commands ------------------------------------------------------------------------------


@app.command()
@with_options(PLANNING, OUTPUT)
def plan(path: PathArg, as_json: Annotated[bool, json_flag("the plan (the memconsolidate.plan/1 contract)")] = False, *, opts: Options) -> None:
    """Read a store and print what should change, actions numbered for `apply --select`. Never writes to the store."""

    def body(progress) -> None:
        from .render.plan import render_plan
        from .workflow import plan_store

        settings, used = make_settings(opts, path)
        _, _, result = plan_store(path, settings, say, progress)
        if progress:
            progress.close()
        if as_json:
            emit_json(result.to_json_dict())
        else:
            sys.stdout.write(render_plan(result, _width(), _config_shown(used)))

    with_progress(opts, as_json, body)


@app.command()
@with_options(PLANNING, OUTPUT)
def apply(
    path: PathArg,
    as_json: Annotated[bool, json_flag("what was applied: run_id, applied actions, skipped, changed files")] = False,
    yes: YesOpt = False,
    select: SelectOpt = None,
    resolve: ResolveOpt = None,
    *,
    opts: Options,
) -> None:
    """Plan, then execute the automatic actions (or those chosen with --select). Journaled; undoable."""

    def body(progress) -> None:
        from .apply import parse_select
        from .render.plan import render_plan
        from .render.runs import render_applied, render_nothing, render_to_apply
        from .workflow import apply_store

        if resolve not in (None, "newer", "keep-both"):
            raise UsageError(f"--resolve must be newer or keep-both, not {resolve!r}")
        # checked just above; a wrong kind, or a number --yes would apply unchecked, is reported before anything is planned
        parse_select(select, resolve, unattended=yes)  # type: ignore[arg-type]
        if not yes and not sys.stdin.isatty():
            # before the lock and the plan: model calls cost money, and nothing may be left behind
            raise UsageError("not a terminal: pass --yes to apply without a prompt (nothing was planned or written)")
        settings, used = make_settings(opts, path)

        def confirm(p, chosen: list[Action]) -> bool:
            if yes:
                return True
            if progress:
                progress.close()
            width = terminal_width(sys.stderr)
            # the whole plan, then what this apply runs of it, by the numbers and fingerprints the plan shows
            sys.stderr.write(render_plan(p, width, _config_shown(used), how_to_apply=False) + render_to_apply(p, chosen, width))
            return typer.confirm(printable(f"Apply {plural(len(chosen), 'action')} to {p.root}?"), default=False, err=True)

        result_plan, result = apply_store(path, settings, say, select, resolve, confirm, progress)  # type: ignore[arg-type]
        if progress:
            progress.close()
        if as_json:
            emit_json(_apply_json(result_plan, result))
        elif opts.quiet:
            return
        elif result is None or result.record is None:
            sys.stdout.write(render_nothing(result_plan, result))
        else:
            sys.stdout.write(render_applied(result_plan, result, _width()))

    with_progress(opts, as_json, body)


def _apply_json(plan_, result) -> dict[str, Any]:
    """Each action applied or skipped ends with its `fingerprint`, as in the plan: which of the
    actions a script reviewed ran."""
    if result is None:
        return {"run_id": None, "applied": [], "skipped": [], "changed": [], "notes": []}
    return {
        "run_id": result.run_id if result.record else None,
        "applied": [a.plan_json() for a in result.changes.applied],
        "skipped": [{"kind": a.kind, "targets": a.targets, "why": why, "fingerprint": a.fingerprint()} for a, why in result.changes.skipped],
        "changed": sorted(result.record.touched) if result.record else [],
        "notes": result.changes.notes,
    }


@app.command()
@with_options(OUTPUT)
def undo(
    path: PathArg,
    run: Annotated[Optional[str], typer.Option("--run", help="The run to undo (default: the latest applied run).")] = None,
    as_json: Annotated[bool, json_flag("the undo: the run undone, the undo's own run id, restored files")] = False,
    *,
    opts: Options,
) -> None:
    """Restore the store byte-for-byte to how it was before a run (what was added since at the end of a file it rewrote is kept after it)."""

    def body() -> None:
        from .workflow import undo_store

        record = undo_store(path, run, say)
        target = record.info.get("undo_of", record.run_id)
        kept: dict[str, int] = record.info.get("kept_added", {})
        if as_json:
            emit_json({"undone": target, "run_id": record.run_id if "undo_of" in record.info else None,
                       "restored": sorted(record.touched), "kept_added": kept})
        elif not opts.quiet:
            n = len(record.touched)
            _print(f"Undid run {target}: {n} {'file' if n == 1 else 'files'} restored.")
            for p, size in kept.items():
                _print(f"  kept what was added to {printable(p)} since the run ({plural(size, 'byte')}), after its bytes from before it")

    guarded(body)


@app.command()
@with_options(PLANNING, OUTPUT)  # every option that changes what plan counts, so the counts agree
def status(path: PathArg, as_json: Annotated[bool, json_flag("the status: memories, pending counts, runs, state folder size")] = False,
           *, opts: Options) -> None:
    """Memories by type, budgets, pending actions (as `plan` counts them, same model), recent runs, state size."""

    def body(progress) -> None:
        from .render.status import render_status
        from .workflow import status_store

        settings, used = make_settings(opts, path)
        info = status_store(path, settings, progress)
        info["config"] = _config_shown(used)
        if progress:
            progress.close()
        if as_json:
            emit_json(info)
        else:
            sys.stdout.write(render_status(info, _width(), _config_shown(used)))

    with_progress(opts, as_json, body)


@app.command()
@with_options(STORE, OUTPUT)
def runs(path: PathArg, as_json: Annotated[bool, json_flag("the runs kept, oldest first")] = False, *, opts: Options) -> None:
    """The runs the store keeps (newest first): id, time, actions, how to undo; older ones are pruned."""

    def body() -> None:
        from .history import run_history
        from .layouts.registry import resolve_root
        from .lock import run_in_progress
        from .render.runs import render_runs

        settings, _ = make_settings(opts, path)
        root = resolve_root(path)
        entries = [e.to_json() for e in run_history(root)]
        if as_json:
            emit_json(entries)
        else:
            sys.stdout.write(render_runs(entries, str(root), settings.journal.keep_runs, _width(), live=run_in_progress(root)))

    guarded(body)


@app.command()
@with_options(PLANNING, OUTPUT)
def run(
    path: PathArg,
    if_due: Annotated[bool, typer.Option("--if-due", help="Run only when interval_hours have passed since the last successful run.")] = False,
    as_json: Annotated[bool, json_flag("the run: ran, reason, recorded, the plan and what was applied")] = False,
    *,
    opts: Options,
) -> None:
    """The nightly entry point: plan and apply the automatic actions, non-interactively; one line per run on stdout."""

    def body(progress) -> None:
        from .lock import LockHeld
        from .render.runs import cron_line
        from .workflow import RunOutcome, run_store

        settings, _ = make_settings(opts, path)
        wall = dt.datetime.now(dt.timezone.utc)
        root = os.path.abspath(path)
        try:
            outcome = run_store(path, settings, say, if_due, wall=wall, progress=progress)
        except LockHeld as exc:
            if not if_due:
                raise
            outcome = RunOutcome(ran=False, reason=str(exc))  # cron stays quiet: the other run does the work
        if progress:
            progress.close()
        if as_json:
            emit_json({
                "ran": outcome.ran, "reason": outcome.reason, "recorded": outcome.recorded,
                "plan": outcome.plan.to_json_dict() if outcome.plan else None,
                "apply": _apply_json(outcome.plan, outcome.result) if outcome.ran else None,
            })
        elif not opts.quiet:
            sys.stdout.write(cron_line(wall, root, settings.llm.model, outcome))
        for e in outcome.plan.errors if outcome.plan else []:
            say(f"error {e.stage}: {e.message}")
        if outcome.ran and not outcome.recorded and not outcome.applied_unrecorded:
            raise RunFailed("the run did not complete cleanly (see errors); it was not recorded as the last run")

    with_progress(opts, as_json, body)


@app.command("eval")
@with_options(MODEL, OUTPUT)
def eval_(
    stage: Annotated[Optional[str], typer.Option("--stage", help="reorder | conflict (or conflicts) | rule (or rules) | metadata | split | dates (default: all)")] = None,
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="A JSONL dataset (default: <evals>/datasets/<stage>.jsonl).")] = None,
    as_json: Annotated[bool, json_flag("the eval report (one stage: an object; all: a list)")] = False,
    record: Annotated[bool, typer.Option("--record", help="Re-record the mock's replies with this (real) model.")] = False,
    thresholds: Annotated[Optional[str], typer.Option("--thresholds", help="Thresholds file (default: <evals>/thresholds.toml).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="Settings file (TOML or JSON).")] = None,
    *,
    opts: Options,
) -> None:
    """Score a stage's judge on labelled cases, beside the seeds' own heuristics.

    The data is found in $MEMCONSOLIDATE_EVALS, else the source tree's evals/, else the copy
    installed with the package, else ./evals.
    """

    def body() -> None:
        from .evaluate import available_stages, run_eval
        from .evaluate.cases import dataset_stage, default_dataset, evals_dir, find_evals
        from .llm import make_client
        from .render.eval_table import render_eval_table

        opts.config = config
        settings, _ = make_settings(opts)
        name = dataset_stage(stage) if stage else None
        if settings.llm.model == "none" and name != "dates":  # dates is scored on rules alone
            raise UsageError("eval needs a model: stub, mock or a litellm model string")
        if record and settings.llm.model in ("stub", "mock"):
            raise UsageError("--record needs a real model (the mock replays what a real model said)")
        if dataset and not name:
            raise UsageError("--dataset needs --stage")
        evals = evals_dir() if dataset else find_evals()  # a named dataset needs no evals folder
        stages = [name] if name else [s for s in available_stages() if default_dataset(s).exists()]
        recordings = None if os.environ.get("MEMCONSOLIDATE_RECORDINGS") else evals / "recordings"
        client = make_client(settings.llm, record=record, recordings=recordings)
        results = []
        try:
            for s in stages:
                results.append(run_eval(s, Path(dataset) if dataset else None, settings, client, Path(thresholds) if thresholds else None))
        finally:
            close = getattr(client, "close", None)
            if close:
                close()
        if as_json:
            emit_json(results[0].report if name else [r.report for r in results])
        else:
            sys.stdout.write(render_eval_table(results))
        if _eval_failed(results):
            raise typer.Exit(1)

    guarded(body)


def _eval_failed(results) -> bool:
    failed = False
    for r in results:
        for e in r.errors:
            say(f"{r.report['stage']}: model error: {e}")
        if any("no recorded reply" in e for e in r.errors):
            failed = True
            say(
                f"{r.report['stage']}: the mock's recordings are missing or stale for the current prompt: re-record with "
                f"`memconsolidate eval --stage {r.report['stage']} --record --model <real model>` (evals/recordings/README.md)"
            )
        for f in r.failures:
            failed = True
            say(f"{r.report['stage']} ({r.report['model']}): below threshold: {f}")
        if r.error_failure:
            failed = True
            say(f"{r.report['stage']} ({r.report['model']}): {r.error_failure}")
    return failed


@app.command("help")
def help_(
    ctx: typer.Context,
    command: Annotated[Optional[str], typer.Argument(help="The command to explain (default: all).", show_default=False)] = None,
) -> None:
    """Show the help of memconsolidate or of one of its commands."""
    root = ctx.parent
    assert root is not None
    group = root.command
    if command is None:
        sys.stdout.write(root.get_help() + "\n")
        return
    cmd = group.get_command(root, command)  # type: ignore[attr-defined]
    if cmd is None:
        fail(f"no command {command!r} (commands: {', '.join(group.list_commands(root))})", 2)  # type: ignore[attr-defined]
    with type(root)(cmd, info_name=command, parent=root) as sub:
        sys.stdout.write(cmd.get_help(sub) + "\n")


# --- entry point ---------------------------------------------------------------------------


def _usage_line(exc: click_errors.UsageError) -> str:
    where = exc.ctx.command_path if exc.ctx is not None else "memconsolidate"
    return f"{exc.format_message()} (see `{where} --help`)"


app.add_typer(_fleet_app, name="fleet", help="Plan, apply or run many stores at once (JSON lines; local processes or Ray).")


def main() -> None:
    freeze_at_exit()  # the command's store and plan stay alive to its end: no last walk over them
    # Keys keep the bytes of non-UTF-8 file names as lone surrogates: print them as \udcXX escapes
    # (valid JSON that loads back to the same key), never crash or emit invalid UTF-8.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    if sys.stderr.isatty():
        app()  # click's own usage screens, for a person
        return
    # Off a terminal (a log, a pipe, cron) a usage error is one line, like every other error.
    try:
        code = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n" if exc.ctx else "")
        sys.exit(exc.exit_code)
    except click_errors.UsageError as exc:
        sys.stderr.write(f"memconsolidate: {printable(_usage_line(exc))}\n")
        sys.exit(exc.exit_code)
    except click_errors.ClickException as exc:
        sys.stderr.write(f"memconsolidate: {printable(exc.format_message())}\n")
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("memconsolidate: aborted\n")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
