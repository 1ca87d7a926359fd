"""The key for hashing tenant ids: from an environment variable, else a per-installation file.

It is never stored in the database, so the pool alone cannot be used to confirm a tenant's id.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from agent_agency.config import PoolSettings

DEFAULT_SECRET_FILE = Path("~/.config/agent-agency/secret")


def load_tenant_secret(settings: PoolSettings) -> bytes:
    """The HMAC key: `$<tenant_hash_secret_env>` if set, else the secret file (created once)."""
    from_env = os.environ.get(settings.tenant_hash_secret_env)
    if from_env:
        return from_env.encode()
    path = (
        Path(settings.secret_file).expanduser()
        if settings.secret_file
        else (DEFAULT_SECRET_FILE.expanduser())
    )
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_hex(32))
    secret = path.read_text().strip()
    if not secret:
        raise ValueError(f"pool.secret_file: {path} is empty; delete it to generate a new secret")
    return secret.encode()
