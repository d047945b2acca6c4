"""The owl probe family: everything of it lives in this folder (family.py registers it)."""
