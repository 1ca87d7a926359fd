"""The key for hashing tenant ids: from an environment variable, else a per-installation file.

It is never stored in the database, so the pool alone cannot be used to confirm a tenant's id.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Protocol

from agent_agency.sections import ConfigError

DEFAULT_SECRET_FILE = Path("~/.config/agent-agency/secret")


class SecretSettings(Protocol):
    """Where the key is kept (`pool.settings.PoolSettings` is one)."""

    @property
    def tenant_hash_secret_env(self) -> str: ...
    @property
    def secret_file(self) -> str | None: ...


class TenantSecretError(ConfigError):
    """The secret file cannot be used (empty, not a file, unreadable, cannot be created); the
    message names `pool.secret_file` (or the default file and how to choose another) and why."""


def load_tenant_secret(settings: SecretSettings) -> bytes:
    """The HMAC key: `$<tenant_hash_secret_env>` if set, else the secret file (created once).
    A file that cannot be used raises `TenantSecretError`."""
    from_env = os.environ.get(settings.tenant_hash_secret_env)
    if from_env:
        return from_env.encode()
    configured = settings.secret_file
    path = Path(configured).expanduser() if configured else DEFAULT_SECRET_FILE.expanduser()

    def problem(reason: str) -> TenantSecretError:
        if configured:
            return TenantSecretError(f"pool.secret_file: {reason}")
        return TenantSecretError(
            f"the tenant secret file {reason}; set pool.secret_file to another file, or the "
            f"environment variable ${settings.tenant_hash_secret_env} "
            "(settings pool.tenant_hash_secret_env) to the secret"
        )

    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process created it meanwhile: read theirs
            else:
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(secrets.token_hex(32))
        except OSError as error:
            raise problem(f"{path} cannot be created: {_reason(error, path)}") from None
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        raise problem(f"{path} is not text; delete it to generate a new secret") from None
    except OSError as error:
        raise problem(f"{path} cannot be read: {_reason(error, path)}") from None
    if not secret:
        raise problem(f"{path} is empty; delete it to generate a new secret")
    return secret.encode()


def _reason(error: OSError, path: Path) -> str:
    """The error's strerror, naming the file it is about where that is not `path`."""
    reason = error.strerror or str(error)
    if error.filename is not None and Path(os.fsdecode(error.filename)) != path:
        return f"{reason} ({os.fsdecode(error.filename)})"
    return reason
