"""Secrets in text: provider API keys and tokens, bearer credentials, and values after secret keys.

Provider token shapes come from Yelp's `detect-secrets` plugins (their `denylist` patterns, for the
plugins that recognise a token by its own shape: AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
JWT, SendGrid, …), plus the documented prefixes `detect-secrets` leaves to its entropy plugins
(OpenAI project keys, Anthropic, Hugging Face, Google, GitHub fine-grained tokens). A match is
widened to the whole token it starts, so a key whose tail the plugin's pattern does not cover is
still replaced whole. Values after a key that names a secret (`password=`, `"api_key": "…"`,
`export AWS_SECRET_ACCESS_KEY=…`, `?token=…`, `Authorization: Bearer …`) are secrets whatever
their shape.
"""

from __future__ import annotations

import functools
import re

from agent_agency.privacy.keyed import pairs, value_span
from agent_agency.privacy.spans import Finding, PatternRecognizer, Recognizer

# The detect-secrets plugins whose patterns recognise a token by a fixed prefix (the keyword and
# entropy plugins need the filtered scan; the IP plugin is not about secrets; Discord, Telegram and
# Mailchimp tokens have no prefix and their shapes match ordinary ids).
_DETECT_SECRETS_PLUGINS = (
    "aws.AWSKeyDetector",
    "azure_storage_key.AzureStorageKeyDetector",
    "github_token.GitHubTokenDetector",
    "gitlab_token.GitLabTokenDetector",
    "jwt.JwtTokenDetector",
    "openai.OpenAIDetector",
    "pypi_token.PypiTokenDetector",
    "sendgrid.SendGridDetector",
    "slack.SlackDetector",
    "square_oauth.SquareOAuthDetector",
    "stripe.StripeDetector",
)
# Documented prefixes detect-secrets only finds by entropy, each followed by its key's alphabet.
_DOCUMENTED_PREFIXES = (
    r"sk-(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|None-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"github_pat_[A-Za-z0-9_]{40,}",
    r"hf_[A-Za-z]{30,}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{20,}",
    r"xox[abposre]-[0-9A-Za-z-]{10,}",
    r"npm_[A-Za-z0-9]{36}",
    r"glpat-[A-Za-z0-9_-]{20,}",
)
# Characters a token is made of (base64, URL-safe base64, JWT dots): a match is widened over them.
_TOKEN_TAIL = r"[A-Za-z0-9_+/=.-]*"
# The fixed prefixes every provider pattern starts with: a token starts where one of them does.
PROVIDER_NEEDS = re.compile(
    r"AKIA|ASIA|ABIA|ACCA|A3T|AccountKey=|gh[pousr]_|gl(?:pat|dt|ft|soat|rt|cbt|imt)-|GR1348941"
    r"|eyJ|sk-|sk_|rk_|pypi-|SG\.|xox|https://hooks\.slack|sq0csp-|github_pat_|hf_|AIza|npm_"
)


@functools.cache
def _provider_pattern() -> re.Pattern[str]:
    import importlib

    patterns = []
    for dotted in _DETECT_SECRETS_PLUGINS:
        module, _, name = dotted.rpartition(".")
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        patterns += [p.pattern for p in plugin.denylist if "aws" not in p.pattern[:4]]
    patterns += _DOCUMENTED_PREFIXES
    # detect-secrets' patterns may hold capture groups: make them non-capturing
    non_capturing = [re.sub(r"(?<!\\)\((?!\?)", "(?:", pattern) for pattern in patterns]
    joined = "|".join(f"(?:{pattern})" for pattern in non_capturing)
    return re.compile(rf"(?:{joined}){_TOKEN_TAIL}")


class _ProviderSecret(Recognizer):
    """A provider token; the patterns are compiled on first use (detect-secrets takes ~0.3 s to
    import)."""

    def findings(self, text: str) -> list[Finding]:
        found = []
        pattern = _provider_pattern()
        for prefix in self.needs.finditer(text):
            start = prefix.start()
            if start > 0 and text[start - 1].isalnum():
                continue  # inside a longer word
            token = pattern.match(text, start)
            if token is not None:
                found.append(Finding(self.entity, start, token.end()))
        return found


# A key naming a secret, alone or ending a longer name (DB_PASSWORD, client_secret, OPENAI_API_KEY,
# x-api-key): '_', '-' and '.' separate words here, so its boundaries are "no letter or digit".
_SECRET_KEY = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|auth|sig|signature|session[_-]?id|[A-Z0-9]_KEY|_key)"
)
_SECRET_WORD = re.compile(rf"(?i)(?<![a-z0-9]){_SECRET_KEY}(?![a-z0-9])")
# unquoted: after '=' up to a space or '&' (a query string), after ':' the rest of the line
_BARE_AFTER = {"=": re.compile(r"[^\s&\"']+"), ":": re.compile(r"[^\s\"'][^\n]*")}
_KEYED_NEEDS = re.compile(r"[=:]")  # then `may_match` asks for a key naming a secret
_BEARER = re.compile(r"\b(?:Bearer|Basic|Token|token)\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})")
_BEARER_NEEDS = re.compile(r"Bearer|Basic|[Tt]oken")
# A value that names where the secret is, not the secret: an environment variable, a template
# slot, a placeholder of ours, an empty or boolean value.
_NOT_A_SECRET = re.compile(
    r"\$[A-Z_][A-Z0-9_]*|\$\{[^}]+\}|\{\{.*\}\}|<[^>]*>|\[[A-Z_]+\](?:#\d+)?|\*+|[xX]+|\d{1,4}"
    r"|(?i:true|false|null|none|yes|no|required|optional|string|str)"
)


class _KeyedSecret(Recognizer):
    """The value after a secret key, in its quotes or up to the next separator."""

    def may_match(self, text: str) -> bool:
        # (no pair without a separator: `needs` is not searched first)
        return any(_SECRET_WORD.search(pair.key) for pair in pairs(text))

    def findings(self, text: str) -> list[Finding]:
        found = []
        for pair in pairs(text):
            if not _SECRET_WORD.search(pair.key):
                continue
            span = value_span(text, pair, _BARE_AFTER[pair.separator])
            if span is not None and not _NOT_A_SECRET.fullmatch(text[span[0] : span[1]]):
                found.append(Finding(self.entity, *span))
        return found


SECRET_RECOGNIZERS: tuple[Recognizer, ...] = (
    _ProviderSecret("SECRET", PROVIDER_NEEDS),
    _KeyedSecret("SECRET", _KEYED_NEEDS),
    PatternRecognizer("SECRET", _BEARER, _BEARER_NEEDS, lambda v: not _NOT_A_SECRET.fullmatch(v)),
)
