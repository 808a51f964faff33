"""What a layout's writer hands to apply: file operations and an account of every action.

It sits below both `apply` (which executes it through the journal) and the layouts (whose writers
build it), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .journal import Op
from .model import Action


@dataclass
class ChangeSet:
    """What a layout writer proposes: file operations plus an account of every action."""

    ops: list[Op] = field(default_factory=list)
    applied: list[Action] = field(default_factory=list)
    skipped: list[tuple[Action, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
