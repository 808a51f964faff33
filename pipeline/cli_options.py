"""The command line's options, each defined once, and the decorator that gives them to a command.

A command declares only its own parameters and a keyword `opts: Options`; `@with_options(...)` adds
the shared groups to the signature typer reads and hands the body their values in one object.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import os
import typing
from dataclasses import dataclass, fields
from typing import Annotated, Any, Callable, Optional

import typer

from .config import build_settings
from .storage.config_file import find_config, load_user_config
from .errors import UsageError
from .layouts.registry import names as layout_names

PathArg = Annotated[str, typer.Argument(help="The memory store (folder).", show_default=False)]

LayoutOpt = Annotated[str, typer.Option("--layout", help="|".join(["auto", *layout_names()]))]
ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", help="none | stub | mock | any litellm model string (default: stub, or MEMCONSOLIDATE_MODEL)"),
]
ApiBaseOpt = Annotated[Optional[str], typer.Option("--api-base", help="Base URL of an OpenAI-compatible server.")]
LLMModeOpt = Annotated[Optional[str], typer.Option("--llm-mode", help="tools|json|json_schema|md_json")]
ConfigOpt = Annotated[
    Optional[str],
    typer.Option("--config", help="Settings file (TOML or JSON); default: STORE/.memconsolidate.toml, "
                                  "else $XDG_CONFIG_HOME/memconsolidate/config.toml."),
]
NowOpt = Annotated[Optional[str], typer.Option("--now", help="Today, for every age computation (YYYY-MM-DD).")]
RepoOpt = Annotated[Optional[str], typer.Option("--repo", help="Repository root for staleness checks.")]
CacheDirOpt = Annotated[Optional[str], typer.Option("--cache-dir", help="LLM cache folder.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")]
MaxCallsOpt = Annotated[Optional[int], typer.Option("--max-calls", help="Stop the LLM stages after N requests to the model (each retry and re-ask is one).")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", help="Stop the LLM stages after this many USD.")]
MaxRetireOpt = Annotated[
    Optional[float],
    typer.Option("--max-retire", help="Retire at most this fraction (0-1) of the live memories in one run (default 0.25)."),
]
TrustModelOpt = Annotated[
    bool,
    typer.Option("--trust-model", help="Let a model's \"same meaning\" verdict retire a memory whose text differs without asking."),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print only warnings and errors (and --json data).")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Also print what each step did (on stderr).")]


def json_flag(prints: str) -> Any:
    """The `--json` option of a command, saying what it prints: `Annotated[bool, json_flag("...")]`
    (a call inside Annotated, which a type checker reads as a plain bool)."""
    return typer.Option("--json", help=f"Print {prints} as JSON on stdout (messages stay on stderr).")


@dataclass
class Options:
    """Every shared option; a command that does not take one sees its default."""

    layout: str = "auto"
    model: str | None = None
    api_base: str | None = None
    llm_mode: str | None = None
    config: str | None = None
    now: str | None = None
    repo: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    max_calls: int | None = None
    max_cost: float | None = None
    max_retire: float | None = None
    trust_model: bool = False
    quiet: bool = False
    verbose: bool = False


# The groups, as (name, annotation) in the order --help lists them; defaults come from Options.
STORE = (("layout", LayoutOpt), ("config", ConfigOpt), ("now", NowOpt))
MODEL = (("model", ModelOpt), ("api_base", ApiBaseOpt), ("llm_mode", LLMModeOpt), ("cache_dir", CacheDirOpt),
         ("no_cache", NoCacheOpt))
PLANNING = (*STORE, *MODEL, ("repo", RepoOpt), ("max_calls", MaxCallsOpt), ("max_cost", MaxCostOpt),
            ("max_retire", MaxRetireOpt), ("trust_model", TrustModelOpt))
OUTPUT = (("quiet", QuietOpt), ("verbose", VerboseOpt))



def with_options(
    *groups: tuple[tuple[str, Any], ...], into: type = Options, arg: str = "opts"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the options of `groups` to a command; its body receives them as one `into` dataclass
    (default: Options) in its keyword `arg`. Decorators stack: each fills its own dataclass."""
    added = [(name, ann) for group in groups for name, ann in group]
    defaults = {f.name: f.default for f in fields(into)}

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(fn).parameters.values() if p.name != arg]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=ann)
                 for name, ann in added]
        names = [name for name, _ in added]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = into(**{name: kwargs.pop(name) for name in names})
            return fn(**kwargs, **{arg: values})

        params = own + extra
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must read our signature, not the body's
        return command

    return decorate


SelectOpt = Annotated[
    Optional[list[str]],
    typer.Option("--select", help="Apply only these: action numbers from the plan, each with the fingerprint the plan prints beside it "
                                  "(3=892fb5f8; needed with --yes, refused if the plan changed since), or action kinds "
                                  "(repeatable, comma-separated)."),
]
ResolveOpt = Annotated[Optional[str], typer.Option("--resolve", help="Apply conflicts with this policy: newer | keep-both.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation (needed off a terminal).")]


# --- options into Settings ---------------------------------------------------------------


def parse_now(value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--now must be a date like 2026-11-29, not {value!r}") from None


# Settings an option sets, and the option's name for an error about its value.
_OVERRIDES = {
    "layout": ("layout", "--layout"), "model": ("llm.model", "--model"), "api_base": ("llm.api_base", "--api-base"),
    "llm_mode": ("llm.mode", "--llm-mode"), "cache_dir": ("llm.cache_dir", "--cache-dir"),
    "max_calls": ("llm.max_calls", "--max-calls"), "max_cost": ("llm.max_cost", "--max-cost"),
    "max_retire": ("max_retire_fraction", "--max-retire"),
}


def make_settings(opts: Options, store: str | None = None):
    """(Settings, the config file used or None) from a command's options and the store it names."""
    if opts.repo is not None and not os.path.isdir(opts.repo):
        raise UsageError(f"--repo is not a directory: {opts.repo}")
    overrides: dict[str, Any] = {dotted: getattr(opts, name) for name, (dotted, _) in _OVERRIDES.items()}
    overrides.update({
        "now": parse_now(opts.now),
        "repo": os.path.abspath(opts.repo) if opts.repo else None,
        "llm.no_cache": opts.no_cache or None,
        "llm.trust_model": opts.trust_model or None,
    })
    used = find_config(opts.config, store if store is not None and os.path.isdir(store) else None)
    flags = {dotted: flag for dotted, flag in _OVERRIDES.values()} | {"now": "--now"}
    return build_settings(load_user_config(used, store), overrides, flags, source=used), used
