"""The `data` config group -> arguments of seq2seq.data.pipeline.prepare_training_data (the one adapter).

Kept free of torch: seq2seq-prepare's encoding workers import the command's module again, and a
worker that only tokenizes should not carry PyTorch's memory.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from hydra.utils import to_absolute_path
from omegaconf import DictConfig, ListConfig, OmegaConf

from seq2seq.data.mixing import CorpusSpec
from seq2seq.data.noise import NoiseSettings
from seq2seq.data.pipeline import FilterSettings, TrainingData, prepare_training_data
from seq2seq.data.renamed_settings import FILTER_KEYS, TRANSFORM_TARGETS, current_filter
from seq2seq.data.tokenizer import is_language_token, language_token
from seq2seq.data.vocabulary import GivenTokenizers, TokenizerSettings
from seq2seq.errors import UserError, deprecation_message

log = logging.getLogger(__name__)
# `data` overrides on the command line under an old name (accepted for one release, with a warning).
DEPRECATED_DATA_KEYS = {f"data.filter.{old}": f"data.filter.{new}" for old, new in FILTER_KEYS.items()}


def _path(value: Any) -> Path:
    return Path(to_absolute_path(str(value)))


def prepared_corpus(
    data_cfg: DictConfig,
    *,
    out_dir: Path | None,
    progress: bool,
    given_tokenizers: GivenTokenizers | None = None,
) -> TrainingData:
    """`prepare_training_data` with the arguments a `data` config group gives (the one adapter);
    `given_tokenizers` (a fine-tuning run's) replace the ones `data.tokenizer` would train."""
    splits = transform_splits(data_cfg)
    return prepare_training_data(
        corpora=training_corpora(data_cfg),
        transforms=cleaning_transforms(data_cfg) if "train" in splits else [],
        transform_dev="dev" in splits,
        dev_corpora=dev_corpora(data_cfg),
        out_dir=out_dir,
        cache_dir=_path(data_cfg.cache_dir),
        encoding_errors=str(data_cfg.encoding_errors),
        workers=data_cfg.get("workers"),
        progress=progress,
        tokenizer=TokenizerSettings(**OmegaConf.to_container(data_cfg.tokenizer, resolve=True)),
        given_tokenizers=given_tokenizers,
        filters=filter_settings(data_cfg.filter),
        alignment=alignment_setting(data_cfg),
        temperature=temperature_setting(data_cfg),
    )


def temperature_setting(data_cfg: DictConfig) -> float | None:
    """`data.temperature`: None (the corpora's weights decide), or T > 0 for T-sampling over the corpora."""
    value = data_cfg.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"data.temperature={value!r} must be a number above 0 (1: proportional to the corpus "
                        "sizes; 5: flatter) or null (the corpora's weights)")  # fmt: skip
    return float(value)


def alignment_setting(data_cfg: DictConfig) -> bool:
    """`data.alignment`: word links for guided alignment training (true/false)."""
    value = data_cfg.get("alignment", False)
    if not isinstance(value, bool):
        raise UserError(f"data.alignment={value!r} must be true or false")
    return value


def filter_settings(filter_cfg: DictConfig) -> FilterSettings:
    """`data.filter`, checked for unknown keys; old key names work for one release, with a warning line."""
    settings = current_filter(OmegaConf.to_container(filter_cfg, resolve=True))
    known = [field.name for field in dataclasses.fields(FilterSettings)]
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise UserError(f"data.filter has unknown keys {unknown}; it takes {known}")
    return FilterSettings(**settings)


CORPUS_KEYS = {"src", "tgt", "weight", "tag", "noise", "name", "src_lang", "tgt_lang"}


def corpus_entries(data_cfg: DictConfig) -> list[tuple[str, Any]]:
    """(config key, entry) of every training corpus: `data.train` (a mapping {src, tgt, ...}, or a list
    of them in a data config of one's own), then each of `data.extra_train`."""
    train, extra = data_cfg.train, data_cfg.get("extra_train") or []
    if not isinstance(extra, ListConfig | list):
        raise UserError(
            "data.extra_train must be a list of corpora: [{src: FILE, tgt: FILE, tag: <bt>}, ...]"
        )
    entries = [("train", train)] if isinstance(train, DictConfig) else []
    if isinstance(train, ListConfig | list):
        entries = [(f"train[{i}]", entry) for i, entry in enumerate(train)]
    if not entries:
        raise UserError("data.train must be {src: FILE, tgt: FILE} or a non-empty list of such corpora")
    return entries + [(f"extra_train[{i}]", entry) for i, entry in enumerate(extra)]


def training_corpora(data_cfg: DictConfig) -> list[CorpusSpec]:
    """The training corpora (see corpus_entries), checked: files named, weights, tags and noise valid.
    Weight 0 switches one corpus off, but not all of them: an epoch of no pairs trains nothing (the run
    would end at once with an untrained best.pt)."""
    entries = corpus_entries(data_cfg)
    corpora = [_corpus(entry, f"data.{key}") for key, entry in entries]
    _check_languages(corpora, [f"data.{key}" for key, _ in entries], data_cfg)
    if not any(corpus.weight > 0 for corpus in corpora):
        zeros = ", ".join(f"data.{key}.weight=0" for key, _ in entries)
        raise UserError(f"{zeros}: an epoch holds no pairs, so nothing would be trained; give at least one "
                        "corpus a weight above 0 (1: every pair once per epoch)")  # fmt: skip
    return corpora


def _corpus(entry: Any, where: str) -> CorpusSpec:
    if not isinstance(entry, DictConfig) or entry.get("src") is None or entry.get("tgt") is None:
        raise UserError(f"{where} must name its files: {{src: FILE, tgt: FILE}} (plus weight, tag, noise)")
    unknown = sorted(set(entry.keys()) - CORPUS_KEYS)
    if unknown:
        raise UserError(f"{where} has unknown keys {unknown}; a corpus takes {sorted(CORPUS_KEYS)}")
    weight = float(entry.get("weight", 1.0) if entry.get("weight") is not None else 1.0)
    if not weight >= 0:
        raise UserError(f"{where}.weight={weight} must be 0 or more (times each pair is seen per epoch)")
    tag = entry.get("tag")
    if tag is not None and (not str(tag).strip() or " " in str(tag)):
        raise UserError(f"{where}.tag={tag!r} must be one token without spaces, such as <bt>")
    if tag is not None and is_language_token(str(tag)):
        raise UserError(f"{where}.tag={tag!r} is named as a language token (__xx__), which would make the "
                        "model multilingual; name the tag another way, such as <bt>")  # fmt: skip
    noise = entry.get("noise")
    try:
        noise = None if noise is None else NoiseSettings(**OmegaConf.to_container(noise, resolve=True))
    except TypeError as error:
        raise UserError(f"{where}.noise: {error}; it takes drop, mask and shuffle_distance") from None
    languages = [entry.get(key) for key in ("src_lang", "tgt_lang")]
    for key, code in zip(("src_lang", "tgt_lang"), languages):
        if code is not None:
            language_token(str(code))  # a code that cannot name a token: a one-line error
    return CorpusSpec(src=str(_path(entry.src)), tgt=str(_path(entry.tgt)), weight=weight,
                      tag=None if tag is None else str(tag), noise=noise,
                      name=str(entry.get("name") or _default_name(entry.src, *languages)),
                      src_lang=None if languages[0] is None else str(languages[0]),
                      tgt_lang=None if languages[1] is None else str(languages[1]))  # fmt: skip


def _default_name(src: Any, src_lang: Any, tgt_lang: Any) -> str:
    """A corpus's name in logs and stats: its source file's stem (train), with its direction in a
    multilingual run (train.en-es), where one file pair often serves both directions."""
    stem = Path(str(src)).stem
    return f"{stem}.{src_lang}-{tgt_lang}" if src_lang and tgt_lang else stem


def _check_languages(corpora: list[CorpusSpec], where: list[str], data_cfg: DictConfig) -> None:
    """A multilingual run names both languages of every corpus and of each dev set, and gives no corpus a
    source tag besides its language (one token starts a source)."""
    directions = dev_directions(data_cfg)
    if not any(corpus.src_lang or corpus.tgt_lang for corpus in corpora):
        if directions:
            raise UserError("data.dev names src_lang/tgt_lang but no training corpus does; name them on "
                            "every corpus of data.train for a multilingual run, or on none")  # fmt: skip
        return
    for corpus, place in zip(corpora, where):
        if not (corpus.src_lang and corpus.tgt_lang):
            raise UserError(f"{place} needs src_lang and tgt_lang: in a multilingual run every corpus names "
                            "both (e.g. {src: FILE, tgt: FILE, src_lang: en, tgt_lang: es})")  # fmt: skip
        if corpus.tag:
            raise UserError(f"{place}.tag={corpus.tag!r}: a multilingual run's sources start with their "
                            "language token; drop the tag")  # fmt: skip
    if not directions:
        raise UserError("a multilingual run validates named directions: give data.dev its src_lang and "
                        "tgt_lang too, or make it a list with one dev set per direction")  # fmt: skip


DEV_KEYS = {"src", "tgt", "src_lang", "tgt_lang", "name"}


def split_entries(data_cfg: DictConfig, split: str = "dev") -> list[tuple[str, DictConfig]]:
    """(config key, entry) of every dev (or test) set: `data.<split>` (a mapping {src, tgt[, src_lang,
    tgt_lang]}), or each entry of it as a list, one per direction of a multilingual run. A test split
    may be absent (no entries); a dev split may not."""
    value = data_cfg.get(split)
    entries: list[tuple[str, Any]] = []
    if isinstance(value, DictConfig) and (split == "dev" or value.get("src") is not None):
        entries = [(split, value)]
    elif isinstance(value, ListConfig | list):
        entries = [(f"{split}[{i}]", entry) for i, entry in enumerate(value)]
    if not entries and split == "dev":
        raise UserError("data.dev must be {src: FILE, tgt: FILE}, or in a multilingual run a list of them, "
                        "one per direction, each with src_lang and tgt_lang")  # fmt: skip
    for key, entry in entries:
        if not isinstance(entry, DictConfig) or entry.get("src") is None or entry.get("tgt") is None:
            raise UserError(f"data.{key} must name its files: {{src: FILE, tgt: FILE}} (plus src_lang, "
                            "tgt_lang in a multilingual run)")  # fmt: skip
        unknown = sorted(set(entry.keys()) - DEV_KEYS)
        if unknown:
            raise UserError(f"data.{key} has unknown keys {unknown}; a {split} set takes {sorted(DEV_KEYS)}")
    return entries


def dev_entries(data_cfg: DictConfig) -> list[tuple[str, DictConfig]]:
    """(config key, entry) of every dev set (split_entries)."""
    return split_entries(data_cfg, "dev")


def dev_corpora(data_cfg: DictConfig, split: str = "dev") -> list[CorpusSpec]:
    """The dev (or test) sets (split_entries), checked: each names both languages or neither; a list of
    several is one set per direction, each direction once. Validation scores each dev direction and their
    mean (the run's objective)."""
    entries = split_entries(data_cfg, split)
    specs = []
    for key, entry in entries:
        codes = [entry.get("src_lang"), entry.get("tgt_lang")]
        if (codes[0] is None) != (codes[1] is None):
            raise UserError(f"data.{key} needs both src_lang and tgt_lang, or neither")
        for code in codes:
            if code is not None:
                language_token(str(code))  # a code that cannot name a token: a one-line error
        src_lang, tgt_lang = (None, None) if codes[0] is None else (str(codes[0]), str(codes[1]))
        name = entry.get("name") or (f"{src_lang}-{tgt_lang}" if src_lang else split)
        specs.append(CorpusSpec(src=str(_path(entry.src)), tgt=str(_path(entry.tgt)), name=str(name),
                                src_lang=src_lang, tgt_lang=tgt_lang))  # fmt: skip
    if len(specs) > 1:
        for (key, _), spec in zip(entries, specs):
            if spec.src_lang is None:
                raise UserError(f"data.{key} needs src_lang and tgt_lang: a list of {split} sets holds one "
                                "per direction of a multilingual run")  # fmt: skip
        seen: set[str] = set()
        for spec in specs:
            if spec.label in seen:
                raise UserError(f"data.{split} lists {spec.label} twice; give each direction one {split} set "
                                "(put its files together) or each entry its own name")  # fmt: skip
            seen.add(spec.label)
    return specs


def dev_directions(data_cfg: DictConfig) -> list[tuple[str, str]]:
    """(src_lang, tgt_lang) of each dev set in a multilingual run, in order; [] in a run of one pair (or
    with no data.dev yet: the dev files are checked where they are read)."""
    specs = dev_corpora(data_cfg) if data_cfg.get("dev") is not None else []
    return [(spec.src_lang, spec.tgt_lang) for spec in specs if spec.src_lang and spec.tgt_lang]


def transform_splits(data_cfg: DictConfig) -> list[str]:
    """Which splits `data.transforms` clean: train only, unless `data.transform_splits` lists dev too."""
    splits = [str(split) for split in (data_cfg.get("transform_splits") or ["train"])]
    unknown = sorted(set(splits) - {"train", "dev"})
    if unknown:
        raise UserError(f"data.transform_splits={splits} names {unknown}; use train and/or dev")
    return splits


# Transforms whose class moved: the old `_target_` still works for one release, with a warning.
MOVED_TRANSFORMS = TRANSFORM_TARGETS


def cleaning_transforms(data_cfg: DictConfig) -> list[Any]:
    """`data.transforms`, instantiated in order (each entry a config with a `_target_` in seq2seq.*)."""
    from hydra.utils import instantiate

    from seq2seq.data.cleaning import check_transform

    transforms = []
    for number, entry in enumerate(data_cfg.get("transforms") or []):
        target = str(entry.get("_target_", "")) if isinstance(entry, DictConfig) else ""
        if target in MOVED_TRANSFORMS:
            log.warning("data.transforms[%d]: %s", number, deprecation_message(
                f"_target_ {target}", MOVED_TRANSFORMS[target]))  # fmt: skip
            target = MOVED_TRANSFORMS[target]
            entry = OmegaConf.merge(entry, {"_target_": target})
        if not target.startswith("seq2seq."):
            raise UserError(
                f"data.transforms[{number}] needs a _target_ in seq2seq.* (got {target or entry!r}); "
                "docs/data-cleaning.md lists the transforms"
            )
        try:
            transform = instantiate(entry)
        except Exception as error:  # a wrong setting name or value: Hydra's message, on one line
            detail = " ".join(str(error).split())[:300]
            raise UserError(f"data.transforms[{number}] ({target}) cannot be built: {detail}") from None
        check_transform(transform)
        transforms.append(transform)
    return transforms
