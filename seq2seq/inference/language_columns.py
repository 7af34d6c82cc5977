"""Per-line languages of a file to translate (seq2seq-translate's `language_columns`): each input line
of a multilingual model names its target language (and source language) in leading tab-separated
columns,

    es<TAB>God is love.                    language_columns=[tgt_lang]
    es<TAB>en<TAB>Dios es amor.            language_columns=[src_lang,tgt_lang]

and every line becomes a text with those src_lang/tgt_lang (seq2seq.inference.request.TextRequest): the
pipeline encodes it with its source language's token and forces its target language's token; lines of
all languages are searched together, batched by length as always. An empty line gives an empty line,
whatever its columns. A glossary is for one direction, so it does not combine with per-line languages.
"""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.errors import UserError

CHOICES = (["tgt_lang"], ["src_lang", "tgt_lang"])
Languages = tuple[str | None, str | None]  # (src_lang, tgt_lang); None: the Translator's own


def checked_columns(columns: Sequence[str], *, src_lang: str | None, tgt_lang: str | None,
                    glossary: bool = False) -> list[str]:  # fmt: skip
    """`language_columns`, checked: [] (off), [tgt_lang] or [src_lang,tgt_lang]; a language given both as
    a setting and as a column is refused, and so is a glossary (it is for one direction)."""
    columns = [str(column) for column in columns]
    if not columns:
        return []
    if columns not in CHOICES:
        raise UserError(f"language_columns={columns} must be [tgt_lang] or [src_lang,tgt_lang] (the leading "
                        "tab-separated columns of each input line)")  # fmt: skip
    given = {"src_lang": src_lang, "tgt_lang": tgt_lang}
    for name in columns:
        if given[name]:
            raise UserError(f"{name}={given[name]} and language_columns={columns} both choose {name}; drop "
                            f"{name}= (each line names its own) or the column")  # fmt: skip
    if glossary:
        raise UserError(
            "glossary= does not combine with language_columns: a glossary is for one direction; "
            "translate each language in its own call (src_lang=, tgt_lang=) to use glossary="
        )
    return columns


def split_language_columns(
    lines: Sequence[str], columns: list[str], *, src_lang: str | None = None, tgt_lang: str | None = None
) -> tuple[list[str], list[Languages]]:
    """Each line's text and (src_lang, tgt_lang): its columns, else `src_lang` / `tgt_lang`."""
    texts: list[str] = []
    languages: list[Languages] = []
    shown = "<TAB>".join(columns) + "<TAB>text"
    for number, line in enumerate(lines, 1):
        if not line.strip():
            texts.append("")
            languages.append((None, None))
            continue
        parts = line.split("\t", len(columns))
        codes = [part.strip() for part in parts[: len(columns)]]
        if len(parts) <= len(columns) or not all(codes):
            raise UserError(f"input line {number} is not {shown} (language_columns={columns}): "
                            f"{line[:60]!r}")  # fmt: skip
        named = dict(zip(columns, codes))
        texts.append(parts[-1])
        languages.append((named.get("src_lang", src_lang), named.get("tgt_lang", tgt_lang)))
    return texts, languages


__all__ = ["CHOICES", "Languages", "checked_columns", "split_language_columns"]
