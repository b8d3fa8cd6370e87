"""Audit 25, redaction (semantics §9, language §5.6, std/redact): canaries and card shapes."""
from __future__ import annotations

import pytest
from test_examples import _rule

from afp_dsl.redaction import Redactor

# ---------------------------------------------------------------- std/redact cards
CARDS_FOUND = [
    ("4111\u00a01111\u00a01111\u00a01111", "[CARD]"),          # no-break spaces
    ("4111\u202f1111\u202f1111\u202f1111", "[CARD]"),          # narrow no-break spaces
    ("4111\u2009111111\u200911111", "4111\u2009111111\u200911111"),  # not a layout, not Luhn
    ("3782\u00a0822463\u00a010005", "[CARD]"),                  # Amex 4-6-5
    ("card 4111\u00a01111\u00a01111\u00a01111\u00a0123", "card [CARD]\u00a0123"),  # its CVV
    ("card4111111111111111", "card[CARD]"),                     # glued to letters
    ("4111111111111111exp", "[CARD]exp"),
    ("id_4111111111111111", "id_[CARD]"),
    ("VISA4111111111111111 ok", "VISA[CARD] ok"),
    ("x4111 1111 1111 1111y", "x[CARD]y"),
]
CARDS_KEPT = [
    "4111111111111112abc",                                    # Luhn-invalid
    "IBAN DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000",
    "FR76\u00a03000\u00a06000\u00a00112\u00a03455\u00a07890\u00a0189",
    "NO4222222222222",                                         # an IBAN glued to its country
    "ISBN9780110003702",
    "a41111111111111111111b",                                  # a longer run of digits
]


@pytest.mark.parametrize("text,want", CARDS_FOUND)
def test_std_cards_finds_cards_with_no_break_spaces_or_glued_to_letters(text, want):
    assert Redactor([_rule("cards")]).scrub_text(text) == want


@pytest.mark.parametrize("text", CARDS_KEPT)
def test_std_cards_still_leaves_other_numbers_alone(text):
    assert Redactor([_rule("cards")]).scrub_text(text) == text
