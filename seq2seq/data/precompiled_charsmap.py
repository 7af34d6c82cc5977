"""A sentencepiece model's character normalisation (its `precompiled_charsmap`) applied the way the
Hugging Face `tokenizers` library applies it, which is not quite sentencepiece's own way.

sentencepiece rewrites the longest matching prefix at each position. `tokenizers`' Precompiled normaliser
(what NLLB's tokenizer runs) walks the text by grapheme cluster: a cluster shorter than 6 UTF-8 bytes
is replaced as a whole by the rewrite of its SHORTEST matching prefix (the rest of the cluster is
dropped), any other cluster character by character. We reproduce that, so our NLLB ids equal theirs.

The charsmap is a darts-clone double-array trie (keys: UTF-8 strings) followed by the NUL-terminated
rewrites its values point at. Grapheme clusters follow Unicode's rules (UAX #29) as far as they can
change a cluster shorter than 6 bytes: CR LF, controls, combining and spacing marks, ZWJ, prepended
marks and Hangul jamo. Emoji ZWJ sequences and regional-indicator pairs are not joined: their
clusters are 6 bytes or longer, so joining them changes nothing but the next cluster's start after a
mark following such a sequence, a case we leave out. Characters newer than Python's Unicode database
(unicodedata.unidata_version) are not known to be marks, so a cluster ending in one may be cut
differently than by tokenizers.
"""

from __future__ import annotations

import struct
import unicodedata

_SMALL_CLUSTER = 6  # bytes: shorter clusters are rewritten whole
_ZWJ, _ZWNJ = "\u200d", "\u200c"
_PREPEND = frozenset("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\u0d4e")
_EXTEND_EXTRA = frozenset("\u200c\uff9e\uff9f")
_SPACING_EXTRA = frozenset("\u0e33\u0eb3")


class PrecompiledCharsmap:
    """The normaliser of one sentencepiece model, as `tokenizers` runs it."""

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise ValueError("precompiled charsmap shorter than its header")
        (size,) = struct.unpack_from("<I", blob)
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"precompiled charsmap trie size {size} does not fit its {len(blob)} bytes")
        self._units = struct.unpack_from(f"<{size // 4}I", blob, 4)
        self._rewrites = blob[4 + size :]
        self._cache: dict[str, str | None] = {}

    def normalize(self, text: str) -> str:
        out: list[str] = []
        for cluster in grapheme_clusters(text):
            if len(cluster) > 1 and len(cluster.encode("utf-8")) < _SMALL_CLUSTER:
                whole = self._transform(cluster)
                if whole is not None:
                    out.append(whole)
                    continue
            for char in cluster:
                rewrite = self._transform(char)
                out.append(char if rewrite is None else rewrite)
        return "".join(out)

    def _transform(self, chunk: str) -> str | None:
        """The rewrite of the shortest trie key that starts `chunk`, or None when no key does."""
        if chunk not in self._cache:
            value = self._first_prefix_value(chunk.encode("utf-8"))
            if value is None:
                self._cache[chunk] = None
            else:
                end = self._rewrites.find(b"\0", value)
                text = self._rewrites[value : None if end < 0 else end]
                self._cache[chunk] = text.decode("utf-8", errors="replace")
        return self._cache[chunk]

    def _first_prefix_value(self, key: bytes) -> int | None:
        units = self._units
        if not units:
            return None
        position = _offset(units[0])
        for byte in key:
            if byte == 0:
                return None
            position ^= byte
            if position >= len(units):
                return None
            unit = units[position]
            if unit & ((1 << 31) | 0xFF) != byte:  # the unit's label
                return None
            position ^= _offset(unit)
            if (unit >> 8) & 1:  # a key ends here: its value sits in the next unit
                return units[position] & ((1 << 31) - 1) if position < len(units) else None
        return None


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def grapheme_clusters(text: str) -> list[str]:
    """`text` cut into (extended) grapheme clusters, as far as the module docstring says."""
    clusters: list[str] = []
    for char in text:
        if clusters and _joins(clusters[-1][-1], char):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters


def _joins(previous: str, char: str) -> bool:
    if previous == "\r" and char == "\n":
        return True
    if _is_control(previous) or _is_control(char):
        return False
    if _hangul_joins(previous, char):
        return True
    if char == _ZWJ or char in _EXTEND_EXTRA or char in _SPACING_EXTRA:
        return True
    if unicodedata.category(char) in ("Mn", "Me", "Mc") or 0x1F3FB <= ord(char) <= 0x1F3FF:
        return True
    return 0xE0020 <= ord(char) <= 0xE007F or previous in _PREPEND


def _is_control(char: str) -> bool:
    if char in (_ZWJ, _ZWNJ) or char in _PREPEND:
        return False
    return char in "\r\n" or unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cf")


def _hangul_type(char: str) -> str:
    code = ord(char)
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


def _hangul_joins(previous: str, char: str) -> bool:
    before, after = _hangul_type(previous), _hangul_type(char)
    if before == "L":
        return after in ("L", "V", "LV", "LVT")
    if before in ("LV", "V"):
        return after in ("V", "T")
    return before in ("LVT", "T") and after == "T"
