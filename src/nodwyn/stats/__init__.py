"""Stats: pure totals, cache rate, cost and per-request miss diagnosis over session events."""
