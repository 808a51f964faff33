"""Actions and findings, with the data each kind carries typed per kind.

`Action` and `Finding` are the bases: the fields every kind has. A kind that carries more (an
archive's destination, a consolidation's new files, an edit's replacements) has its own subclass
with `kind` fixed to a `Literal`, and `AnyAction` / `AnyFinding` are the discriminated unions a
reader of a saved plan parses through: `{"kind": "archive", ...}` becomes an `ArchiveAction`, a
misspelled field fails at construction (`extra="forbid"`), and a kind without data stays a plain
`Action`. Callers keep `list[Action]`: every payload class is an `Action`, and narrowing with
`isinstance` is what gives typed access to the payload.

The plan JSON is the contract (DESIGN.md): pydantic dumps the base fields first, then the
subclass's in declaration order, so each class declares its fields in the order the plan has
always shown them; `flagged`, which any stage proposal may gain last, is kept last by a serializer.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, model_serializer
from pydantic import SerializerFunctionWrapHandler, ValidatorFunctionWrapHandler, WrapValidator
from typing_extensions import TypedDict

from .kinds import ActionKind, FindingKind

A = ActionKind
F = FindingKind
_FORBID = ConfigDict(extra="forbid")


# --- the shapes inside payloads (dicts in the JSON, checked on the way in) -------------------


class Replacement(TypedDict):
    """One in-place edit of a field's text: `before` at start-end becomes `after`."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    field: str
    start: int
    end: int
    before: str
    after: str


class Phrase(TypedDict):
    """A relative or vague time phrase left as written, and why."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    field: str
    start: int
    end: int
    phrase: str
    why: str


class MovedRef(TypedDict):
    """A reference whose file moved in the repository's history: `ref` is now at `to`."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    ref: str
    to: str


class SameNameRef(TypedDict):
    """A reference to a deleted file git recorded no rename of, and the one file of the same name
    elsewhere today (`at`): a lead for the user, not a move."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    ref: str
    at: str


class Output(TypedDict):
    """A file a stage writes: its path, front matter and body, and its size in the store's unit."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    path: str
    frontmatter: dict[str, Any]
    body: str
    size: int | float


# --- actions --------------------------------------------------------------------------------

class WholeRead(NamedTuple):
    """A file as a plan read it, which its action takes whole (`Action.takes_appended_lines`): its
    key, the sha256 of the bytes read and how many they were."""

    key: str
    sha: str
    length: int


FINGERPRINT_LENGTH = 8  # hex digits: 32 bits, short enough to type, far from a chance match


def _fingerprint_of(shown: dict[str, Any]) -> str:
    """The code the plan shows beside an action's number, so that `apply --select N=CODE` applies
    the action the user reviewed or nothing: a hash of all the action (`shown`, as the plan JSON
    has it) carries, kind, targets, `target_hashes`, survivor, the text it writes, but its reason,
    prose that may count days or describe other actions. The same change of the same content has
    the same code in every plan; another action, or one whose target's content changed, another."""
    carried = {k: v for k, v in shown.items() if k != "reason"}
    canonical = json.dumps(carried, sort_keys=True, ensure_ascii=True, separators=(",", ":"))  # ASCII: lone surrogates too
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:FINGERPRINT_LENGTH]


class Action(BaseModel):
    """A change the plan proposes. `apply` executes the ones with `needs_user: false`."""

    model_config = ConfigDict(extra="forbid")

    kind: ActionKind
    targets: list[str]
    reason: str
    source: str = "deterministic"
    needs_user: bool = False
    survivor: str | None = None
    from_type: str | None = None
    to_type: str | None = None
    # What the plan judged: sha256 by key (file path, or `<bank>/<id>`) of the targets' content as
    # read (`absent`: an index that was not there), of the files `judged_with` names, and of what the
    # layout says applying it builds on (`Layout.depends_on`: claude's indexes; a folder's listing,
    # keyed `<folder>/`, for a rebuild). A writer skips the action ("changed since the plan") when one
    # no longer matches.
    target_hashes: dict[str, str] | None = None
    # A stage proposal whose text holds a prompt-injection phrase: the phrase (it needs the user).
    flagged: str | None = None

    @model_serializer(mode="wrap")
    def _flagged_last(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The flag is added after the stage wrote its payload, and the plan has always shown it last.
        out: dict[str, Any] = handler(self)
        if "flagged" in out:
            out["flagged"] = out.pop("flagged")
        return out

    def judged_with(self) -> list[str]:
        """Files besides the targets whose content the plan's judgement of this action rests on:
        each one's own hash goes into `target_hashes` beside the targets'."""
        return []

    def takes_appended_lines(self) -> WholeRead | None:
        """The one target file this action takes whole, with whatever lines were appended to it after
        the plan read it (they go along), as the plan read it; or None. The fingerprint covers that
        read (its sha256 in `target_hashes`, its length in a field of the kind's); apply holds the
        action unchanged while the file is those bytes followed by whole lines
        (`storage.since_plan.lines_added`)."""
        return None

    def as_read(self, whole: WholeRead) -> Action:
        """This action as a plan would have made it on the file `takes_appended_lines` names read as
        `whole` (other bytes of it), all else as it is."""
        return self.model_copy(update={"target_hashes": {**(self.target_hashes or {}), whole.key: whole.sha}})

    def plan_json(self) -> dict[str, Any]:
        """The action as the plan JSON shows it: no empty optional field, and last its
        `fingerprint`, the one computation of it (`_fingerprint_of`)."""
        shown = {k: v for k, v in self.model_dump(mode="json", by_alias=True).items() if v is not None}
        return {**shown, "fingerprint": _fingerprint_of(shown)}

    def fingerprint(self) -> str:
        """A short code for the change this action makes: see `_fingerprint_of`."""
        return str(self.plan_json()["fingerprint"])


class MergeDuplicateAction(Action):
    """The survivor stays, every other target is retired, except the `kept` ones.

    Both are decided at plan time: a memory the reader marks protected (zylos importance 1-2) is
    never retired by a merge, so when the text rules' survivor is not protected the first protected
    member survives in its place (`survivor_instead_of` names the one it replaced) and further
    protected members are `kept`.
    """

    kind: Literal[A.MERGE_DUPLICATE] = A.MERGE_DUPLICATE
    kept: list[str] | None = None
    survivor_instead_of: str | None = None
    # claude: when a prune of the same plan archives the survivor, the members that may survive in
    # its place, in order (the staleness pass keeps them); none: every member is archived.
    handover: list[str] | None = None


class MoveAction(Action):
    """A crux type move (promote, demote, archive): where the file and its twin go."""

    title: str | None = None
    to_path: str | None = None
    twin_to_path: str | None = None


class PromoteAction(MoveAction):
    kind: Literal[A.PROMOTE] = A.PROMOTE


class DemoteAction(MoveAction):
    kind: Literal[A.DEMOTE] = A.DEMOTE


class ArchiveAction(MoveAction):
    kind: Literal[A.ARCHIVE] = A.ARCHIVE
    # crux: the live consolidated memory that already holds this member (its `consolidated_from`
    # names it): the member is archived as the consolidation would have, not moved to a type folder.
    consolidated_into: str | None = None
    # zylos: the entry's file and its line span as read.
    file: str | None = None
    lines: list[int | None] | None = None

    def judged_with(self) -> list[str]:
        # Archived as already held: only while the consolidated memory still lists it as read.
        return [self.consolidated_into] if self.consolidated_into else []


class PruneStaleAction(Action):
    kind: Literal[A.PRUNE_STALE] = A.PRUNE_STALE
    needs_user_reason: str | None = None
    missing: list[str] | None = None


class ConflictAction(Action):
    kind: Literal[A.CONFLICT] = A.CONFLICT
    clauses: list[str] | None = None
    conflict_kind: str | None = None
    resolution_options: list[str] | None = None
    # claude: the side `--resolve newer` keeps when a file's modification time dates a side (it has
    # no front-matter date). No hash covers a file time: recorded here, the fingerprint covers it,
    # and apply archives the other side only while the file times still say so.
    newer: str | None = None


class ConsolidateAction(Action):
    kind: Literal[A.CONSOLIDATE] = A.CONSOLIDATE
    fallback: bool | None = None
    outputs: list[Output] = Field(default_factory=list)
    topic: str | None = None
    volumes: int | None = None
    # Set by the split judge when it regrouped the volumes (or kept the greedy cut: fallback).
    split_source: str | None = None
    split_fallback: bool | None = None


class RebalanceVolumesAction(Action):
    kind: Literal[A.REBALANCE_VOLUMES] = A.REBALANCE_VOLUMES
    topic: str | None = None
    volumes: int | None = None
    fallback: bool | None = None
    outputs: list[Output] = Field(default_factory=list)
    split_source: str | None = None
    split_fallback: bool | None = None


class CompressAction(Action):
    kind: Literal[A.COMPRESS] = A.COMPRESS
    outputs: list[Output] = Field(default_factory=list)


class SyncStrengthAction(Action):
    kind: Literal[A.SYNC_STRENGTH] = A.SYNC_STRENGTH
    strength: int | None = None
    tracker_strength: int | None = None


class PromoteRuleAction(Action):
    kind: Literal[A.PROMOTE_RULE] = A.PROMOTE_RULE
    rule: str | None = None  # the one-line rule the rules judge wrote
    title: str | None = None  # crux: the memory's title and how often it was referenced
    references: int | None = None


class RotateSessionAction(Action):
    """zylos: `sessions/current.md` moves to `rotate_to` and a fresh log starts. The agent appends to
    that log all day: lines it appended after the plan move with the rest (the file is renamed)."""

    kind: Literal[A.ROTATE_SESSION] = A.ROTATE_SESSION
    rotate_to: str | None = None
    # How many bytes of the log the plan read: those whose sha256 is its `target_hashes` entry. What
    # follows them on disk at apply time is what the agent appended since (one place to look, where
    # the sha alone left every line boundary of the log to try); covered by the fingerprint.
    read_bytes: int | None = Field(default=None, ge=0)

    def takes_appended_lines(self) -> WholeRead | None:
        key = self.targets[0] if len(self.targets) == 1 else None
        sha = (self.target_hashes or {}).get(key) if key else None
        if key is None or sha is None or self.read_bytes is None:
            return None  # nothing to tell the bytes read from lines added: the log must be as read
        return WholeRead(key, sha, self.read_bytes)

    def as_read(self, whole: WholeRead) -> Action:
        return super().as_read(whole).model_copy(update={"read_bytes": whole.length})


class AbsolutizeDatesAction(Action):
    kind: Literal[A.ABSOLUTIZE_DATES] = A.ABSOLUTIZE_DATES
    written: str | None = None
    date_source: str | None = None
    replacements: list[Replacement] = Field(default_factory=list)


class UpdateRefAction(Action):
    kind: Literal[A.UPDATE_REF] = A.UPDATE_REF
    replacements: list[Replacement] = Field(default_factory=list)
    moved: list[MovedRef] | None = None
    same_name: list[SameNameRef] | None = None


# The payload class of each kind that has one; the other kinds are plain `Action`s.
ACTION_TYPES: dict[ActionKind, type[Action]] = {
    A.MERGE_DUPLICATE: MergeDuplicateAction,
    A.PROMOTE: PromoteAction,
    A.DEMOTE: DemoteAction,
    A.ARCHIVE: ArchiveAction,
    A.PRUNE_STALE: PruneStaleAction,
    A.CONFLICT: ConflictAction,
    A.CONSOLIDATE: ConsolidateAction,
    A.REBALANCE_VOLUMES: RebalanceVolumesAction,
    A.COMPRESS: CompressAction,
    A.SYNC_STRENGTH: SyncStrengthAction,
    A.PROMOTE_RULE: PromoteRuleAction,
    A.ROTATE_SESSION: RotateSessionAction,
    A.ABSOLUTIZE_DATES: AbsolutizeDatesAction,
    A.UPDATE_REF: UpdateRefAction,
}


def outputs_of(a: Action) -> list[Output]:
    """The files an action writes (consolidate, rebalance_volumes, compress); [] for the others."""
    return a.outputs if isinstance(a, (ConsolidateAction, RebalanceVolumesAction, CompressAction)) else []


# --- findings -------------------------------------------------------------------------------


class Finding(BaseModel):
    """Something worth telling the user that the plan does not change by itself."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    kind: FindingKind
    targets: list[str]
    reason: str
    class_: str | None = Field(default=None, alias="class")
    source: str = "deterministic"


class StaleFinding(Finding):
    kind: Literal[F.STALE] = F.STALE
    missing: list[str] | None = None
    unverifiable: list[str] | None = None
    kept_reason: str | None = None
    moved: list[MovedRef] | None = None
    same_name: list[SameNameRef] | None = None


class BudgetFinding(Finding):
    """Over or near a size budget: claude's index (size, budget or lines, max_lines), zylos' files (bytes)."""

    kind: Literal[F.OVER_BUDGET, F.NEAR_BUDGET]
    size: int | None = None
    budget: int | None = None
    lines: int | None = None
    max_lines: int | None = None
    size_bytes: int | None = None
    budget_bytes: int | None = None
    warn_bytes: int | None = None


class FreshnessFinding(Finding):
    kind: Literal[F.FRESHNESS] = F.FRESHNESS
    age_days: int | None = None
    kept: list[str] | None = None  # entries immune to age-based archival (importance)


class RelativeDateFinding(Finding):
    kind: Literal[F.RELATIVE_DATE] = F.RELATIVE_DATE
    written: str | None = None
    replacements: list[Replacement] | None = None
    phrases: list[Phrase] | None = None


class CappedFinding(Finding):
    kind: Literal[F.CAPPED] = F.CAPPED
    retire_budget: int | None = None


FINDING_TYPES: dict[FindingKind, type[Finding]] = {
    F.STALE: StaleFinding,
    F.OVER_BUDGET: BudgetFinding,
    F.NEAR_BUDGET: BudgetFinding,
    F.FRESHNESS: FreshnessFinding,
    F.RELATIVE_DATE: RelativeDateFinding,
    F.CAPPED: CappedFinding,
}


# --- the unions a plan is read through ------------------------------------------------------


def _tag(types: dict[Any, type[BaseModel]], base: type[BaseModel]):
    def tag(value: Any) -> str:
        # An object already built keeps its class (a plain `Action` of a payload kind, as tests and
        # hand-made plans build, is still an `Action`); a dict is parsed by its kind.
        if isinstance(value, BaseModel):
            return str(value.kind) if type(value) is not base and type(value) in types.values() else "base"  # type: ignore[attr-defined]
        kind = value.get("kind") if isinstance(value, dict) else None
        return str(kind) if kind in types else "base"

    return tag


def _fingerprint_checked(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A saved action's `fingerprint` is derived, not a field: it is taken off before the action is
    parsed and must be the fingerprint of what the action holds (an action edited since the plan
    printed it is refused, never read as the one that was reviewed)."""
    if not isinstance(value, dict) or "fingerprint" not in value:
        return handler(value)
    action = handler({k: v for k, v in value.items() if k != "fingerprint"})
    if value["fingerprint"] != action.fingerprint():
        raise ValueError(f"fingerprint {value['fingerprint']!r} is not that of what the action holds ({action.fingerprint()})")
    return action


if TYPE_CHECKING:
    AnyAction = Action
    AnyFinding = Finding
else:
    AnyAction = Annotated[
        Union[tuple(Annotated[cls, Tag(str(kind))] for kind, cls in ACTION_TYPES.items()) + (Annotated[Action, Tag("base")],)],
        Discriminator(_tag(ACTION_TYPES, Action)),
        WrapValidator(_fingerprint_checked),
    ]
    AnyFinding = Annotated[
        Union[tuple(Annotated[cls, Tag(str(kind))] for kind, cls in FINDING_TYPES.items()) + (Annotated[Finding, Tag("base")],)],
        Discriminator(_tag(FINDING_TYPES, Finding)),
    ]


def parse_action(data: Any) -> Action:
    """A saved plan's action (its JSON object) as its kind's class; ValidationError on a bad field
    or a `fingerprint` that is not the action's."""
    return _ACTION_ADAPTER.validate_python(data)


def parse_finding(data: Any) -> Finding:
    return _FINDING_ADAPTER.validate_python(data)


_ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(AnyAction)
_FINDING_ADAPTER: TypeAdapter[Finding] = TypeAdapter(AnyFinding)
