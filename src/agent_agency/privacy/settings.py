"""Privacy settings of `agency.yaml` (`pool.anonymization`, `pool.pii_phone_regions`): which
anonymization rules run before a data point is stored, and where phone numbers are looked for."""

from __future__ import annotations

from pydantic import Field

from agent_agency.sections import Section


class AnonymizationPolicy(Section):
    """Which anonymization rules run before a data point is stored; recorded on each point."""

    hash_tenant: bool = Field(
        default=True,
        description="replace tenant ids by keyed HMAC-SHA256 hashes (the key: "
        "pool.tenant_hash_secret_env or pool.secret_file)",
    )
    remove_user_ids: bool = Field(
        default=True,
        description="replace user ids and user names found in text, and drop the names on user "
        "messages",
    )
    generalize_paths: bool = Field(
        default=True,
        description="replace file paths by their form: /a/b/file.ts → /[PATH]/[FILE].ts",
    )
    rename_identifiers: bool = Field(
        default=False,
        description="rename identifiers in Python code: userName → var1, calculateTotal → func1",
    )
    redact_text_pii: bool = Field(
        default=True,
        description="replace personal data and secrets in text (names, addresses, emails, phone, "
        "card, IBAN and social security numbers, IP addresses, API keys, passwords, credentials "
        "in URLs) by typed placeholders: Presidio, regex-only, and own recognizers",
    )
    use_ner: bool = Field(
        default=True,
        description="with the `ner` extra installed, also find person names and street "
        "addresses written without telling context, with a trained model (spaCy) and an address "
        "parser (pyap); without the extra this does nothing. `AGENCY_NER=off` turns it off for a "
        "whole process",
    )
    reward_noise: bool = Field(
        default=False,
        description="add Laplace noise to stored rewards (differential privacy), for sharing "
        "data across tenants; each reward spends ε from its tenant's budget",
    )
    noise_scale: float = Field(
        default=0.1,
        gt=0,
        description="Laplace scale b of the reward noise; each reward spends "
        "ε = reward_sensitivity / noise_scale",
    )
    reward_sensitivity: float = Field(
        default=0.1,
        gt=0,
        description="L1 sensitivity of a reward: the most one record can change it",
    )

    def includes(self, entity: str) -> bool:
        """Whether a finding of `entity` is replaced under this policy."""
        if entity == "FILE_PATH":
            return self.generalize_paths
        if entity in ("USER_ID", "USERNAME"):
            return self.remove_user_ids
        return self.redact_text_pii


# Presidio's own default for its phone recognizer (`phonenumbers` matching run once per region).
DEFAULT_PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")


def phone_region(code: str) -> str:
    """A region `phonenumbers` has formats for, upper-cased (`us` means US); `ValueError` saying
    what is expected otherwise."""
    region = code.upper()
    if region in DEFAULT_PHONE_REGIONS:  # known good: no need to import phonenumbers (~30 ms)
        return region
    from phonenumbers import SUPPORTED_REGIONS

    if region not in SUPPORTED_REGIONS:
        raise ValueError(
            f"{code!r} is not a region phonenumbers knows: give ISO 3166-1 alpha-2 codes "
            "such as US, GB or DE"
        )
    return region
