"""The `memconsolidate` command line. Thin: parse options into Settings, call the pipeline, print.

`--json` writes data only to stdout; messages go to stderr. Bad usage, a bad path or a bad config
is one line on stderr and exit code 2, never a traceback (MEMCONSOLIDATE_DEBUG=1 shows it).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from typing import Annotated, Any, Callable, Optional

import typer

from .config import build_settings, load_user_config
from .errors import RunFailed, UsageError, os_reason
from .layouts.registry import names as layout_names
from .printable import printable

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="Keep AI-agent memory stores healthy: plan, apply, undo.",
)



@app.callback()
def _root() -> None:
    """Keep AI-agent memory stores healthy: plan, apply, undo."""


PathArg = Annotated[str, typer.Argument(help="The memory store (folder).", show_default=False)]
LayoutOpt = Annotated[str, typer.Option("--layout", help="|".join(["auto", *layout_names()]))]
ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", help="none | stub | mock | any litellm model string (default: stub, or MEMCONSOLIDATE_MODEL)"),
]
ApiBaseOpt = Annotated[Optional[str], typer.Option("--api-base", help="Base URL of an OpenAI-compatible server.")]
LLMModeOpt = Annotated[Optional[str], typer.Option("--llm-mode", help="tools|json|json_schema|md_json")]
ConfigOpt = Annotated[Optional[str], typer.Option("--config", help="Settings file (TOML or JSON).")]
NowOpt = Annotated[Optional[str], typer.Option("--now", help="Today, for every age computation (YYYY-MM-DD).")]
RepoOpt = Annotated[Optional[str], typer.Option("--repo", help="Repository root for staleness checks.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the plan as JSON (the contract) on stdout.")]
CacheDirOpt = Annotated[Optional[str], typer.Option("--cache-dir", help="LLM cache folder.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")]
MaxCallsOpt = Annotated[Optional[int], typer.Option("--max-calls", help="Stop the LLM stages after N calls.")]
MaxRetireOpt = Annotated[Optional[float], typer.Option("--max-retire", help="Retire at most this fraction (0-1) of the live memories in one run (default 0.25).")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", help="Stop the LLM stages after this many USD.")]
TrustModelOpt = Annotated[
    bool,
    typer.Option("--trust-model", help="Let a model's \"same meaning\" verdict retire a memory whose text differs without asking."),
]


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"memconsolidate: {printable(message)}\n")
    raise typer.Exit(code)


def _print(*lines: str) -> None:
    """Lines for a person on stdout, each kept one line whatever the file names in it hold."""
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))


def guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body; turn known errors into one line and an exit code."""
    try:
        return fn()
    except UsageError as exc:
        _fail(str(exc), 2)
    except RunFailed as exc:
        _fail(str(exc), 1)
    except OSError as exc:  # a full disk, a folder where a file was: one line, not an internal error
        if os.environ.get("MEMCONSOLIDATE_DEBUG"):
            raise
        _fail(f"cannot complete: {os_reason(exc)}", 1)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
        if os.environ.get("MEMCONSOLIDATE_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set MEMCONSOLIDATE_DEBUG=1 for details)", 1)


def parse_now(value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--now must be a date like 2026-11-29, not {value!r}") from None


def make_settings(
    *,
    config: str | None,
    now: str | None = None,
    layout: str = "auto",
    repo: str | None = None,
    model: str | None = None,
    api_base: str | None = None,
    llm_mode: str | None = None,
    cache_dir: str | None = None,
    no_cache: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    trust_model: bool = False,
    max_retire: float | None = None,
):
    if repo is not None and not os.path.isdir(repo):
        raise UsageError(f"--repo is not a directory: {repo}")
    overrides = {
        "now": parse_now(now),
        "layout": layout,
        "repo": os.path.abspath(repo) if repo else None,
        "llm.model": model,
        "llm.api_base": api_base,
        "llm.mode": llm_mode,
        "llm.cache_dir": cache_dir,
        "llm.no_cache": no_cache or None,
        "llm.max_calls": max_calls,
        "llm.max_cost": max_cost,
        "llm.trust_model": trust_model or None,
        "max_retire_fraction": max_retire,
    }
    return build_settings(load_user_config(config), overrides)


def _progress(as_json: bool) -> Callable[[str], None] | None:
    """Stage progress on stderr, for people at a terminal; never mixed into --json or logs."""
    return _say if sys.stderr.isatty() and not as_json else None


_SETTINGS_OPTIONS = (
    "config", "now", "layout", "repo", "model", "api_base", "llm_mode", "cache_dir", "no_cache", "max_calls", "max_cost", "trust_model",
    "max_retire",
)


def settings_from(options: dict[str, Any]):
    """Settings from a command's options (the ones every planning command shares)."""
    return make_settings(**{k: options[k] for k in _SETTINGS_OPTIONS if k in options})


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def _say(message: str) -> None:
    sys.stderr.write(f"memconsolidate: {printable(message)}\n")


@app.command()
def plan(
    path: PathArg,
    layout: LayoutOpt = "auto",
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    llm_mode: LLMModeOpt = None,
    config: ConfigOpt = None,
    now: NowOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    max_calls: MaxCallsOpt = None,
    max_retire: MaxRetireOpt = None,
    max_cost: MaxCostOpt = None,
    trust_model: TrustModelOpt = False,
) -> None:
    """Read a store and print what should change. Never writes to the store."""
    options = dict(locals())

    def body() -> None:
        from .report import render
        from .workflow import plan_store

        settings = settings_from(options)
        _, _, result = plan_store(path, settings, _say, _progress(as_json))
        if as_json:
            emit_json(result.to_json_dict())
        else:
            sys.stdout.write(render(result))

    guarded(body)


SelectOpt = Annotated[
    Optional[list[str]],
    typer.Option("--select", help="Apply only these: action kinds or 1-based action numbers (repeatable, comma-separated)."),
]
ResolveOpt = Annotated[Optional[str], typer.Option("--resolve", help="Apply conflicts with this policy: newer | keep-both.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


@app.command()
def apply(
    path: PathArg,
    layout: LayoutOpt = "auto",
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    llm_mode: LLMModeOpt = None,
    config: ConfigOpt = None,
    now: NowOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    max_calls: MaxCallsOpt = None,
    max_retire: MaxRetireOpt = None,
    max_cost: MaxCostOpt = None,
    trust_model: TrustModelOpt = False,
    yes: YesOpt = False,
    select: SelectOpt = None,
    resolve: ResolveOpt = None,
) -> None:
    """Plan, then execute the automatic actions (or those chosen with --select). Journaled; undoable."""
    options = dict(locals())

    def body() -> None:
        from .report import render
        from .workflow import apply_store

        if resolve not in (None, "newer", "keep-both"):
            raise UsageError(f"--resolve must be newer or keep-both, not {resolve!r}")
        settings = settings_from(options)

        def confirm(p, n: int) -> bool:
            if yes:
                return True
            if not sys.stdin.isatty():
                raise UsageError("not a terminal: pass --yes to apply without a prompt")
            sys.stderr.write(render(p))
            return typer.confirm(printable(f"Apply {n} action(s) to {p.root}?"), default=False, err=True)

        result_plan, result = apply_store(path, settings, _say, select, resolve, confirm, _progress(as_json))  # type: ignore[arg-type]
        if as_json:
            emit_json(_apply_json(result_plan, result))
            return
        if result is None or result.record is None:
            skipped = len(result.changes.skipped) if result else 0
            _print(f"Nothing to apply ({len(result_plan.actions)} actions in the plan, {skipped} skipped).")
            return
        ch = result.changes
        _print(
            f"Applied run {result.run_id}: {len(ch.applied)} action(s), {len(ch.skipped)} skipped, "
            f"{len(result.record.touched)} file(s) changed.",
            f"Undo with: memconsolidate undo {result_plan.root} --run {result.run_id}",
            *(f"  skipped {a.kind} {', '.join(a.targets)}: {why}" for a, why in ch.skipped),
        )

    guarded(body)


def _apply_json(plan_, result) -> dict[str, Any]:
    if result is None:
        return {"run_id": None, "applied": [], "skipped": [], "changed": []}
    return {
        "run_id": result.run_id if result.record else None,
        "applied": [a.model_dump(mode="json", exclude_none=True) for a in result.changes.applied],
        "skipped": [{"kind": a.kind, "targets": a.targets, "why": why} for a, why in result.changes.skipped],
        "changed": sorted(result.record.touched) if result.record else [],
        "notes": result.changes.notes,
    }


@app.command()
def undo(
    path: PathArg,
    run: Annotated[Optional[str], typer.Option("--run", help="The run to undo (default: the latest applied run).")] = None,
) -> None:
    """Restore the store byte-for-byte to how it was before a run."""

    def body() -> None:
        from .workflow import undo_store

        record = undo_store(path, run, _say)
        target = record.info.get("undo_of", record.run_id)
        _print(f"Undid run {target}: {len(record.touched)} file(s) restored.")

    guarded(body)


@app.command()
def status(
    path: PathArg,
    layout: LayoutOpt = "auto",
    config: ConfigOpt = None,
    now: NowOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memories by type, budgets, last run, pending actions, unfinished journal."""

    def body() -> None:
        from .workflow import status_store

        settings = make_settings(config=config, now=now, layout=layout)
        info = status_store(path, settings)
        if as_json:
            emit_json(info)
            return
        out = [f"{info['layout']} store {info['root']}: {info['memories']} memories"]
        out.append("  by type: " + (", ".join(f"{k}={v}" for k, v in info["by_type"].items()) or "none"))
        for b in info["budgets"]:
            out.append(f"  {b['kind']}: {', '.join(b['targets'])}: {b['reason']}")
        last = info["last_run"]
        out.append(f"  last run: {last['last_success']} ({last.get('run_id')})" if last else "  last run: never")
        out.append("  pending: " + (", ".join(f"{k}={v}" for k, v in info["pending_actions"].items()) or "nothing"))
        if info["needs_user"]:
            out.append("  need you: " + ", ".join(f"{k}={v}" for k, v in info["needs_user"].items()))
        if info["run_in_progress"]:
            out.append(f"  a run is in progress (pid {info['run_in_progress']}); its journal: " + ", ".join(info["unfinished_journal"]))
        elif info["unfinished_journal"]:
            out.append("  UNFINISHED JOURNAL: " + ", ".join(info["unfinished_journal"]) + " (the next command on the store rolls it back)")
        for j in info["foreign_journal"]:
            out.append(f"  NOT ACTED ON: run {j['run']}: {j['why']}")
        _print(*out)

    guarded(body)


@app.command()
def run(
    path: PathArg,
    if_due: Annotated[bool, typer.Option("--if-due", help="Run only when interval_hours have passed since the last successful run.")] = False,
    layout: LayoutOpt = "auto",
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    llm_mode: LLMModeOpt = None,
    config: ConfigOpt = None,
    now: NowOpt = None,
    repo: RepoOpt = None,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    max_calls: MaxCallsOpt = None,
    max_retire: MaxRetireOpt = None,
    max_cost: MaxCostOpt = None,
    trust_model: TrustModelOpt = False,
) -> None:
    """The nightly entry point: plan and apply the automatic actions, non-interactively."""
    options = dict(locals())

    def body() -> None:
        from .workflow import run_store

        settings = settings_from(options)
        outcome = run_store(path, settings, _say, if_due, progress=_progress(as_json))
        if as_json:
            emit_json({
                "ran": outcome.ran, "reason": outcome.reason, "recorded": outcome.recorded,
                "plan": outcome.plan.to_json_dict() if outcome.plan else None,
                "apply": _apply_json(outcome.plan, outcome.result) if outcome.ran else None,
            })
        elif not outcome.ran:
            _print(outcome.reason)
        else:
            applied = len(outcome.result.changes.applied) if outcome.result else 0
            rid = outcome.result.run_id if outcome.result and outcome.result.record else "none"
            _print(f"Ran: {applied} action(s) applied (run {rid}); {len(outcome.plan.errors)} stage error(s).",
                   *(f"  error {e.stage}: {e.message}" for e in outcome.plan.errors))
        if outcome.ran and not outcome.recorded and not outcome.applied_unrecorded:
            raise RunFailed("the run did not complete cleanly (see errors); it was not recorded as the last run")

    guarded(body)


@app.command("eval")
def eval_(
    stage: Annotated[Optional[str], typer.Option("--stage", help="reorder | conflict | rule | metadata | split | dates (default: all)")] = None,
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="A JSONL dataset (default: evals/datasets/<stage>.jsonl).")] = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    llm_mode: LLMModeOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    record: Annotated[bool, typer.Option("--record", help="Re-record the mock's replies with this (real) model.")] = False,
    thresholds: Annotated[Optional[str], typer.Option("--thresholds", help="Thresholds file (default: evals/thresholds.toml).")] = None,
) -> None:
    """Score a stage's judge on labelled cases, beside the seeds' own heuristics."""

    def body() -> None:
        from pathlib import Path

        from .evaluate import run_eval
        from .evaluate.cases import default_dataset
        from .llm import make_client

        settings = make_settings(config=config, model=model, api_base=api_base, llm_mode=llm_mode, cache_dir=cache_dir, no_cache=no_cache)
        if settings.llm.model == "none" and stage != "dates":  # dates is scored on rules alone
            raise UsageError("eval needs a model: stub, mock or a litellm model string")
        if record and settings.llm.model in ("stub", "mock"):
            raise UsageError("--record needs a real model (the mock replays what a real model said)")
        if dataset and not stage:
            raise UsageError("--dataset needs --stage")
        from .evaluate import available_stages

        stages = [stage] if stage else [s for s in available_stages() if default_dataset(s).exists()]
        client = make_client(settings.llm, record=record)
        results = []
        try:
            for name in stages:
                results.append(run_eval(name, Path(dataset) if dataset else None, settings, client, Path(thresholds) if thresholds else None))
        finally:
            close = getattr(client, "close", None)
            if close:
                close()
        if as_json:
            emit_json(results[0].report if stage else [r.report for r in results])
        else:
            sys.stdout.write(_eval_table(results))
        failed = False
        for r in results:
            for e in r.errors:
                _say(f"{r.report['stage']}: model error: {e}")
            if any("no recorded reply" in e for e in r.errors):
                failed = True
                _say(
                    f"{r.report['stage']}: the mock's recordings are missing or stale for the current prompt: re-record with "
                    f"`memconsolidate eval --stage {r.report['stage']} --record --model <real model>` (evals/recordings/README.md)"
                )
            for f in r.failures:
                failed = True
                _say(f"{r.report['stage']} ({r.report['model']}): below threshold: {f}")
            if r.error_failure:
                failed = True
                _say(f"{r.report['stage']} ({r.report['model']}): {r.error_failure}")
        if failed:
            raise typer.Exit(1)

    guarded(body)


def _eval_table(results) -> str:
    lines = [f"{'stage':<9} {'model':<22} {'n':>4} {'acc':>6} {'prec':>6} {'rec':>6} {'f1':>6} {'err':>4}  baselines (acc)"]
    for r in results:
        rep = r.report
        m = rep["metrics"]
        base = ", ".join(f"{k} {v.get('accuracy', 0):.3f}" for k, v in rep.get("baselines", {}).items())

        def f(x):
            return f"{x:.3f}" if isinstance(x, (int, float)) else "  -  "

        lines.append(
            f"{rep['stage']:<9} {rep['model'][:22]:<22} {rep['n']:>4} {f(m.get('accuracy'))} {f(m.get('precision'))} "
            f"{f(m.get('recall'))} {f(m.get('f1'))} {rep.get('errors', 0):>4}  {base}"
        )
        if r.failures:
            lines.append(f"{'':<9} below threshold: {'; '.join(r.failures)}")
        if r.error_failure:
            lines.append(f"{'':<9} {r.error_failure}")
    return "\n".join(lines) + "\n"


def main() -> None:
    # Keys keep the bytes of non-UTF-8 file names as lone surrogates: print them as \udcXX escapes
    # (valid JSON that loads back to the same key), never crash or emit invalid UTF-8.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    app()


if __name__ == "__main__":
    main()
