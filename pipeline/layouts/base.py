"""What the core asks of a memory-store layout: the `Layout` protocol, and `BaseLayout` defaults.

A layout is one object, the `LAYOUT` of its package (built-ins) or of a third-party module named by
an entry point (see `registry.py`). The core never names a layout: it asks the registry for the
object and reads what the object declares. Adding a layout therefore touches no core file.

Imports of the core's types are for type checking only: this module sits below everything that
uses it (the registry, the plan, apply).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from ..model import file_of

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..changes import ChangeSet
    from ..config import Settings
    from ..model import Action, Corpus, Finding, Memory
    from ..rules.outcome import Outcome

REPORTS_DIR = ".memconsolidate/reports/"


@runtime_checkable
class Layout(Protocol):
    """One store layout: how to recognise it, read it, judge it and write a plan into it."""

    name: str  # the `--layout` value and the plan's `layout`
    markers: str  # what `detect` looks for, for the "no recognisable memory store" message
    # Markers so common (a MEMORY.md) that every other layout is tried first, third-party ones too.
    catch_all: bool

    # Read-only (properties), so a layout may declare them as plain class attributes of a narrower
    # type (`config_model = CruxConfig`).
    @property
    def config_model(self) -> type[BaseModel] | None:
        """The model of its Settings section (`Settings.<name>`), or None when it has no settings."""
        ...

    @property
    def consolidation_style(self) -> str | None:
        """The shape of `consolidate` actions its writer applies ("crux": typed folders and trackers;
        "claude": a topic file in the members' folder); None when it does not consolidate."""
        ...
    # A judged standing rule is applied without asking (bank's auto-managed learned.md).
    automatic_rule_promotion: bool
    # Staleness is checked even without `--repo`: its memories name their own repository.
    staleness_without_repo: bool
    # A memory without front matter is EVERGREEN: its refs cannot be tied to metadata.
    evergreen_without_frontmatter: bool
    # Its memories link each other as `[[name]]` (front-matter name or file name): the plan reports
    # links its retirements leave dangling and proposes relinks (rules/dangling_links.py).
    links_by_name: bool

    def detect(self, root: Path) -> bool:
        """Does this folder look like a store of this layout?"""
        ...

    def configure(self, root: Path, settings: Settings) -> Settings:
        """Settings with the store's own config read in (ConfigError when it is unusable)."""
        ...

    def load(self, root: Path, settings: Settings) -> Corpus:
        """Every memory, without writing; unreadable files become parse_error findings.

        Each memory carries `read_shas` (the sha256 of what it was built from, by key), each index
        file its state as read (`Corpus.index_shas`): the plan drops, and reports, any action on a
        memory without them."""
        ...

    def rules(self, corpus: Corpus, settings: Settings) -> Outcome:
        """The layout's own deterministic rules (the shared ones run for every layout)."""
        ...

    def guard(self, outcome: Outcome, settings: Settings) -> Outcome:
        """The last word over every proposal, whichever pass made it (bank's supersede cap)."""
        ...

    def is_archived(self, m: Memory) -> bool:
        """Whether the memory is archived, not live: the retirement cap counts only live memories
        (crux: typed `archived` or in the `archived` type folder)."""
        ...

    def before_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        """The actions, less those its apply would skip every time whatever else the plan holds
        (claude: a memory it never moves, an index it never edits): the retirement cap counts only
        what is left, so no memory waits for a slot such an action took; it runs before `reconcile`,
        so no such action claims a memory and drops a weaker one. `live`: as for `after_cap`."""
        ...

    def retire_first(self, corpus: Corpus, settings: Settings) -> Callable[[Action], Any] | None:
        """Which of the actions of one kind the retirement cap lets through first, as a sort key (the
        least valued first: crux, its lowest type and longest unreferenced); None: the plan's order."""
        ...

    def after_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        """The actions the retirement cap kept, less those the layout would not apply beside the
        others (crux: a leftover member's archive whose consolidated memory another action takes
        away). `live`: the keys of the memories not archived (`is_archived`), as the cap counts them."""
        ...

    def depends_on(self, corpus: Corpus, action: Action) -> list[str]:
        """The keys besides its targets whose state what applying `action` writes is built on (claude:
        the MEMORY.md and sub-indexes an archive edits; the folder's listing a rebuild indexes): the
        plan adds their states, as read (`Corpus.index_shas`, a memory's `read_shas`), to its
        `target_hashes`, so its fingerprint covers them and apply skips it once one changed."""
        ...

    def explain(self, corpus: Corpus, actions: list[Action], settings: Settings) -> list[Action]:
        """The plan's final actions, their reasons completed with what only the layout's writer knows
        applying them will do (claude: hooks a MEMORY.md rebuild shortens, lines past what is loaded)."""
        ...

    def stages(self, settings: Settings) -> frozenset[str]:
        """Wire names of the layout-specific LLM stages that apply: metadata, split, compress, rules."""
        ...

    def rule_candidate_cap(self, settings: Settings) -> int | None:
        """At most this many rule candidates, strongest first, go to the rules stage; None: all."""
        ...

    def memory_file(self, m: Memory) -> str:
        """The store-relative file holding a memory's text (never scanned as repository code)."""
        ...

    def run_report(self, touched: list[str]) -> str | None:
        """Which of the sorted markdown files an apply touched is its run report."""
        ...

    def changes(
        self,
        corpus: Corpus,
        actions: list[Action],
        settings: Settings,
        run_id: str,
        resolve: str | None,
        findings: list[Finding] | None = None,
    ) -> ChangeSet:
        """The file operations (and an account of every action) that apply the chosen actions.

        `findings` are the plan's; None (a caller without a plan) lets a writer that reports on
        them derive them itself."""
        ...


class BaseLayout:
    """Defaults for everything but name, markers, detect, load and changes."""

    name: str
    markers: str
    catch_all = False
    config_model: type[BaseModel] | None = None
    consolidation_style: str | None = None
    automatic_rule_promotion = False
    staleness_without_repo = False
    evergreen_without_frontmatter = False
    links_by_name = False

    def configure(self, root: Path, settings: Settings) -> Settings:
        return settings

    def rules(self, corpus: Corpus, settings: Settings) -> Outcome:
        from ..rules.outcome import Outcome

        return Outcome()

    def guard(self, outcome: Outcome, settings: Settings) -> Outcome:
        return outcome

    def is_archived(self, m: Memory) -> bool:
        return m.type == "archived"

    def before_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        return actions

    def retire_first(self, corpus: Corpus, settings: Settings) -> Callable[[Action], Any] | None:
        return None

    def after_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        return actions

    def depends_on(self, corpus: Corpus, action: Action) -> list[str]:
        return []

    def explain(self, corpus: Corpus, actions: list[Action], settings: Settings) -> list[Action]:
        return actions

    def stages(self, settings: Settings) -> frozenset[str]:
        return frozenset()

    def rule_candidate_cap(self, settings: Settings) -> int | None:
        return None

    def memory_file(self, m: Memory) -> str:
        return file_of(m.key)

    def run_report(self, touched: list[str]) -> str | None:
        reports = [p for p in touched if p.startswith(REPORTS_DIR)]
        return reports[0] if reports else None

    def __repr__(self) -> str:
        return f"<layout {self.name}>"


class ModuleLayout(BaseLayout):
    """A layout made of modules, as the built-ins are: a reader with `detect`, `configure` and
    `load`, a writer with `changes(corpus, actions, settings, run_id, resolve)`, and a rule set."""

    def __init__(self, reader: ModuleType, writer: ModuleType, rules: Callable[[Corpus, Settings], Outcome] | None = None):
        self.reader, self.writer, self.rule_set = reader, writer, rules

    def detect(self, root: Path) -> bool:
        return self.reader.detect(root)

    def configure(self, root: Path, settings: Settings) -> Settings:
        return self.reader.configure(root, settings)

    def load(self, root: Path, settings: Settings) -> Corpus:
        return self.reader.load(root, settings)

    def rules(self, corpus: Corpus, settings: Settings) -> Outcome:
        return self.rule_set(corpus, settings) if self.rule_set else super().rules(corpus, settings)

    def changes(
        self,
        corpus: Corpus,
        actions: list[Action],
        settings: Settings,
        run_id: str,
        resolve: str | None,
        findings: list[Finding] | None = None,
    ) -> ChangeSet:
        return self.writer.changes(corpus, actions, settings, run_id, resolve)
