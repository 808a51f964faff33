"""The layout-neutral deterministic rules: pure functions from a `Corpus` to actions and findings.

Each rule lives in its own module, named for what it does. A layout's own rules live in its package
(`pipeline/layouts/<name>/`); `plan.run_rules` runs both (this package sits below the layouts).
"""
