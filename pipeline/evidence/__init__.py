"""What the deterministic pass reads besides the store: the repositories its memories name (one
walk each, `repo_scan.py`), their git history (`git_history.py`) and the consult logs, gathered into
the staleness rule's context by `context.py`. The only I/O of planning outside the layouts' readers.
"""
