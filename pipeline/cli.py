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
from .errors import RunFailed, UsageError

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
LayoutOpt = Annotated[str, typer.Option("--layout", help="auto|crux|claude|zylos|bank")]
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
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", help="Stop the LLM stages after this many USD.")]


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"memconsolidate: {message}\n")
    raise typer.Exit(code)


def guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body; turn known errors into one line and an exit code."""
    try:
        return fn()
    except UsageError as exc:
        _fail(str(exc), 2)
    except RunFailed as exc:
        _fail(str(exc), 1)
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
    }
    return build_settings(load_user_config(config), overrides)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


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
    max_cost: MaxCostOpt = None,
) -> None:
    """Read a store and print what should change. Never writes to the store."""

    def body() -> None:
        from .plan import build_plan
        from .report import render
        from .stages import stage_runner
        from .stores import open_store

        settings = make_settings(
            config=config, now=now, layout=layout, repo=repo, model=model, api_base=api_base,
            llm_mode=llm_mode, cache_dir=cache_dir, no_cache=no_cache, max_calls=max_calls, max_cost=max_cost,
        )
        corpus, settings = open_store(path, settings)
        result = build_plan(corpus, settings, stage_runner(settings))
        if as_json:
            emit_json(result.to_json_dict())
        else:
            sys.stdout.write(render(result))

    guarded(body)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
