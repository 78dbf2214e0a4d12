"""The published ``pattern``s say exactly what the engine refuses, in any regex dialect."""

from __future__ import annotations

import re
import sys

from graphstrata.bindings.server.models import DOC_ID_PATTERN, NOT_BLANK, TEXT_PATTERN

WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def test_blank_means_what_str_isspace_means():
    # The engine refuses text for which ``not text.strip()``: every such character is blank.
    assert [hex(ord(c)) for c in WHITESPACE if re.match(NOT_BLANK, c)] == []
    for c in WHITESPACE:
        assert not re.fullmatch(TEXT_PATTERN, f"{c}{c}")
        assert not re.fullmatch(DOC_ID_PATTERN, c)
    # U+FEFF is whitespace to ECMA's \s but not to Python: a text of it is accepted.
    assert re.fullmatch(TEXT_PATTERN, "\ufeff") and re.fullmatch(TEXT_PATTERN, " a\n")
    assert not re.fullmatch(TEXT_PATTERN, "a\x00")
    assert re.fullmatch(DOC_ID_PATTERN, "dir/doc 1.md") and not re.fullmatch(DOC_ID_PATTERN, "a\tb")


def test_the_patterns_use_no_dialect_dependent_class():
    for pattern in (NOT_BLANK, TEXT_PATTERN, DOC_ID_PATTERN):
        assert "\\s" not in pattern and "\\S" not in pattern
