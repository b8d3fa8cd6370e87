"""Demo host code for examples/support (an in-memory order book)."""
