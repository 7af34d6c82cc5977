"""The sentencepiece model(s) of a training corpus: reused from a run directory, from the cache, or trained;
or a fine-tuning run's, taken from its checkpoint as they are (given_tokenizers).

Training reads a uniform sample of at most `sample_sentences` sentences (sample.py), so the time
and memory it takes stop growing with the corpus. The cache key hashes the settings and the bytes of
the training files; a run directory records the settings its tokenizer was trained with.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from seq2seq.data.binarize import cache_key, file_digest
from seq2seq.data.corpus import open_corpus_file
from seq2seq.data.sample import sample_pairs
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.tokenizer_formats import TextTokenizer, tokenizer_from_file
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

TOKENIZER_RECORD = "tokenizer.json"


@dataclass(frozen=True)
class TokenizerSettings:
    """How the sentencepiece model is trained (the `data.tokenizer` config group holds the same keys)."""

    vocab_size: int = 8000  # lowered automatically, with a warning, when the corpus is too small for it
    model_type: str = "unigram"  # unigram | bpe | char | word
    joint: bool = True  # one model for both languages (needed to share embeddings across sides)
    character_coverage: float = 1.0
    sample_sentences: int = 200_000  # trained on a uniform sample of this many sentences
    seed: int = 0


DEFAULT_TOKENIZER = TokenizerSettings()


def tokenizers_for(
    train_src: str | Path,
    train_tgt: str | Path,
    *,
    out: Path | None,
    settings: TokenizerSettings,
    encoding_errors: str,
    cache_dir: str | Path | None,
    num_threads: int,
    more_pairs: Sequence[tuple[str | Path, str | Path]] = (),
    user_symbols: Sequence[str] = (),
) -> tuple[Tokenizer, Tokenizer, list[Path]]:
    """The run's tokenizer(s) if `out` has them (resume); else from the cache, or trained (and cached).

    Returns (source, target, model files); source is target for a joint model. With `out` the models
    are saved there too, with a record of the settings. `more_pairs`: further training corpora, sampled
    with the first in proportion to their sizes; `user_symbols`: pieces the model must hold whole (the
    corpora's tags).
    """
    options = asdict(settings)
    if user_symbols:
        options["user_symbols"] = sorted(set(user_symbols))
    names = ["spm.model"] if options["joint"] else ["spm.src.model", "spm.tgt.model"]
    paths = [] if out is None else [out / name for name in names]
    pairs = [(train_src, train_tgt), *more_pairs]
    files = [str(path) for pair in pairs for path in pair]
    digests = [file_digest(path) for path in files]
    if paths and all(p.is_file() for p in paths):
        _check_record(out / TOKENIZER_RECORD, options, files, digests)
        log.info("tokenizer: reusing %s", ", ".join(map(str, paths)))
        return _loaded(paths)
    key = cache_key(
        json.dumps(options, sort_keys=True),
        encoding_errors,
        *(sorted(digests) if options["joint"] else digests),
    )
    cached = [Path(cache_dir) / f"{Path(name).stem}.{key}.model" for name in names] if cache_dir else []
    if cached and all(p.is_file() for p in cached):
        log.info("tokenizer: cache hit %s", ", ".join(map(str, cached)))
        models = [Tokenizer.from_file(p) for p in cached]
    else:
        models = train_tokenizers(pairs, options, digests, encoding_errors, num_threads)
        for model, path in zip(models, cached):
            model.save(path)
    if out is None:
        return models[0], models[-1], cached
    for model, path in zip(models, paths):
        model.save(path)
    temporary = out / f"{TOKENIZER_RECORD}.{os.getpid()}.tmp"
    trained_on = {"options": options, "train": files, "sha256": digests}
    temporary.write_text(json.dumps(trained_on, indent=2), encoding="utf-8")
    temporary.replace(out / TOKENIZER_RECORD)
    return _loaded(paths)


@dataclass(frozen=True)
class GivenTokenizers:
    """Tokenizer(s) a run takes as they are, not trained: a fine-tuning run's, from its checkpoint."""

    src: TextTokenizer
    tgt: TextTokenizer  # the same object as src for one joint tokenizer
    origin: str  # where they come from (the init_from checkpoint), for the log and the run's record


def save_given_tokenizers(given: GivenTokenizers, *, out: Path | None) -> list[Path]:
    """Save `given` in `out` as trained ones are saved (one file when joint), with a record of where they
    came from (a later run in `out` that would train its own is refused: _check_record). Returns the
    files."""
    if out is None:
        return []
    src, tgt, origin = given.src, given.tgt, given.origin
    models = [src] if src is tgt else [src, tgt]
    paths = [out / name for name in (["spm.model"] if src is tgt else ["spm.src.model", "spm.tgt.model"])]
    out.mkdir(parents=True, exist_ok=True)
    for model, path in zip(models, paths):
        model.save(path)
    digests = [hashlib.sha256(model.to_bytes()).hexdigest() for model in models]
    record = {"init_from": origin, "sha256": digests}
    temporary = out / f"{TOKENIZER_RECORD}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(record, indent=2), encoding="utf-8")
    temporary.replace(out / TOKENIZER_RECORD)
    log.info("tokenizer: init_from's (%s), none trained; saved as %s", origin, ", ".join(map(str, paths)))
    return paths


def _check_record(record: Path, options: dict, train: list[str], digests: list[str]) -> None:
    """A run directory's tokenizer must have been trained with these settings (keys it predates aside)
    on this training text: by content, so a moved corpus keeps it and another one is refused."""
    trained_on = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}
    if "init_from" in trained_on:
        raise UserError(
            f"{record.parent} holds the tokenizer of init_from={trained_on['init_from']}, and this run would "
            "train its own; pass that init_from again, or give this run a new run_name (or hydra.run.dir)"
        )
    saved = trained_on.get("options")
    if saved is not None and saved != {key: options[key] for key in saved if key in options}:
        raise UserError(
            f"{record.parent} holds a tokenizer trained with {saved}, not {options}; "
            "use a new run directory or the original tokenizer settings"
        )
    old = trained_on.get("sha256")
    same = sorted if options["joint"] else list  # a joint model is the same for either direction
    if old is not None and same(old) != same(digests):
        raise UserError(
            f"{record.parent} holds a tokenizer trained on {_corpus(trained_on.get('train', []), old)}, "
            f"not on {_corpus(train, digests)}; train on another corpus under a new run_name "
            "(or hydra.run.dir)"
        )


def _corpus(files: Sequence[str], digests: Sequence[str]) -> str:
    """'a.en + a.es (sha256 1234abcd5678…, …)': files and contents, which may differ at the same path."""
    return f"{' + '.join(files)} (sha256 {', '.join(d[:12] + '…' for d in digests)})"


def train_tokenizers(
    pairs: Sequence[tuple[str | Path, str | Path]],
    options: dict,
    digests: Sequence[str],
    encoding_errors: str,
    num_threads: int,
) -> list[Tokenizer]:
    """One joint model, or one per side, trained on a uniform sample of the training pairs.

    A joint model sees `sample_sentences` sentences (as many pairs' both sides), each side's model
    that many of its own. The sample depends only on the pair count and the seed, so en->es and es->en
    draw the same pairs, and a corpus smaller than the sample is used whole, in order.
    """
    joint, size = options["joint"], options["sample_sentences"]
    src, tgt = sample_corpora(pairs, size=max(1, size // 2 if joint else size), seed=options["seed"],
                              encoding_errors=encoding_errors)  # fmt: skip
    settings = {key: options[key] for key in ("vocab_size", "model_type", "character_coverage", "seed")}
    settings["num_threads"] = num_threads
    settings["user_symbols"] = tuple(options.get("user_symbols", ()))
    kind = f"{options['model_type']} model{'' if joint else 's'} of {options['vocab_size']} pieces"
    if joint:
        # The same text in the same order for en->es and es->en, so both directions get one model.
        texts = src + tgt if digests[0] <= digests[1] else tgt + src
        log.info("tokenizer: training a joint %s on %d sentences", kind, len(texts))
        return [Tokenizer.train(texts, **settings)]
    log.info("tokenizer: training separate %s on %d sentences each", kind, len(src))
    return [Tokenizer.train(src, **settings), Tokenizer.train(tgt, **settings)]


def sample_corpora(
    pairs: Sequence[tuple[str | Path, str | Path]], *, size: int, seed: int, encoding_errors: str
) -> tuple[list[str], list[str]]:
    """Up to `size` pairs drawn uniformly from the corpora together: each gives its share of the lines."""
    if len(pairs) == 1:
        return sample_pairs(*pairs[0], size=size, seed=seed, encoding_errors=encoding_errors)
    lines = [count_lines(src) for src, _ in pairs]
    total = max(sum(lines), 1)
    src: list[str] = []
    tgt: list[str] = []
    for (source, target), count in zip(pairs, lines):
        part = sample_pairs(source, target, size=max(1, round(size * count / total)), seed=seed,
                            encoding_errors=encoding_errors)  # fmt: skip
        src, tgt = src + part[0], tgt + part[1]
    return src, tgt


def count_lines(path: str | Path) -> int:
    """Lines of a corpus file (plain or .gz), counted in blocks of bytes."""
    with open_corpus_file(path) as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def _loaded(paths: list[Path]) -> tuple[TextTokenizer, TextTokenizer, list[Path]]:
    tokenizers = [tokenizer_from_file(p) for p in paths]  # a fine-tuning run's may be an imported one
    return tokenizers[0], tokenizers[-1], paths
