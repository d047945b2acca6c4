"""babelprobe: measure what a language model has memorized and what it knows, across languages."""

__version__ = "0.1.0"
