"""A labelled corpus of agent traces with planted personal data and secrets, and decoys.

Written independently of the recognizers in `agent_agency.privacy`: values come from Faker (names,
addresses, e-mails, phones and IBANs of each locale) or are built from the documented shape of the
thing (Luhn-valid card numbers, provider API keys as their prefix plus random characters of the
documented alphabet and length), and the texts are templates written after real file formats
(support tickets, .env and YAML configs, shell sessions, Python stack traces, nginx access logs,
sshd logs, JSON tool traces, SQL inserts). Each record lists the values planted in it with their
type, and decoys: strings of the same look that are not personal data and must survive.

Run: python benchmarks/privacy_corpus.py [N] > corpus.jsonl   (default 600 records, seed 25)
"""

# ruff: noqa: E501  (the templates are log and config lines as long as the real ones)
from __future__ import annotations

import json
import random
import string
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR")
B62 = string.ascii_letters + string.digits
URLSAFE = B62 + "-_"
DEFAULT_SIZE = 600
SEED = 25


@dataclass
class Record:
    """One text with what was planted in it (type, value) and the decoys that must survive."""

    format: str
    locale: str
    text: str = ""
    planted: list[tuple[str, str]] = field(default_factory=list)
    decoys: list[str] = field(default_factory=list)
    is_json: bool = False

    def pii(self, kind: str, value: str) -> str:
        self.planted.append((kind, value))
        return value

    def decoy(self, value: str) -> str:
        self.decoys.append(value)
        return value

    def as_json(self, index: int) -> dict[str, Any]:
        return {
            "id": f"{self.format}-{self.locale}-{index:04d}",
            "format": self.format,
            "locale": self.locale,
            "text": self.text,
            "planted": [{"type": kind, "value": value} for kind, value in self.planted],
            "decoys": self.decoys,
            "is_json": self.is_json,
        }


# ---- values built from their documented shapes -------------------------------------------


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def luhn_complete(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + chars(rng, string.digits, length - len(prefix) - 1)
    total = 0
    for index, char in enumerate(reversed(body)):
        value = int(char)
        if index % 2 == 0:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return body + str((10 - total % 10) % 10)


def luhn_failing(rng: random.Random) -> str:
    valid = luhn_complete(rng, rng.choice(["4", "51", "37"]), 16)
    return valid[:-1] + str((int(valid[-1]) + rng.randint(1, 9)) % 10)


def card_number(rng: random.Random) -> str:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)])
    digits = luhn_complete(rng, prefix, length)
    style = rng.choice(["plain", "spaced", "dashed"])
    if style == "plain" or length == 15:
        return digits
    sep = " " if style == "spaced" else "-"
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4))


def iban_failing(valid: str) -> str:
    check = int(valid[2:4])
    return f"{valid[:2]}{(check + 1) % 97 or 2:02d}{valid[4:]}"


def spaced_iban(iban: str) -> str:
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


def ssn(fake: Faker, rng: random.Random) -> str:
    area, group, serial = rng.randint(100, 665), rng.randint(1, 99), rng.randint(1, 9999)
    style = rng.choice(["-", " ", ""])
    return f"{area:03d}{style}{group:02d}{style}{serial:04d}"


SECRET_SHAPES: dict[str, Callable[[random.Random], str]] = {
    # OpenAI: legacy keys sk- + 20 + "T3BlbkFJ" + 20; project keys sk-proj- + 74 + "T3BlbkFJ" + 74
    "openai": lambda r: "sk-" + chars(r, B62, 20) + "T3BlbkFJ" + chars(r, B62, 20),
    "openai_project": lambda r: (
        "sk-proj-" + chars(r, URLSAFE, 74) + "T3BlbkFJ" + chars(r, URLSAFE, 74)
    ),
    "anthropic": lambda r: "sk-ant-api03-" + chars(r, URLSAFE, 93) + "AA",
    "aws_access_key_id": lambda r: "AKIA" + chars(r, string.ascii_uppercase + "234567", 16),
    "github": lambda r: "ghp_" + chars(r, B62, 36),
    "github_fine_grained": lambda r: "github_pat_" + chars(r, B62, 22) + "_" + chars(r, B62, 59),
    "gitlab": lambda r: "glpat-" + chars(r, URLSAFE, 20),
    "slack": lambda r: (
        f"xox{r.choice('bpa')}-{chars(r, string.digits, 12)}-"
        f"{chars(r, string.digits, 13)}-{chars(r, B62, 24)}"
    ),
    "stripe": lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + chars(r, B62, 24),
    "google": lambda r: "AIza" + chars(r, URLSAFE, 35),
    "huggingface": lambda r: "hf_" + chars(r, string.ascii_letters, 34),
}


def aws_secret(rng: random.Random) -> str:
    return chars(rng, B62 + "/+", 40)


def provider_secret(rng: random.Random) -> str:
    return SECRET_SHAPES[rng.choice(sorted(SECRET_SHAPES))](rng)


def password(fake: Faker) -> str:
    return fake.password(length=random.choice([12, 16, 20]), special_chars=True)


def phone(fake: Faker, rng: random.Random) -> str:
    """Faker's phone of the locale, or the same digits in an unusual grouping or bare E.164."""
    number = fake.phone_number()
    style = rng.random()
    if style < 0.5:
        return number
    code = {"en_US": "1", "en_GB": "44", "de_DE": "49", "fr_FR": "33"}[fake._locales[0]]
    national = {
        "en_US": lambda: (
            f"{rng.randint(201, 989)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"
        ),
        "en_GB": lambda: f"7{rng.randint(100, 999)}{rng.randint(100000, 999999)}",
        "de_DE": lambda: f"1{rng.randint(50, 79)}{rng.randint(1000000, 99999999)}",
        "fr_FR": lambda: f"{rng.choice('67')}{rng.randint(10000000, 99999999)}",
    }[fake._locales[0]]()
    if style < 0.7:
        return f"+{code}{national}"
    if style < 0.85:
        return ".".join([national[:3], national[3:6], national[6:]])
    return f"+{code} {national[:2]} {national[2:5]} {national[5:]}"


def obfuscated_email(fake: Faker, rng: random.Random) -> str:
    user, domain = fake.user_name(), fake.domain_name()
    name, _, tld = domain.rpartition(".")
    return rng.choice(
        [
            f"{user} at {name} dot {tld}",
            f"{user}[at]{domain}",
            f"{user}(at){name}(dot){tld}",
            f"{user}%40{domain}",
        ]
    )


def street_address(fake: Faker) -> str:
    """Street, postcode and city as the locale writes them on one line."""
    locale = fake._locales[0]
    street = fake.street_address().replace("\n", ", ")
    city, postcode = fake.city(), fake.postcode()
    if locale == "en_US":
        return f"{street}, {city}, {fake.state_abbr()} {postcode}"
    if locale == "en_GB":
        return f"{street}, {city} {postcode}"
    if locale == "fr_FR":
        return f"{street}, {postcode} {city}"
    return f"{street}, {postcode} {city}"


# ---- decoys --------------------------------------------------------------------------------


def order_id(rng: random.Random) -> str:
    return rng.choice(
        [
            f"ORD-{rng.randint(2019, 2026)}-{rng.randint(0, 999999):06d}",
            f"INV{rng.randint(10000000, 99999999)}",
            f"#{rng.randint(100000, 999999)}",
            f"PO-{chars(rng, string.ascii_uppercase, 2)}{rng.randint(1000, 9999)}",
            f"ticket {rng.randint(1000000, 9999999)}",
            f"{chars(rng, string.ascii_uppercase, 4)}-{rng.randint(100, 9999)}",
        ]
    )


def isbn13(rng: random.Random) -> str:
    body = "978" + chars(rng, string.digits, 9)
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body))
    digits = body + str((10 - total % 10) % 10)
    return f"{digits[:3]}-{digits[3]}-{digits[4:8]}-{digits[8:12]}-{digits[12]}"


def version(rng: random.Random) -> str:
    return rng.choice(
        [
            f"v{rng.randint(0, 4)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
            f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}.{rng.randint(0, 99)}",
            f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}-rc{rng.randint(1, 5)}",
            f"5.{rng.randint(4, 19)}.0-{rng.randint(100, 999)}-generic",
            f"build {rng.randint(20200101, 20261231)}.{rng.randint(1, 9)}",
        ]
    )


LOOPBACKS = ("127.0.0.1", "::1", "0.0.0.0", "localhost")
SYSTEM_PATHS = (
    "/usr/lib/python3.11/json/decoder.py",
    "/usr/local/lib/python3.12/site-packages/requests/adapters.py",
    "/etc/nginx/nginx.conf",
    "/var/log/nginx/access.log",
    "/opt/app/venv/bin/gunicorn",
    "/usr/share/zoneinfo/Europe/Berlin",
)
PUBLIC_HOSTS = (
    "api.github.com",
    "pypi.org",
    "registry.npmjs.org",
    "api.stripe.com",
    "docs.python.org",
)


# ---- templates, one per file format ----------------------------------------------------------


def support_ticket(r: Record, fake: Faker, rng: random.Random) -> None:
    name, other = r.pii("PERSON", fake.name()), r.pii("PERSON", fake.name())
    first = name.split()[-2] if len(name.split()) > 1 else name
    r.text = (
        f"Subject: Refund for order {r.decoy(order_id(rng))}\n"
        f"From: {name} <{r.pii('EMAIL', fake.email())}>\n\n"
        f"Dear {other},\n\n"
        f"I was charged twice on card {r.pii('CREDIT_CARD', card_number(rng))} "
        f"(the number {r.decoy(luhn_failing(rng))} on the invoice is not mine). "
        f"Please refund to {r.pii('IBAN', spaced_iban(fake.iban()) if rng.random() < 0.5 else fake.iban())}.\n"
        f"Ship the replacement to {r.pii('STREET_ADDRESS', street_address(fake))}.\n"
        f"You can call me on {r.pii('PHONE', phone(fake, rng))} or write to "
        f"{r.pii('EMAIL', obfuscated_email(fake, rng))}.\n"
        f"My username is {r.pii('USERNAME', fake.user_name())}. The book I ordered was ISBN "
        f"{r.decoy(isbn13(rng))} and the app says {r.decoy(version(rng))}.\n"
        f"Reference: {r.decoy(str(uuid.UUID(int=rng.getrandbits(128))))}\n\n"
        f"Thanks,\n{first}\n"
    )
    if fake._locales[0] == "en_US":
        r.text += f"SSN on file: {r.pii('US_SSN', ssn(fake, rng))}\n"


def env_file(r: Record, fake: Faker, rng: random.Random) -> None:
    user, pw = fake.user_name(), password(fake)
    host = fake.ipv4_private()
    scheme = rng.choice(["postgresql", "mysql", "amqp", "mongodb+srv", "redis"])
    url_user = "" if scheme == "redis" else r.pii("USERNAME", user)
    r.text = (
        f"# {r.decoy(version(rng))} settings\n"
        f"APP_ENV=production\nAPP_HOST={r.decoy('0.0.0.0')}\nAPP_PORT=8000\n"
        f"DATABASE_URL={scheme}://{url_user}:{r.pii('PASSWORD', pw)}@{r.pii('IP_ADDRESS', host)}:5432/"
        f"{r.decoy('orders_prod')}\n"
        f"OPENAI_API_KEY={r.pii('SECRET', SECRET_SHAPES['openai_project'](rng))}\n"
        f"export AWS_ACCESS_KEY_ID={r.pii('SECRET', SECRET_SHAPES['aws_access_key_id'](rng))}\n"
        f"export AWS_SECRET_ACCESS_KEY={r.pii('SECRET', aws_secret(rng))}\n"
        f'STRIPE_KEY="{r.pii("SECRET", SECRET_SHAPES["stripe"](rng))}"\n'
        f"ADMIN_EMAIL={r.pii('EMAIL', fake.email())}\n"
        f"SMTP_PASSWORD='{r.pii('PASSWORD', password(fake))}'\n"
        f"CACHE_URL=redis://{r.decoy('localhost')}:6379/0\n"
        f"REQUEST_ID_PREFIX={r.decoy(order_id(rng))}\n"
    )


def yaml_config(r: Record, fake: Faker, rng: random.Random) -> None:
    r.text = (
        f"service:\n  name: billing\n  image: ghcr.io/acme/billing:{r.decoy(version(rng))}\n"
        f"  listen: {r.decoy('127.0.0.1')}:9000\n"
        f"database:\n  host: {r.pii('IP_ADDRESS', fake.ipv4_public())}\n"
        f"  user: {r.pii('USERNAME', fake.user_name())}\n"
        f"  password: {r.pii('PASSWORD', password(fake))}\n"
        f"  url: jdbc:mysql://{r.pii('USERNAME', fake.user_name())}:"
        f"{r.pii('PASSWORD', password(fake))}@db.internal:3306/{r.decoy('billing')}\n"
        f"integrations:\n  github_token: {r.pii('SECRET', SECRET_SHAPES['github'](rng))}\n"
        f"  slack_webhook_token: {r.pii('SECRET', SECRET_SHAPES['slack'](rng))}\n"
        f"  hf_token: {r.pii('SECRET', SECRET_SHAPES['huggingface'](rng))}\n"
        f"  maps_api_key: {r.pii('SECRET', SECRET_SHAPES['google'](rng))}\n"
        f"owner:\n  name: {r.pii('PERSON', fake.name())}\n"
        f"  email: {r.pii('EMAIL', fake.email())}\n"
        f'  phone: "{r.pii("PHONE", phone(fake, rng))}"\n'
        f"  office: {r.pii('STREET_ADDRESS', street_address(fake))}\n"
        f"tracking_id: {r.decoy(str(uuid.UUID(int=rng.getrandbits(128))))}\n"
    )


def shell_session(r: Record, fake: Faker, rng: random.Random) -> None:
    user = r.pii("USERNAME", fake.user_name())
    host = fake.hostname(0)
    remote = fake.ipv4_public()
    r.text = (
        f"{user}@{host}:~$ cd /home/{user}/projects/{r.decoy('billing')}\n"
        f"{user}@{host}:~/projects/billing$ export ANTHROPIC_API_KEY="
        f"{r.pii('SECRET', SECRET_SHAPES['anthropic'](rng))}\n"
        f"{user}@{host}:~/projects/billing$ git push https://{user}:"
        f"{r.pii('SECRET', SECRET_SHAPES['github_fine_grained'](rng))}@github.com/acme/billing.git\n"
        f"Enumerating objects: 5, done.\nTo github.com:acme/billing.git\n"
        f"   {r.decoy(chars(rng, '0123456789abcdef', 7))}..{chars(rng, '0123456789abcdef', 7)}  main -> main\n"
        f"{user}@{host}:~/projects/billing$ scp dump.sql {user}@{r.pii('IP_ADDRESS', remote)}:/home/{user}/backups/\n"
        f'{user}@{host}:~/projects/billing$ curl -H "Authorization: Bearer '
        f'{r.pii("SECRET", provider_secret(rng))}" https://{r.decoy(rng.choice(PUBLIC_HOSTS))}/v1/items\n'
        f'{{"ok": true}}\n'
        f"{user}@{host}:~/projects/billing$ python -c 'import sys; print(sys.version)'\n"
        f"{r.decoy(f'3.11.{rng.randint(1, 9)}')} (main, Jan 1 2024)\n"
        f"{user}@{host}:~/projects/billing$ ping -c1 {r.decoy('localhost')}\n"
    )


def stack_trace(r: Record, fake: Faker, rng: random.Random) -> None:
    user = r.pii("USERNAME", fake.user_name())
    win = rng.random() < 0.4
    main = f"C:\\Users\\{user}\\app\\main.py" if win else f"/home/{user}/app/main.py"
    r.text = (
        "Traceback (most recent call last):\n"
        f'  File "{main}", line 42, in <module>\n'
        "    main()\n"
        f'  File "{r.decoy(SYSTEM_PATHS[0])}", line 337, in decode\n'
        "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
        f'  File "{r.decoy(SYSTEM_PATHS[1])}", line 519, in send\n'
        "    raise ConnectionError(e, request=request)\n"
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443): "
        f"Max retries exceeded with url: /v2/users?email={r.pii('EMAIL', fake.email().replace('@', '%40'))}"
        f"&api_key={r.pii('SECRET', provider_secret(rng))}\n"
        f"During handling, customer {r.pii('PERSON', fake.name())} (id {r.decoy(order_id(rng))}) "
        f"was on a call from {r.pii('PHONE', phone(fake, rng))}.\n"
        f"share: \\\\{fake.hostname(0)}\\home$\\{r.pii('USERNAME', fake.user_name())}\\reports\n"
        f"python {r.decoy(version(rng))}, request {r.decoy(str(uuid.UUID(int=rng.getrandbits(128))))}\n"
    )


def nginx_access(r: Record, fake: Faker, rng: random.Random) -> None:
    lines = []
    for _ in range(rng.randint(3, 5)):
        ip = r.pii("IP_ADDRESS", fake.ipv4_public())
        auth = r.pii("USERNAME", fake.user_name()) if rng.random() < 0.5 else "-"
        paths: list[Callable[[], str]] = [
            lambda: f"/api/orders/{r.decoy(order_id(rng).lstrip('#').replace(' ', '-'))}",
            lambda: f"/reset?token={r.pii('SECRET', chars(rng, URLSAFE, 32))}&lang=en",
            lambda: f"/search?q=shoes&email={r.pii('EMAIL', fake.email())}",
            lambda: "/static/app.js",
        ]
        path = rng.choice(paths)()
        lines.append(
            f'{ip} - {auth} [{fake.date_time():%d/%b/%Y:%H:%M:%S} +0000] "GET {path} HTTP/1.1" '
            f'200 {rng.randint(200, 90000)} "-" "{fake.user_agent()}"'
        )
    lines.append(
        f"{r.decoy('127.0.0.1')} - - [{fake.date_time():%d/%b/%Y:%H:%M:%S} +0000] "
        f'"GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/{r.decoy(version(rng))}"'
    )
    r.text = "\n".join(lines) + "\n"


def sshd_log(r: Record, fake: Faker, rng: random.Random) -> None:
    lines = []
    host = fake.hostname(0)
    for _ in range(rng.randint(3, 5)):
        stamp = f"{fake.date_time():%b %d %H:%M:%S}"
        user = r.pii("USERNAME", fake.user_name())
        ip = r.pii("IP_ADDRESS", fake.ipv4_public())
        pid = rng.randint(1000, 99999)
        lines.append(
            rng.choice(
                [
                    f"{stamp} {host} sshd[{pid}]: Accepted publickey for {user} from {ip} port "
                    f"{rng.randint(1024, 65535)} ssh2: RSA SHA256:{chars(rng, B62 + '+/', 43)}",
                    f"{stamp} {host} sshd[{pid}]: Failed password for invalid user {user} from {ip} "
                    f"port {rng.randint(1024, 65535)} ssh2",
                    f"{stamp} {host} sshd[{pid}]: pam_unix(sshd:session): session opened for user "
                    f"{user}(uid={rng.randint(1000, 2000)}) by (uid=0) from {ip}",
                ]
            )
        )
    lines.append(
        f"{fake.date_time():%b %d %H:%M:%S} {host} sshd[{rng.randint(1000, 9999)}]: Server listening "
        f"on {r.decoy('0.0.0.0')} port 22. OpenSSH_{r.decoy('9.6p1')}"
    )
    lines.append(
        f"{fake.date_time():%b %d %H:%M:%S} {host} sshd[{rng.randint(1000, 9999)}]: Server listening "
        f"on {r.decoy('::1')} port 22."
    )
    r.text = "\n".join(lines) + "\n"


def json_tool_trace(r: Record, fake: Faker, rng: random.Random) -> None:
    user = fake.user_name()
    win_path = f"C:\\Users\\{user}\\Documents\\{fake.word()}.xlsx"
    trace = {
        "tool": "crm.lookup",
        "call_id": r.decoy(str(uuid.UUID(int=rng.getrandbits(128)))),
        "arguments": {
            "customer": r.pii("PERSON", fake.name()),
            "user": r.pii("USERNAME", user),
            "order": r.decoy(order_id(rng)),
        },
        "result": {
            "email": r.pii("EMAIL", fake.email()),
            "phone": r.pii("PHONE", phone(fake, rng)),
            "iban": r.pii("IBAN", fake.iban()),
            "not_an_iban": r.decoy(iban_failing(fake.iban())),
            "address": r.pii("STREET_ADDRESS", street_address(fake)),
            "attachment": win_path,
            "ssn": int(ssn(fake, rng).replace("-", "").replace(" ", ""))
            if fake._locales[0] == "en_US"
            else None,
            "card_last_used": r.pii("CREDIT_CARD", card_number(rng)),
            "isbn": r.decoy(isbn13(rng)),
            "client_version": r.decoy(version(rng)),
            "auth": "Bearer " + r.pii("SECRET", provider_secret(rng)),
            "score": round(rng.random(), 3),
            "active": True,
        },
    }
    if trace["result"]["ssn"] is not None:
        r.pii("US_SSN", str(trace["result"]["ssn"]))
    r.text = json.dumps(trace, ensure_ascii=False, indent=rng.choice([None, 2]))
    r.is_json = True


def sql_insert(r: Record, fake: Faker, rng: random.Random) -> None:
    rows = []
    for _ in range(rng.randint(2, 3)):
        rows.append(
            f"({rng.randint(1, 99999)}, '{r.pii('PERSON', fake.name()).replace(chr(39), chr(39) * 2)}', "
            f"'{r.pii('EMAIL', fake.email())}', '{r.pii('PHONE', phone(fake, rng))}', "
            f"'{r.pii('STREET_ADDRESS', street_address(fake)).replace(chr(39), chr(39) * 2)}', "
            f"'{r.decoy(order_id(rng))}', '{r.pii('IP_ADDRESS', fake.ipv4())}', "
            f"'{r.decoy(luhn_failing(rng))}')"
        )
    r.text = (
        "-- dump " + r.decoy(version(rng)) + "\n"
        "INSERT INTO customers (id, full_name, email, phone, address, last_order, last_ip, "
        "loyalty_no) VALUES\n" + ",\n".join(rows) + ";\n"
        f"INSERT INTO api_keys (owner, key) VALUES ('{r.pii('USERNAME', fake.user_name())}', "
        f"'{r.pii('SECRET', provider_secret(rng))}');\n"
    )


FORMATS: dict[str, Callable[[Record, Faker, random.Random], None]] = {
    "support_ticket": support_ticket,
    "env_file": env_file,
    "yaml_config": yaml_config,
    "shell_session": shell_session,
    "stack_trace": stack_trace,
    "nginx_access": nginx_access,
    "sshd_log": sshd_log,
    "json_tool_trace": json_tool_trace,
    "sql_insert": sql_insert,
}


# ---- names and addresses without the context the default recognizers key on ---------------
# Chat messages, meeting notes and commit messages where a name stands as a subject or object
# (no salutation, title, key or "customer" before it) and a street is written without its
# postcode, beside capitalised words that are not personal data (products, tools, places).

PRODUCTS = (
    "Visual Studio Code",
    "Google Chrome",
    "Microsoft Teams",
    "MacBook Pro",
    "Kubernetes",
    "PostgreSQL",
    "Apache Kafka",
    "Docker Desktop",
    "GitHub Actions",
    "Jira Service Desk",
    "Amazon S3",
    "Azure DevOps",
    "Slack",
    "Grafana",
    "Terraform Cloud",
    "Red Hat Enterprise Linux",
)


def bare_street(fake: Faker) -> str:
    """A street and house number as the locale writes it, without postcode or city."""
    return fake.street_address().replace("\n", ", ")


def chat_message(r: Record, fake: Faker, rng: random.Random) -> None:
    a, b = r.pii("PERSON", fake.name()), r.pii("PERSON", fake.name())
    r.text = rng.choice(
        [
            lambda: (
                f"{a} said the {r.decoy(rng.choice(PRODUCTS))} rollout for "
                f"{r.decoy(order_id(rng))} is blocked until {b} signs off."
            ),
            lambda: (
                f"Can you loop in {a}? They own the {r.decoy(rng.choice(PRODUCTS))} "
                f"integration and {b} is out until Monday."
            ),
            lambda: (
                f"Spoke with {a} and {b} this morning; both want {r.decoy(version(rng))} pinned."
            ),
        ]
    )()


def meeting_notes(r: Record, fake: Faker, rng: random.Random) -> None:
    people = [r.pii("PERSON", fake.name()) for _ in range(rng.randint(2, 3))]
    r.text = (
        f"Weekly sync ({fake.date()})\n"
        f"Attendees: {', '.join(people)}\n"
        f"- {people[0]} to migrate billing from {r.decoy(rng.choice(PRODUCTS))} by "
        f"{r.decoy(order_id(rng))}\n"
        f"- {people[1]} reviewed the {r.decoy(rng.choice(PRODUCTS))} costs; nothing to change\n"
    )


def commit_message(r: Record, fake: Faker, rng: random.Random) -> None:
    author = r.pii("PERSON", fake.name())
    r.text = (
        f"commit {r.decoy(chars(rng, '0123456789abcdef', 40))}\n"
        f"Merge: {chars(rng, '0123456789abcdef', 7)} {chars(rng, '0123456789abcdef', 7)}\n\n"
        f"    Fix retry loop in {r.decoy(rng.choice(PRODUCTS))} exporter ({r.decoy(order_id(rng))})\n\n"
        f"    Reviewed-with: {r.pii('PERSON', fake.name())}\n"
        f"    Thanks to {author} for the report.\n"
    )


def delivery_note(r: Record, fake: Faker, rng: random.Random) -> None:
    r.text = rng.choice(
        [
            lambda: (
                f"The courier left parcel {r.decoy(order_id(rng))} at "
                f"{r.pii('STREET_ADDRESS', bare_street(fake))} instead of the depot; "
                f"{r.pii('PERSON', fake.name())} picked it up later."
            ),
            lambda: (
                f"New office from next month: {r.pii('STREET_ADDRESS', bare_street(fake))}. "
                f"The {r.decoy(rng.choice(PRODUCTS))} licence moves with us."
            ),
            lambda: (
                f"Invoice {r.decoy(order_id(rng))} went to "
                f"{r.pii('STREET_ADDRESS', bare_street(fake))} by mistake, please resend it to "
                f"{r.pii('STREET_ADDRESS', street_address(fake))}."
            ),
        ]
    )()


UNCUED_FORMATS: dict[str, Callable[[Record, Faker, random.Random], None]] = {
    "chat_message": chat_message,
    "meeting_notes": meeting_notes,
    "commit_message": commit_message,
    "delivery_note": delivery_note,
}
UNCUED_SIZE = 200
UNCUED_SEED = 26


def generate(
    size: int = DEFAULT_SIZE,
    seed: int = SEED,
    formats: dict[str, Callable[[Record, Faker, random.Random], None]] = FORMATS,
) -> list[dict[str, Any]]:
    """`size` records cycling through formats and locales, the same for the same seed."""
    rng = random.Random(seed)
    random.seed(seed)  # Faker's password() and street_address() above draw from `random`
    fakers = {locale: Faker(locale) for locale in LOCALES}
    for index, locale in enumerate(LOCALES):
        fakers[locale].seed_instance(seed + index)
    records = []
    names = sorted(formats)
    for index in range(size):
        name = names[index % len(names)]
        locale = LOCALES[(index // len(names)) % len(LOCALES)]
        record = Record(name, locale)
        formats[name](record, fakers[locale], rng)
        record.planted = [(k, v) for k, v in record.planted if v]
        records.append(record.as_json(index))
    return records


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SIZE
    for record in generate(size):
        print(json.dumps(record, ensure_ascii=False))


if __name__ == "__main__":
    main()
