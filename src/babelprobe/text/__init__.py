"""The language layer: every rule about text in a language (normalize/fold, segment, match).

Families call it; it imports no family. Per-language knowledge lives in ``text/data/`` as tables
with a source per row (docs/ARCHITECTURE.md, "The language layer").
"""
