"""bench/report's parts: rows (loading and validation), tables, summary, plots."""
