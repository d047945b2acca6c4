"""Pure scoring functions (string or numbers in, number out), each pinned by tests."""
