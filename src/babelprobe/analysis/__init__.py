"""Analysis reads stored results only (items.parquet), so reports rebuild without a model."""
