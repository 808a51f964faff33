"""The stub model's offline judges: the decisions each stage asks a model for, made by rules.

One module per stage (conflicts/, a package, reorder.py, standing_rules.py), with the text analysis
they share (conflict_statements.py, text_facts.py). They run with `--model stub` and serve as the
eval baselines.
"""
