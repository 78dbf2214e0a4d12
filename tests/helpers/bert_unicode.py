"""Writes ``graphstrata/bindings/embed/bert_unicode.py`` from the ``tokenizers`` library.

``tokenizers`` classifies characters with its own Unicode tables (the ``unicode_categories``
crate for "other", punctuation and nonspacing marks, an NFD table of its own, Rust's
``char::to_lowercase``), whose Unicode versions differ from each other and from Python's
``unicodedata``. The WordPiece tokenizer (``bindings/embed/wordpiece.py``) therefore reads
these tables, probed here one code point at a time from the components of ``tokenizers``
(``BertNormalizer`` with one flag at a time, ``NFD``, ``BertPreTokenizer``).
``test_wordpiece.py`` checks the committed module against :func:`render`;
``python -m tests.helpers.bert_unicode`` rewrites it.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

MODULE = Path(__file__).resolve().parents[2] / "graphstrata/bindings/embed/bert_unicode.py"

HEADER = '''"""Character tables of the ``tokenizers`` library's BERT pipeline (generated).

Written by ``python -m tests.helpers.bert_unicode`` from ``tokenizers`` {version}; do not
edit. Ranges are inclusive, in hex. ``OTHER``: dropped by ``clean_text`` (its Unicode
"other" characters, NUL and U+FFFD); ``PUNCT``: isolated by ``BertPreTokenizer``; ``MN``:
dropped after NFD when accents are stripped; ``DECOMPOSE``: changed by its NFD (to what
``unicodedata`` gives them); ``LOWER``: changed by lowercasing, to ``c.lower()`` except
for ``LOWER_EXCEPTIONS`` (``code:lowered`` in hex, ``+`` between characters).
"""
'''


def _ranges(codes: list[int]) -> str:
    out: list[str] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1][1] = code
        else:
            out.append([code, code])  # type: ignore[arg-type]
    return " ".join(f"{a:x}" if a == b else f"{a:x}-{b:x}" for a, b in out)


def _wrap(name: str, text: str) -> str:
    lines, line = [], ""
    for item in text.split(" "):
        if len(line) + len(item) + 1 > 88:
            lines.append(line)
            line = ""
        line = f"{line} {item}" if line else item
    lines.append(line)
    body = "\n".join(f'    "{ln} "' for ln in lines)
    return f"{name} = (\n{body}\n)\n"


def tables() -> dict[str, str]:
    """Probe ``tokenizers`` over every code point (~10 s)."""
    from tokenizers import normalizers, pre_tokenizers

    def bert(**flags: bool) -> normalizers.Normalizer:
        base = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False)
        return normalizers.BertNormalizer(**{**base, "lowercase": False, **flags})

    clean, strip, lower = bert(clean_text=True), bert(strip_accents=True), bert(lowercase=True)
    nfd, pre = normalizers.NFD(), pre_tokenizers.BertPreTokenizer()
    other, punct, mn, decompose, lowered = [], [], [], [], []
    exceptions: list[str] = []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        if clean.normalize_str(ch) == "":
            other.append(code)
        if len(pre.pre_tokenize_str(f"a{ch}b")) == 3:
            punct.append(code)
        decomposed = nfd.normalize_str(ch)
        if decomposed != ch:
            if decomposed != unicodedata.normalize("NFD", ch):
                raise AssertionError(f"NFD of U+{code:04X} differs from unicodedata's")
            decompose.append(code)
        elif strip.normalize_str(ch) == "":
            mn.append(code)
        low = lower.normalize_str(ch)
        if low != ch:
            lowered.append(code)
            if low != ch.lower():
                exceptions.append(f"{code:x}:" + "+".join(f"{ord(c):x}" for c in low))
    return {
        "OTHER": _ranges(other),
        "PUNCT": _ranges(punct),
        "MN": _ranges(mn),
        "DECOMPOSE": _ranges(decompose),
        "LOWER": _ranges(lowered),
        "LOWER_EXCEPTIONS": " ".join(exceptions),
    }


def render() -> str:
    """The text of the tables module for the installed ``tokenizers``."""
    import tokenizers

    parts = [HEADER.format(version=tokenizers.__version__)]
    parts += [_wrap(name, text) for name, text in tables().items()]
    return "\n".join(parts)


if __name__ == "__main__":
    MODULE.write_text(render(), encoding="utf-8")
    print(f"wrote {MODULE}")
