"""Parallel text in tab-separated files ("source<TAB>target<TAB>score..."), split into plain files."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path

from seq2seq.data.corpus import CorpusStats, check_policy, decode_line, iter_raw_lines, normalize
from seq2seq.errors import UserError
from seq2seq.files import temporary_path

log = logging.getLogger(__name__)


def iter_tsv(
    path: str | Path, *, src_column: int = 0, tgt_column: int = 1, encoding_errors: str = "strict"
) -> Iterator[tuple[str, str]]:
    """Normalised sentence pairs from the given columns of a TSV file (plain or .gz), one line at a time."""
    check_policy(encoding_errors)
    needed = max(src_column, tgt_column) + 1
    for number, raw in enumerate(iter_raw_lines(path), start=1):
        columns = decode_line(raw, path, number, encoding_errors)[0].split("\t")
        if len(columns) < needed:
            raise UserError(
                f"{path}:{number}: expected at least {needed} tab-separated columns, found {len(columns)}; "
                "each line must hold a source and a target sentence"
            )
        yield normalize(columns[src_column]), normalize(columns[tgt_column])


def prepare_tsv(
    *,
    out_dir: str | Path,
    tsv: Mapping[str, str | None],
    src_lang: str,
    tgt_lang: str,
    src_column: int = 0,
    tgt_column: int = 1,
    encoding_errors: str = "strict",
    force: bool = False,
    progress: bool = True,
) -> dict[str, dict[str, int]]:
    """Split TSV files (``tsv``: split name -> path) into ``{split}.{src_lang}`` and ``{split}.{tgt_lang}``.

    The files are rewritten on every call, through temporary files renamed when complete, so
    ``force`` and ``progress`` change nothing; they exist because every recipe takes them.
    """
    del force, progress
    out = Path(out_dir)
    stats = {}
    for split in ("train", "dev", "test"):
        path = tsv.get(split)
        if path is None:
            if split != "test":
                raise UserError(f"data.tsv.{split} is not set; give the path of the {split} TSV file")
            continue
        out.mkdir(parents=True, exist_ok=True)
        pairs = iter_tsv(path, src_column=src_column, tgt_column=tgt_column, encoding_errors=encoding_errors)
        stats[split] = _write_split(pairs, out / f"{split}.{src_lang}", out / f"{split}.{tgt_lang}")
        log.info(
            "%s: wrote %d pairs to %s",
            path,
            stats[split]["pairs"],
            out / f"{split}.{{{src_lang},{tgt_lang}}}",
        )
    return stats


def _write_split(pairs: Iterator[tuple[str, str]], src_path: Path, tgt_path: Path) -> dict[str, int]:
    temporaries = [temporary_path(path) for path in (src_path, tgt_path)]
    stats = CorpusStats()
    try:
        with (
            open(temporaries[0], "w", encoding="utf-8") as src,
            open(temporaries[1], "w", encoding="utf-8") as tgt,
        ):
            for source, target in pairs:
                src.write(source + "\n")
                tgt.write(target + "\n")
                stats.add(source, target)
    except BaseException:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
        raise
    temporaries[0].replace(src_path)
    temporaries[1].replace(tgt_path)
    return stats.as_dict()
