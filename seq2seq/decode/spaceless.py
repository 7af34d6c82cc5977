"""Scripts written without spaces between words: Han (Chinese, Japanese kanji), Hiragana, Katakana, Thai,
Lao, Khmer and Myanmar. Terminology finds words by spaces and by letters next to letters; in these
scripts neither marks a word's end, so a letter of one of them always counts as standing next to a word
boundary: a glossary finds "神" in "神说" (seq2seq.inference.glossary), a target piece of such a script never
continues the word before it, and a target phrase in one is split as inside a sentence, without the
word-start mark (seq2seq.decode.constraints, seq2seq.inference.constraint_input). Korean is written with
spaces and is not among them.
"""

from __future__ import annotations

# Unicode blocks (first and last code point) of the letters of those scripts.
SPACELESS_BLOCKS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # vertical kana repeat marks
    (0x3040, 0x30FF),  # Hiragana, Katakana (with the prolonged sound mark)
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA9E0, 0xA9FF),  # Myanmar extended B
    (0xAA60, 0xAA7F),  # Myanmar extended A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x1B000, 0x1B16F),  # kana supplement and extended
    (0x20000, 0x323AF),  # CJK unified ideographs extensions B to H, compatibility supplement
)

# The same blocks as the inside of a regular expression's character class.
SPACELESS_CLASS = "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in SPACELESS_BLOCKS)


def written_without_spaces(char: str) -> bool:
    """Whether the character `char` is a letter of a script written without spaces (module docstring)."""
    point = ord(char)
    return any(first <= point <= last for first, last in SPACELESS_BLOCKS)


__all__ = ["SPACELESS_BLOCKS", "SPACELESS_CLASS", "written_without_spaces"]
