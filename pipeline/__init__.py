"""memconsolidate: keep AI-agent memory stores healthy."""

__version__ = "0.1.0"
