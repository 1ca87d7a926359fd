"""Training better agents from the pool (prompt optimization, SFT, GRPO): not built yet."""
