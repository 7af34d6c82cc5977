"""Per-line languages in seq2seq-translate (`language_columns`): each input line of a multilingual model
names its target language (and source language) in leading tab-separated columns,

    es<TAB>God is love.                    language_columns=[tgt_lang]
    es<TAB>en<TAB>Dios es amor.            language_columns=[src_lang,tgt_lang]

and every line is translated as a call with those src_lang/tgt_lang would translate it: its source starts
with its source language's token and its search forces its target language's token. Lines of all
languages are searched together, batched by length as always (as the server batches requests for several
languages). An empty line gives an empty line, whatever its columns.
"""

from __future__ import annotations

from collections.abc import Sequence

from omegaconf import DictConfig, ListConfig

from seq2seq.errors import UserError
from seq2seq.inference.translator import EncodedInput, Translator

CHOICES = (["tgt_lang"], ["src_lang", "tgt_lang"])
LINE_FILES = ("prefixes", "constraints", "glossary", "avoid")  # settings read per line of the input
Languages = tuple[str | None, str | None]  # (src_lang, tgt_lang); None: the call's own


def language_columns_setting(cfg: DictConfig) -> list[str]:
    """`language_columns`, checked: [] (off), [tgt_lang] or [src_lang,tgt_lang]; a language given both as
    a setting and as a column, and the per-line files, are refused."""
    value = cfg.get("language_columns") or []
    columns = [str(v) for v in value] if isinstance(value, ListConfig | list) else [str(value)]
    if not columns:
        return []
    if columns not in CHOICES:
        raise UserError(f"language_columns={columns} must be [tgt_lang] or [src_lang,tgt_lang] (the leading "
                        "tab-separated columns of each input line)")  # fmt: skip
    for name in columns:
        if cfg.get(name):
            raise UserError(f"{name}={cfg.get(name)} and language_columns={columns} both choose {name}; drop "
                            f"{name}= (each line names its own) or the column")  # fmt: skip
    used = [name for name in LINE_FILES if cfg.get(name)]
    if used:
        raise UserError(f"{used[0]}= does not combine with language_columns yet; translate each language in "
                        f"its own call (src_lang=, tgt_lang=) to use {used[0]}=")  # fmt: skip
    return columns


def split_language_columns(
    lines: Sequence[str], columns: list[str], cfg: DictConfig
) -> tuple[list[str], list[Languages]]:
    """Each line's text and (src_lang, tgt_lang): its columns, else the call's src_lang/tgt_lang."""
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
        languages.append((named.get("src_lang", cfg.get("src_lang")), named.get("tgt_lang", cfg.get("tgt_lang"))))
    return texts, languages


def encode_per_language(
    translator: Translator, texts: Sequence[str], languages: Sequence[Languages]
) -> tuple[EncodedInput, list[list[int]] | None]:
    """The texts encoded, each with its languages' Translator (for_languages), in input order, and per
    piece the target tokens its search forces first (None: none at all). An unknown code is a one-line
    error naming the first line that asks for it."""
    groups: dict[Languages, list[int]] = {}
    for index, pair in enumerate(languages):
        if texts[index].strip():
            groups.setdefault(pair, []).append(index)
    pieces: list[list[tuple[list[int], list[int]]]] = [[] for _ in texts]  # per text: (source, prefix)
    marked: list = [None] * len(texts)
    for (src_lang, tgt_lang), members in groups.items():
        try:
            chosen = translator.for_languages(src_lang=src_lang, tgt_lang=tgt_lang)
            encoded = chosen.encode([texts[i] for i in members])
            prefixes = chosen.target_prefixes(encoded.sources)
        except UserError as error:
            raise UserError(f"input line {members[0] + 1} ({src_lang or 'default'} -> {tgt_lang or 'default'}): "
                            f"{error}") from None  # fmt: skip
        for piece, owner in enumerate(encoded.owners):
            pieces[members[owner]].append((encoded.sources[piece], [] if prefixes is None else prefixes[piece]))
        for owner, found in enumerate(encoded.marked or []):
            marked[members[owner]] = found
    sources: list[list[int]] = []
    owners: list[int] = []
    forced: list[list[int]] = []
    for index, found in enumerate(pieces):
        for source, prefix in found or [([], [])]:  # an empty line: one empty piece, as encode gives it
            sources.append(source)
            owners.append(index)
            forced.append(prefix)
    has_markup = any(found is not None for found in marked)
    encoded = EncodedInput(sources=sources, owners=owners, n_texts=len(texts), marked=marked if has_markup else None)
    return encoded, forced if any(forced) else None
