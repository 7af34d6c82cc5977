"""A paragraph as sentences (`segment=sentences`): split with sentencex (Wikimedia's segmenter, rules for
some 250 languages with fallbacks, nothing downloaded; the `serve` extra), each sentence searched as its
own piece in the same batch, and the translations joined with the whitespace that stood between the
sentences (a line break stays a line break). `segment=none` translates a text as one sentence.
"""

from __future__ import annotations

from typing import Any

from seq2seq.errors import UserError

SEGMENTS = ("none", "sentences")


def segment_setting(value: Any, *, setting: str = "segment") -> str:
    """ "none" or "sentences", checked."""
    if value not in SEGMENTS:
        raise UserError(f"{setting}={value!r} is not supported; choose {' or '.join(SEGMENTS)}")
    return str(value)


def sentences(text: str, language: str | None) -> tuple[list[str], list[str]]:
    """(the text's sentences without their edge whitespace, the whitespace between each sentence and the
    next); a text without sentence ends is one sentence. `language`: a language code whose rules apply
    (an NLLB code's first part; None: English's)."""
    found, gaps = [], []
    for segment in _segment(text, (language or "en").split("_")[0]):
        body = segment.strip()
        if not body:  # whitespace between sentences (a blank line): part of the gap
            if gaps:
                gaps[-1] += segment
            continue
        lead = segment[: len(segment) - len(segment.lstrip())]
        if found and lead:
            gaps[-1] += lead
        found.append(body)
        gaps.append(segment[len(segment.rstrip()) :])
    return found, gaps[:-1]


def _segment(text: str, language: str) -> list[str]:
    try:
        from sentencex import segment
    except ImportError:
        raise UserError("segment=sentences splits with sentencex; pip install 'seq2seq[serve]'") from None
    return list(segment(language, text))


__all__ = ["SEGMENTS", "segment_setting", "sentences"]
