"""Many stores at once: `memconsolidate fleet plan|apply|run`.

targets.py which stores (paths, --stores, --discover) · task.py what one store runs (the
single-store workflow functions, unchanged) · plans.py the plans `--plans-dir` writes and
`fleet apply` reads back · engines/ where tasks run (local processes, Ray) ·
budget.py one call/cost/rate budget for the whole fleet · resume.py the state that makes
`fleet run --if-due` resumable · report.py JSON lines and the summary · cli.py the commands.
"""
