"""Each leak class of issue 25 is removed whole, and what must not be destroyed survives."""

from __future__ import annotations

import json

import pytest

from agent_agency.privacy.pii import redact

OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2 + "T3BlbkFJ" + "Qw7eRt0yUi3oPa6s"
GITHUB = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
ANTHROPIC = "sk-ant-api03-" + "x7Yq2LmN9pR4tV8wZ3bC6dF1gH5jK0" * 3 + "AA"


def fragments(value: str) -> set[str]:
    return {value[i : i + 4] for i in range(max(1, len(value) - 3))}


def assert_removed(text: str, *values: str) -> str:
    """`text` redacted, checked to hold no 4-character fragment of `values` that `text` does not
    hold elsewhere."""
    output = redact(text)[0]
    rest = text
    for value in values:
        rest = rest.replace(value, "\x00")
    for value in values:
        survivors = {f for f in fragments(value) if f in output and f not in rest}
        assert not survivors, (text, output, value, survivors)
    return output


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        (f"OPENAI_API_KEY={OPENAI}", [OPENAI]),
        (f'curl -H "Authorization: Bearer {GITHUB}" https://api.github.com/user', [GITHUB]),
        (f"export ANTHROPIC_API_KEY={ANTHROPIC}", [ANTHROPIC]),
        (
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
        ),
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", ["AKIAIOSFODNN7EXAMPLE"]),
        (
            "token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            ["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
        ),
        (
            "key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q in the page",
            ["AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"],
        ),
        (
            "HF hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh used",
            ["hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"],
        ),
        ("GET /reset?token=Zx9_Qw8-Er7Ty6Ui5Op4&lang=en HTTP/1.1", ["Zx9_Qw8-Er7Ty6Ui5Op4"]),
        ("database:\n  password: P6Yq)eO!OSv2XR3b(5AM\n", ["P6Yq)eO!OSv2XR3b(5AM"]),
        ('{"client_secret": "9f8e7d6c5b4a39281706"}', ["9f8e7d6c5b4a39281706"]),
    ],
)
def test_secrets_are_removed_whole(text: str, secrets: list[str]) -> None:
    assert "[SECRET]" in assert_removed(text, *secrets)


def test_a_query_string_keeps_its_other_parameters() -> None:
    assert redact("/reset?token=Zx9_Qw8-Er7Ty6Ui5Op4&lang=en")[0] == "/reset?token=[SECRET]&lang=en"


@pytest.mark.parametrize(
    ("text", "kept", "removed"),
    [
        (
            "DATABASE_URL=postgresql://billing:s3cr@t!@10.0.0.5:5432/orders",
            "postgresql://",
            ["billing", "s3cr@t!"],
        ),
        (
            "CACHE=redis://:Hunter2Pass@cache.internal:6379/0",
            "cache.internal:6379/0",
            ["Hunter2Pass"],
        ),
        (
            "url: jdbc:mysql://report_user:Xy7!kq@db.internal:3306/sales",
            "db.internal:3306/sales",
            ["report_user", "Xy7!kq"],
        ),
        (
            "broker amqp://guest1:rabbitPw99@rabbit.local/",
            "rabbit.local/",
            ["guest1", "rabbitPw99"],
        ),
        ("get ftp://annaberg@files.example.org/pub", "files.example.org/pub", ["annaberg"]),
    ],
)
def test_credentials_in_urls_of_every_scheme(text: str, kept: str, removed: list[str]) -> None:
    output = assert_removed(text, *removed)
    assert kept in output


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("pay to DE89 3704 0044 0532 0130 00 today", "DE89 3704 0044 0532 0130 00"),
        ("IBAN GB82WEST12345698765432 ok", "GB82WEST12345698765432"),
        ("call 703-907-6867x8991 now", "703-907-6867x8991"),
        ("call +49 16 116 876211.", "+49 16 116 876211"),
        ("call +4915123456789 now", "+4915123456789"),
        ("call 415.555.2671 now", "415.555.2671"),
        ("SSN on file: 536228741", "536228741"),
        ('"ssn": 536228741,', "536228741"),
        ("card 4111 1111 1111 1111 ok", "4111 1111 1111 1111"),
    ],
)
def test_structured_values_leave_no_part_behind(text: str, value: str) -> None:
    assert_removed(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"attachment": "C:\\\\Users\\\\annab\\\\Documents\\\\q3.xlsx"}', "annab"),
        ("share: \\\\fileserver\\home$\\annab\\reports", "annab"),
        ("scp dump.sql annab@203.0.113.9:/home/annab/backups/", "annab"),
        ("annab@web-1:~/projects$ ls", "annab"),
        (
            "Mar 17 21:22:31 web sshd[811]: Accepted publickey for annab from 203.0.113.9 port 22",
            "annab",
        ),
        (
            "Mar 17 21:22:31 web sshd[811]: Failed password for invalid user annab "
            "from 203.0.113.9",
            "annab",
        ),
        ('203.0.113.9 - annab [17/Mar/2024:21:22:31 +0000] "GET / HTTP/1.1" 200 12', "annab"),
        ('{"user": "annab", "n": 1}', "annab"),
        ("My username is annab, thanks", "annab"),
    ],
)
def test_user_names_and_home_directories(text: str, value: str) -> None:
    assert_removed(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("write to anna.berg at example dot com", "anna.berg at example dot com"),
        ("write to anna.berg[at]example.com", "anna.berg[at]example.com"),
        ("write to anna.berg(at)example(dot)com", "anna.berg(at)example(dot)com"),
        ("/v2/users?email=anna.berg%40example.com&x=1", "anna.berg%40example.com"),
    ],
)
def test_obfuscated_emails(text: str, value: str) -> None:
    assert_removed(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Dear Anna Berg,\nthanks", "Anna Berg"),
        ("Sehr geehrte Frau Karla Wieloch-Bolnbach,", "Karla Wieloch-Bolnbach"),
        ("Bonjour Thérèse de la Roux,", "Thérèse de la Roux"),
        ("From: Allan O'Connor <a@example.org>", "Allan O'Connor"),
        ("Thanks,\nRichard", "Richard"),
        ("customer Sandra Roberts (id 7)", "Sandra Roberts"),
        ("owner:\n  name: Emmanuel Roussel de Humbert\n", "Emmanuel Roussel de Humbert"),
        (
            "Ship to 969 Rebecca Springs Apt. 492, North Kyle, VI 93027.",
            "969 Rebecca Springs Apt. 492, North Kyle, VI 93027",
        ),
        (
            "Office: Studio 58, Jackson Junction, Glenville E70 6ZA",
            "Studio 58, Jackson Junction, Glenville E70 6ZA",
        ),
        (
            "Lieferung an Agnes-Wesack-Straße 26, 66907 Werdau bitte",
            "Agnes-Wesack-Straße 26, 66907 Werdau",
        ),
        (
            "Envoyer au 496, rue Roger Seguin, 57583 Colas-sur-Duval",
            "496, rue Roger Seguin, 57583 Colas-sur-Duval",
        ),
        ("INSERT INTO t (id, full_name) VALUES (1, 'Goran Harloff');", "Goran Harloff"),
    ],
)
def test_person_names_and_addresses_in_context(text: str, value: str) -> None:
    assert_removed(text, value)


@pytest.mark.parametrize(
    "decoy",
    [
        "ORD-2023-839354",
        "INV92735143",
        "4111 1111 1111 1112",  # fails Luhn
        "GB83WEST12345698765432",  # fails the IBAN check
        "978-0-4066-0852-9",
        "3f2a9c1e-7d4b-4e8a-9c0f-1b2d3e4f5a6b",
        "127.0.0.1",
        "::1",
        "0.0.0.0",
        "localhost",
        "/usr/lib/python3.11/json/decoder.py",
        "/etc/nginx/nginx.conf",
        "v2.31.0",
        "5.15.0-91-generic",
        "https://api.github.com/v1/items",
    ],
)
def test_what_must_not_be_destroyed_survives(decoy: str) -> None:
    text = f"see {decoy} in the log"
    assert decoy in redact(text)[0]


def test_json_stays_json_with_the_same_keys_and_types() -> None:
    record = {
        "user": "annab",
        "email": "anna@example.org",
        "ssn": 536228741,
        "path": "C:\\Users\\annab\\x.txt",
        "auth": f"Bearer {GITHUB}",
        "nested": [{"phone": "+44 20 7946 0958", "ok": True, "score": 0.5}],
    }
    output = json.loads(redact(json.dumps(record))[0])
    assert output.keys() == record.keys()
    assert isinstance(output["ssn"], int) and output["ssn"] != record["ssn"]
    assert output["nested"][0]["ok"] is True and output["nested"][0]["score"] == 0.5
    assert "annab" not in json.dumps(output)
