"""The cyclic garbage collector paused while a big store is read and planned (issue 14).

Reading a bank of 200k records allocates millions of long-lived objects and nothing else: each
collection the allocations trigger walks all of them again and frees none (45 % of the CPU of a
deterministic plan was the collector). Pausing it is safe: reference counting still frees every
object the moment it is unreferenced, and what the records and rules build holds no reference cycles;
the few cycles made meanwhile (an exception's traceback) wait only until the window closes, and the
window always closes (a context manager, restoring the collector's previous state even on error).
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """The collector off for the window. With `freeze`, inside `reading_for_a_plan`, what is alive
    when it closes is frozen (`gc.freeze`): a store's memories, built to be kept, are then not walked
    by the first collection after the window (it walked every one of them: 4 % of a big bank's plan)
    nor by later ones, until `thaw` puts them back in the oldest generation (the plan does, once its
    deterministic pass is done, so cyclic garbage frozen with them is still found in a long-lived
    process)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            _freeze_ours()
        if was_enabled:
            gc.enable()


# Whether what is frozen now was frozen by `gc_paused(freeze=True)`: `gc.unfreeze` lets go of every
# frozen object at once, so `thaw` may call it only when no one else froze any.
_frozen_by_us = False
# How many `reading_for_a_plan` windows are open (a command inside another's): a reader may freeze
# only inside one, and only the outermost's close thaws.
_windows = 0


@contextmanager
def reading_for_a_plan() -> Iterator[None]:
    """The window from reading a store to its plan (the commands' bodies open one): a reader may
    freeze what it builds, and what it froze is thawed by the plan's deterministic pass or, when no
    plan is made (`run --if-due` when not due, an error), as the window closes.

    Outside it (`open_store` called alone) nothing is frozen: a freeze with no plan after it stayed
    in place, counted as ours, until a host that had since unfrozen everything and frozen its own
    objects lost its freeze to our next plan's `thaw`."""
    global _windows
    _windows += 1
    try:
        yield
    finally:
        _windows -= 1
        if not _windows:
            thaw()


def _freeze_ours() -> None:
    global _frozen_by_us
    # Objects someone else froze (a host that forks its workers) are theirs: nothing is frozen on top
    # of them, or `thaw` could not give ours back without theirs (as `gc_frozen` leaves them alone).
    # Ours are those of this window's reads (a store of several banks freezes once per bank).
    if _windows and (_frozen_by_us or not gc.get_freeze_count()):
        gc.freeze()
        _frozen_by_us = True


def thaw() -> None:
    """What `gc_paused(freeze=True)` froze, back to the collector's oldest generation; what someone
    else froze stays frozen."""
    global _frozen_by_us
    if _frozen_by_us:
        gc.unfreeze()
        _frozen_by_us = False


@contextmanager
def gc_frozen() -> Iterator[None]:
    """The objects alive now left out of every collection until the window closes (`gc.freeze`).

    After a `gc_paused` read and plan the next few collections each walk all the store's millions of
    objects, although they stay alive to the end: on a bank of 50k memories 0.3 s of the LLM stages'
    CPU. Frozen, they are skipped; what the window allocates is collected as usual, and a cycle among
    the frozen objects only waits for the window to close (`gc.unfreeze`). Objects someone else froze
    stay frozen: nothing is done then.
    """
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


_frozen_at_exit = False


def freeze_at_exit() -> None:
    """At exit, everything alive frozen (`gc.freeze`) before the interpreter tears down (registered
    once). A command keeps what it built to its end (a store's memories, the rules' indexes, the
    stages' readings), and the collector's last walk over all of it frees nothing reference counting
    would not: 40-90 ms of a plan of a 1,000-memory crux store. Nothing of ours needs a finalizer."""
    global _frozen_at_exit
    if not _frozen_at_exit:
        atexit.register(gc.freeze)
        _frozen_at_exit = True
