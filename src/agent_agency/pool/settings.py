"""The `storage` and `pool` sections of `agency.yaml`: the database, how records are written to
it, anonymization, the tenant-hashing key, the privacy budget and the retention tiers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from pydantic import AfterValidator, Field
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS, AnonymizationPolicy, phone_region
from agent_agency.sections import Problem, Section, cross_field_check

_DATABASE_URL_EXAMPLES = "sqlite:///agency.db or postgresql+psycopg://user@host/db"


def check_database_url(url: str) -> str:
    """`url` when SQLAlchemy can parse it and knows its kind of database; `ValueError` saying what
    is expected otherwise."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        raise ValueError(
            f"{url!r} is not a database URL (expected e.g. {_DATABASE_URL_EXAMPLES})"
        ) from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:  # e.g. postgres://, which libpq takes but SQLAlchemy does not
        raise ValueError(
            f"{url!r} names no kind of database SQLAlchemy knows ({parsed.drivername!r}; "
            f"expected e.g. {_DATABASE_URL_EXAMPLES})"
        ) from None
    return url


class StorageSettings(Section):
    url: Annotated[str, AfterValidator(check_database_url)] = Field(
        default="sqlite:///agency.db",
        description="the pool's database: sqlite:///FILE (a file in the working directory by "
        "default) or postgresql+psycopg://user@host/db",
    )
    batch_size: int = Field(
        default=256, gt=0, description="records the tracker writes in one transaction, at most"
    )
    flush_interval_s: float = Field(
        default=0.5,
        gt=0,
        description="seconds the tracker waits, at most, before writing the records it holds",
    )


class PoolSettings(Section):
    anonymization: AnonymizationPolicy = Field(
        default_factory=AnonymizationPolicy,
        description="the anonymization rules applied to a data point before it is stored",
    )
    tenant_hash_secret_env: str = Field(
        default="AGENCY_TENANT_SECRET",
        description="environment variable holding the key tenant ids are hashed with; where it "
        "is unset, the key is read from secret_file",
    )
    secret_file: str | None = Field(
        default=None,
        description="file keeping the tenant-hashing key, generated on first use; null means "
        "~/.config/agent-agency/secret",
    )
    epsilon_budget_per_tenant: float = Field(
        default=10_000.0,
        gt=0,
        description="total ε the noisy rewards of one tenant may spend; points beyond it go to "
        "quarantine (with anonymization.reward_noise only)",
    )
    hot_days: int = Field(
        default=7,
        gt=0,
        description="age in days up to which a data point is in the hot tier, then the warm "
        "one (both keep it whole)",
    )
    warm_days: int = Field(
        default=90,
        gt=0,
        description="age in days after which data points are compacted into daily aggregates "
        "(the cold tier) by `agency pool compact`",
    )
    cold_days: int = Field(
        default=730,
        gt=0,
        description="age in days after which daily aggregates and quarantined inputs are deleted",
    )
    pii_phone_regions: list[Annotated[str, AfterValidator(phone_region)]] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS),
        min_length=1,
        description=(
            "regions (ISO 3166-1 alpha-2 codes, any case, kept upper-case) whose national phone "
            "formats Presidio's phone recognizer matches, one `phonenumbers` pass each (~0.15 ms "
            "per phone-like string per region); international +CC numbers are found under any "
            "region. Default: Presidio's 8"
        ),
    )

    @cross_field_check("hot_days", "warm_days", "cold_days")
    def _tiers_ordered(self) -> Iterator[Problem]:
        if not self.hot_days < self.warm_days < self.cold_days:
            tiers = f"{self.hot_days}, {self.warm_days}, {self.cold_days}"
            yield "", f"tiers must satisfy hot_days < warm_days < cold_days, got {tiers}"
