"""The benchmark data pool: storage for every stage, validation, anonymization, tiers, queries."""
