"""Eval data (datasets, holdout, thresholds, recordings), installed as `pipeline.evals` so that
`memconsolidate eval` finds it outside a source checkout. No code."""
