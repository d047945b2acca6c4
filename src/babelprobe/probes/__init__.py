"""Probe families: each builds requests from items and scores responses; none calls a model."""
