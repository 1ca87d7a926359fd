"""Agent versions and their rollout: the registry, the canary traffic split, the sequential
comparison, staged promotion and automatic rollback, every transition audited (docs/deploy.md)."""
