"""Exceptions the command line turns into one line on stderr and exit code 2."""


class UsageError(Exception):
    """Bad usage, path or configuration: exit 2, one line, no traceback."""


class ConfigError(UsageError):
    """A configuration file that cannot be read or does not validate."""


class RunFailed(Exception):
    """The run could not complete (exit 1)."""
