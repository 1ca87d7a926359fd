"""Privacy primitives: PII and secret detection, tenant hashing, differential privacy."""
