"""One rule for the text the service stores: fact documents' free text (topo_facts.models.Text)
and a reservation's holder, labels and key (reservations.service) refuse the same characters."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from pydantic import TypeAdapter, ValidationError
from topo_facts.models import UNPRINTABLE, Text

from graphsvc.reservations.service import _printable

BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def test_the_rule_is_control_characters_line_breaks_surrogates_and_bidi_controls() -> None:
    """Every code point: refused exactly when it is a control character (Cc), a line or paragraph
    separator (Zl, Zp), a surrogate (Cs) or a bidirectional control."""
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        refused = c in BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cs")
        assert (UNPRINTABLE.search(c) is not None) == refused, hex(code)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("job-1", True),
        ("チーム\u3000a", True),  # an ideographic space
        ("a\u00a0b", True),  # a no-break space
        ("👩\u200d💻", True),  # an emoji joined by ZWJ
        ("a\x7fb", False),
        ("a\x85b", False),  # C1: next line
        ("a\u2028b", False),
        ("abc\u202edef", False),
        ("a\nb", False),
    ],
)
def test_facts_and_reservations_agree(text: str, ok: bool) -> None:
    assert _printable(text) is ok
    fact = TypeAdapter(Text)
    if ok:
        assert fact.validate_python(text) == text
    else:
        with pytest.raises(ValidationError):
            fact.validate_python(text)
