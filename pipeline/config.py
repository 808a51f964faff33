"""All configuration, with every default in this one file.

`Settings` is the one typed object the pipeline reads. Its store sections are filled verbatim from
the store's own config where the store has one (crux: `.crux/crux-memories.json`; bank:
`memory-consolidate.json` with iii's field names); the user's `--config FILE` (TOML or JSON) and the
command line override the rest.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .errors import ConfigError
from .provider_defaults import defaults_for


# memconsolidate's own folder in a store: journals, the signing key, the lock (pipeline/lock.py).
STATE_DIR = ".memconsolidate"


# --------------------------------------------------------------------------------------------
# Ranges. Every number a config or the command line may set has one (tests/test_config_ranges.py
# fails for a numeric field without it), so an impossible value is a config error naming its key
# (exit 2) instead of a crash in some later computation: a date before year 1, a timeout the clock
# cannot hold. The upper bounds are far beyond any real use, and small enough that no date, duration
# or size computed from them overflows; floats must be finite (TOML and JSON both spell inf and nan).

MAX_DAYS = 36_500  # a century: more than any memory's age, and `now - MAX_DAYS` is in the calendar
MAX_HOURS = MAX_DAYS * 24
MAX_COUNT = 1_000_000  # calls, pairs, references, thresholds, runs kept
MAX_BYTES = 1 << 30  # 1 GiB, and sizes in lines or tokens

# `now` (--now, or a config's `now`): from the Unix epoch (every file time is after it) to a date a
# good way before the calendar's end, so `now` plus or minus any bounded number of days is a date.
EARLIEST_NOW = dt.date(1970, 1, 1)
LATEST_NOW = dt.date(8999, 12, 31)


def days(default: int) -> Any:
    """A number of days (ages, windows, guards): 0 to a century."""
    return Field(default, ge=0, le=MAX_DAYS)


def count(default: int | None, least: int = 0) -> Any:
    """A count or a threshold: `least` (0 unless said) to MAX_COUNT."""
    return Field(default, ge=least, le=MAX_COUNT)


def size(default: int) -> Any:
    """A size in bytes (or lines, or tokens, as a crux store's sizeUnit says): 1 to 1 GiB."""
    return Field(default, ge=1, le=MAX_BYTES)


def hours(default: float) -> Any:
    """An interval in hours: above 0, at most a century, finite."""
    return Field(default, gt=0, le=MAX_HOURS, allow_inf_nan=False)


# --------------------------------------------------------------------------------------------
# crux: defaults per DESIGN.md "CRUX defaults when the config omits them"


class TypeTransition(BaseModel):
    promoteAt: int | None = count(None)
    promoteTo: str | None = None


def _default_transitions() -> dict[str, TypeTransition]:
    return {
        "idea": TypeTransition(promoteAt=5, promoteTo="learning"),
        "learning": TypeTransition(promoteAt=15, promoteTo="core"),
        "redflag": TypeTransition(promoteAt=10, promoteTo="core"),
        "core": TypeTransition(),
        "goal": TypeTransition(),
    }


def store_relative(value: str) -> str:
    """A path inside the store, POSIX-style; refused (a ValueError) when absolute, with a drive letter,
    going up (`..`) or into memconsolidate's state folder: a setting naming a folder or file, from
    the store's own config or any other, must never lead a reader or a writer out of the store."""
    text = value.strip().replace("\\", "/")
    p = PurePosixPath(text)
    if not text or p.is_absolute() or ".." in p.parts or re.match(r"^[A-Za-z]:", text) or p.parts[:1] == (STATE_DIR,):
        raise PydanticCustomError("store_path", "must be a path inside the store, not {value}", {"value": repr(value)})
    return p.as_posix()


StorePath = Annotated[str, AfterValidator(store_relative)]


class CruxStorage(BaseModel):
    memoriesDir: StorePath = "memories"
    agentMemoriesDir: StorePath = "memories/agents"
    archiveDir: StorePath = ".ai-ignored/executed"
    compressionSourceArchive: StorePath = ".ai-ignored/memories/sources"
    indexFile: StorePath = ".crux/memory-index.yml"

    @model_validator(mode="after")
    def _index_is_an_index(self) -> CruxStorage:
        # The index is rewritten whole: naming the store's config, a memory or an archive would
        # replace that file with the index.
        index = PurePosixPath(self.indexFile)
        if index.suffix not in (".yml", ".yaml"):
            raise PydanticCustomError("index_file", "indexFile must be a .yml file, not {value}", {"value": repr(self.indexFile)})
        for name in ("memoriesDir", "agentMemoriesDir", "archiveDir", "compressionSourceArchive"):
            if getattr(self, name) != "." and index.is_relative_to(getattr(self, name)):  # "." is the store
                raise PydanticCustomError("index_file", "indexFile {value} lies inside {name} ({folder})",
                                          {"value": repr(self.indexFile), "name": name, "folder": repr(getattr(self, name))})
        return self


class CruxConfig(BaseModel):
    """`cruxMemories` of `.crux/crux-memories.json`, field names as the file spells them."""

    model_config = ConfigDict(extra="ignore")

    enableMemories: bool = True
    enableMemoryCompression: bool = False
    enableMemoryConsolidation: bool = False
    storage: CruxStorage = Field(default_factory=CruxStorage)
    trackingDir: StorePath = ".crux/reference-tracking"
    typePriority: list[str] = Field(
        default_factory=lambda: ["core", "redflag", "goal", "learning", "idea", "archived"]
    )
    typeTransitions: dict[str, TypeTransition] = Field(default_factory=_default_transitions)
    demoteAfterDaysUnreferenced: int = days(90)
    archiveAfterDaysUnreferenced: int = days(180)
    promotionToRuleThreshold: int = count(30)
    maxReferencesStored: int = count(10)
    sizeUnit: Literal["lines", "bytes", "tokens"] = "lines"
    compressionMinLines: int = Field(500, ge=0, le=MAX_BYTES)
    maxMemorySize: int = size(1000)
    maxConsolidatedSize: int = size(2000)
    compressionTarget: int = Field(33, ge=0, le=100)  # percent of the original


# --------------------------------------------------------------------------------------------
# claude (dream), zylos, bank (iii)


class ClaudeConfig(BaseModel):
    prune_guard_days: int = days(14)  # dream's GUARD_DAYS
    consult_window_days: int = days(14)  # dream's consult-gate window, which its own code forgets to apply
    consult_log: str = ".claude/logs/memory-consult.jsonl"
    # MEMORY.md target: 17 KB (seed 001), headroom below what Claude Code loads; the hooks a rebuild
    # writes are kept within it, the author's are not cut for it
    index_budget_bytes: int = size(17 * 1024)
    # what Claude Code loads of MEMORY.md (seed 001: "~24 KB"; its docs: 25KB): only an index that
    # would pass it has its hand-written hooks trimmed
    index_load_bytes: int = size(24 * 1024)
    index_min_hook_chars: int = count(90)  # below this, trimming stops and the user is warned


class ZylosConfig(BaseModel):
    core_budget_bytes: int = size(16 * 1024)  # identity.md, state.md, references.md
    state_warn_bytes: int = size(10 * 1024)
    references_warn_bytes: int = size(8 * 1024)
    profile_warn_bytes: int = size(1024)  # users/<id>/profile.md: "over ~1KB: summarize older notes"
    freshness_active_days: int = days(7)
    freshness_aging_days: int = days(30)
    freshness_fading_days: int = days(90)
    session_archive_days: int = days(30)
    # importance 1-2 never suggested for archival; zylos ranks 1 (critical) to 5 (minor), 0: none immune
    immune_importance_max: int = Field(2, ge=0, le=5)


class BankConfig(BaseModel):
    """iii memory-consolidate's configuration, same field names."""

    model_config = ConfigDict(extra="ignore")

    enabled: bool = True
    interval_hours: float = hours(24)
    dry_run: bool = False
    banks: list[str] = Field(default_factory=list)  # allowlist; empty = all
    max_supersedes_per_run: int = count(200)
    llm_assist_enabled: bool = True
    promote_corroboration_threshold: int = count(4)
    rule_candidates_max: int = count(20)


class LLMConfig(BaseModel):
    model: str = Field("stub", min_length=1)
    api_base: str | None = None
    mode: Literal["tools", "json", "json_schema", "md_json"] | None = None  # None: per provider
    cache_dir: str | None = None
    no_cache: bool = False
    max_calls: int | None = count(None)
    max_cost: float | None = Field(None, ge=0, le=1_000_000, allow_inf_nan=False)  # USD
    # Unset (None): per provider, local servers differ from hosted ones (pipeline/provider_defaults.py).
    # A call's timeout is timeout_s plus timeout_per_1k_chars_s for every 1,000 characters it sends.
    timeout_s: float | None = Field(default=None, gt=0, le=24 * 3600, allow_inf_nan=False)
    timeout_per_1k_chars_s: float | None = Field(default=None, ge=0, le=3600, allow_inf_nan=False)
    max_attempts: int = Field(3, ge=1, le=100)  # transient-error attempts (tenacity)
    max_reasks: int = Field(1, ge=0, le=100)  # schema-invalid replies re-asked (instructor)
    strict: bool = False  # instructor's strict validation; lenient is kinder to small local models
    concurrency: int | None = Field(default=None, ge=1, le=256)  # requests in flight
    batch_size: int | None = Field(default=None, ge=1, le=1000)
    temperature: float = Field(default=0.0, ge=0, le=2, allow_inf_nan=False)  # 0: the cached reply is the model's likeliest
    max_tokens: int | None = count(None, least=1)  # per call; unset: per provider
    prompt_set: str | None = None  # "local": prompts/<stage>.local.md where present; unset: per provider
    # What the conflicts stage (pairs: the strongest half and a window of the others that turns with the
    # run's date, rules/pair_windows.py) and the metadata stage (groups) may ask about in one run. The
    # reorder stage asks about all its pairs: its merges decide which pairs the conflicts stage finds.
    max_pairs_per_stage: int = count(400)
    # A model's "same meaning" verdict retires a memory whose text differs only when trusted;
    # otherwise the merge waits for the user (the stub, the tool's own heuristic, is not asked).
    trust_model: bool = False

    @model_validator(mode="after")
    def _provider_defaults(self) -> "LLMConfig":
        chosen = defaults_for(self.model, self.api_base)
        for name in ("timeout_s", "timeout_per_1k_chars_s", "concurrency", "batch_size", "max_tokens", "prompt_set"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(chosen, name))
        return self


class ScheduleConfig(BaseModel):
    interval_hours: float = hours(24)
    # iii's slack: a run is due a little early, so an hourly heartbeat does not drift a day late.
    slack_minutes: float = Field(30, ge=0, le=7 * 24 * 60, allow_inf_nan=False)

    def wait(self) -> dt.timedelta:
        """How long after a successful run the next is due: the interval less the slack, never less
        than nothing (a slack longer than the interval makes every run due, and a time taken back
        from a recorded run at the calendar's start would fall off it)."""
        return max(dt.timedelta(hours=self.interval_hours) - dt.timedelta(minutes=self.slack_minutes), dt.timedelta(0))


class JournalConfig(BaseModel):
    # Applied runs whose journals (and before-images) are kept for undo; older ones are pruned
    # after each successful apply.
    keep_runs: int = count(20, least=1)


class Settings(BaseModel):
    now: dt.date = Field(default_factory=dt.date.today)
    layout: str = "auto"  # "auto" or a registered layout's name
    repo: str | None = None
    crux: CruxConfig = Field(default_factory=CruxConfig)
    claude: ClaudeConfig = Field(default_factory=ClaudeConfig)
    zylos: ZylosConfig = Field(default_factory=ZylosConfig)
    bank: BankConfig = Field(default_factory=BankConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    journal: JournalConfig = Field(default_factory=JournalConfig)
    # Size above which a memory file is not read (reported as parse_error instead); at least 1 KiB,
    # else no memory is read at all.
    max_file_bytes: int = Field(4 * 1024 * 1024, ge=1024, le=MAX_BYTES)
    # The blast-radius cap: one run retires (archives, prunes, merges away) at most this fraction of
    # a store's live memories; the rest are reported `capped` and wait for the next run.
    max_retire_fraction: float = Field(default=0.25, ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("now")
    @classmethod
    def _now_in_range(cls, value: dt.date) -> dt.date:
        if not EARLIEST_NOW <= value <= LATEST_NOW:
            raise PydanticCustomError("now_range", "must be a date from {earliest} to {latest}, not {value}",
                                      {"earliest": EARLIEST_NOW.isoformat(), "latest": LATEST_NOW.isoformat(), "value": value.isoformat()})
        return value

    @field_validator("layout", mode="before")
    @classmethod
    def _registered_layout(cls, value: Any) -> Any:
        # Imported here: the registry sits above config (its layouts read Settings). The error reads
        # as pydantic's own for a Literal, so a wrong --layout is reported as it always was.
        from .layouts.registry import names

        allowed = ["auto", *names()]
        if value not in allowed:
            expected = ", ".join(repr(n) for n in allowed[:-1]) + f" or {allowed[-1]!r}"
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value


PROJECT_CONFIG = ".memconsolidate.toml"  # a store's own settings for memconsolidate
# Settings a config found inside the store may not make, with what they would choose and the option
# that sets them instead: the store's files are not trusted to send its memories to another server,
# to choose where the reply cache is written, or to name what is read outside the store (a cloned
# store's config naming ~/.ssh as its repository or a consult log).
STORE_CONFIG_FORBIDS: dict[str, tuple[str, str | None]] = {
    "llm.api_base": ("where its memories are sent", "--api-base"),
    "llm.cache_dir": ("where replies are written", "--cache-dir"),
    "repo": ("which folder is read as the repository", "--repo"),
    "claude.consult_log": ("which file is read as the consult log", None),
}


def sets(data: dict[str, Any], dotted: str) -> bool:
    """Whether a config's nested tables set `dotted` ("llm.api_base", "repo")."""
    *sections, key = dotted.split(".")
    node: Any = data
    for section in sections:
        node = node.get(section) if isinstance(node, dict) else None
    return isinstance(node, dict) and key in node


def unknown_key(model: type[BaseModel], data: dict[str, Any], prefix: str) -> str | None:
    """The first key of `data` (dotted) that `model` has no field for, looking into sub-sections."""
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            known = ", ".join(sorted(model.model_fields))
            return f"{prefix}{key} (known: {known})"
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(value, dict):
            found = unknown_key(sub, value, f"{prefix}{key}.")
            if found:
                return found
    return None


# Settings the environment gives, by the variable that gives them.
_ENVIRONMENT = {"llm.model": "MEMCONSOLIDATE_MODEL", "llm.cache_dir": "MEMCONSOLIDATE_CACHE_DIR"}


def build_settings(user: dict[str, Any], overrides: dict[str, Any], flags: dict[str, str] | None = None,
                   source: Path | None = None) -> Settings:
    """Settings from the user's config file, the environment and the command line, in that order.

    `flags` names the command-line option of an override ("llm.max_calls": "--max-calls"), so an
    impossible value given there is reported by the option the user typed; `source` is the config
    file `user` was read from, named in an error about a value it gave (a nightly run's log then
    says which of the files that could apply is wrong)."""
    data: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in user.items()}
    elsewhere: set[str] = set()  # the settings the environment or an option gives, not the config file
    for dotted, variable in _ENVIRONMENT.items():
        if value := os.environ.get(variable):
            _set(data, dotted, value)
            elsewhere.add(dotted)
    for dotted, value in overrides.items():
        if value is not None:
            _set(data, dotted, value)
            elsewhere.add(dotted)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        if flags and where in flags and overrides.get(where) is not None:
            raise ConfigError(f"invalid {flags[where]}: {first['msg']}") from None
        if source is not None and where not in elsewhere and _from_file(user, [str(x) for x in first["loc"]]):
            raise ConfigError(f"invalid setting {where}: {first['msg']} (in config {source})") from None
        raise ConfigError(f"invalid setting {where}: {first['msg']}") from None


def _from_file(user: dict[str, Any], loc: list[str]) -> bool:
    """Whether the config file gave the value an error is about: it sets `loc` or a table or list
    holding it (`crux.typePriority.0`: an item of a list it sets)."""
    return any(sets(user, ".".join(loc[:end])) for end in range(len(loc), 0, -1))


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    section, _, key = dotted.rpartition(".")
    (data.setdefault(section, {}) if section else data)[key] = value
