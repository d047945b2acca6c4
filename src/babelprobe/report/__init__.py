"""Presenting stored results: terminal tables (and later figures and HTML)."""
