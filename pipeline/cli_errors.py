"""The command line's one error handler: a known error is one line on stderr and an exit code.

Every command body runs under `guarded` (the single-store commands and `fleet`), so a user never sees
a traceback unless MEMCONSOLIDATE_DEBUG=1 asks for it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import typer

from .errors import UNWRITABLE, MemconsolidateError, os_reason
from .printable import printable


def fail(message: str, code: int) -> None:
    sys.stderr.write(f"memconsolidate: {printable(message)}\n")
    raise typer.Exit(code)


def say(message: str) -> None:
    sys.stderr.write(f"memconsolidate: {printable(message)}\n")


def guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body; turn known errors into one line and an exit code (the one place)."""
    try:
        return fn()
    except MemconsolidateError as exc:  # each error class carries its exit code (errors.py)
        fail(str(exc), exc.exit_code)
    except OSError as exc:  # a full disk, a folder where a file was: one line, not an internal error
        if os.environ.get("MEMCONSOLIDATE_DEBUG"):
            raise
        if exc.errno in UNWRITABLE and exc.filename:  # the user's to fix, like a bad path
            fail(f"cannot write to {os.fsdecode(exc.filename)}: {os_reason(exc)}", 2)
        fail(f"cannot complete: {os_reason(exc)}", 1)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
        if os.environ.get("MEMCONSOLIDATE_DEBUG"):
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (set MEMCONSOLIDATE_DEBUG=1 for details)", 1)
