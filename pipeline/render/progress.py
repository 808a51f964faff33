"""Progress of the LLM stages on stderr: rich bars at a terminal, or lines for `--verbose`."""

from __future__ import annotations

from typing import IO, Any

from ..printable import printable
from ..stages.base import StageProgress
from .text import is_terminal, plural


class _Base:
    def __init__(self) -> None:
        self.base: dict[str, tuple[int, int]] = {}  # stage -> the client's (calls, hits) when it began

    def counts(self, p: StageProgress) -> str:
        calls0, hits0 = self.base.setdefault(p.stage, (p.calls, p.cache_hits))
        return f"{plural(p.calls - calls0, 'call')}, {plural(p.cache_hits - hits0, 'cache hit')}"


class StageLines(_Base):
    """One line per stage as it ends (`--verbose` when stderr is not a terminal)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream

    def __call__(self, p: StageProgress) -> None:
        counts = self.counts(p)
        if p.finished:
            state = "failed (see errors)" if p.failed else "ended"
            self.stream.write(printable(f"memconsolidate: stage {p.stage} {state}: {counts}") + "\n")

    def close(self, interrupted: bool = False) -> None:
        pass


class StageBars(_Base):
    """A rich bar per stage: batches answered of those asked, its calls and cache hits."""

    def __init__(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        super().__init__()
        self.bars = Progress(
            TextColumn("{task.description:<18}"), BarColumn(bar_width=24), MofNCompleteColumn(),
            TextColumn("batches · {task.fields[counts]}"), console=Console(file=stream), transient=False,
        )
        self.tasks: dict[str, Any] = {}
        self.started = False
        self.open: set[str] = set()

    def __call__(self, p: StageProgress) -> None:
        if not self.started:
            self.bars.start()
            self.started = True
        counts = self.counts(p)
        task = self.tasks.get(p.stage)
        if task is None:
            task = self.tasks[p.stage] = self.bars.add_task(p.stage, total=None, counts=counts)
            self.open.add(p.stage)
        if p.finished:
            shown = self.bars.tasks[task]
            # a stage that asked one thing at a time never said how many batches: 0/0, not a made-up 1/1
            total = int(shown.total or 0)
            done = total if not p.failed else int(shown.completed)
            self.bars.update(task, total=total, completed=done, description=f"{p.stage} failed" if p.failed else p.stage,
                             counts=counts)
            self.open.discard(p.stage)
        else:
            self.bars.update(task, total=p.total or None, completed=p.done, counts=counts)

    def close(self, interrupted: bool = False) -> None:
        if not self.started:
            return
        for stage in self.open:  # never left looking finished: it was cut short
            self.bars.update(self.tasks[stage], description=f"{stage} interrupted")
        self.bars.stop()
        self.started = False


def stage_progress(stream: IO[str], *, enabled: bool, verbose: bool) -> StageBars | StageLines | None:
    """Bars at a terminal, lines with --verbose elsewhere, else nothing (a log gets only warnings)."""
    if not enabled:
        return None
    if is_terminal(stream):
        return StageBars(stream)
    return StageLines(stream) if verbose else None
