"""A/B deployment of trained agents, with promotion and rollback: not built yet."""
