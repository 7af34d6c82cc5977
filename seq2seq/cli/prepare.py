"""seq2seq-prepare: build everything training needs from a data config: the corpus files (the config's
recipe, if any), the sentencepiece model and the encoded, memory-mappable arrays in data.cache_dir.

seq2seq-prepare                                    # the Bible corpus into data/bible_en_es
seq2seq-prepare data=parallel_files data.dir=/corpora/wmt14 data.src_lang=de data.tgt_lang=en
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.utils import instantiate, to_absolute_path
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.config.data_config import (
    DEPRECATED_DATA_KEYS,
    dev_corpora,
    prepared_corpus,
    training_corpora,
)
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.renamed_keys import accept_deprecated_keys
from seq2seq.cli.config.setting_checks import progress_bar_setting
from seq2seq.data.corpus import CorpusStats, iter_parallel, open_corpus_file
from seq2seq.errors import UserError

log = logging.getLogger("seq2seq.prepare")


@exit_on_user_error
def prepare(cfg: DictConfig) -> dict[str, Any]:
    """Run the data config's recipe (if any); build the tokenizer and encoded corpora training will map;
    report every configured split."""
    data = cfg.data
    out_dir = Path(to_absolute_path(str(data.dir)))
    progress = progress_bar_setting(cfg.progress_bar)
    progress = sys.stderr.isatty() if progress is None else progress
    recipe = data.get("recipe")
    if recipe is not None:
        target = str(recipe.get("_target_", ""))
        if not target.startswith("seq2seq."):
            raise UserError(f"data.recipe._target_={target!r} is not allowed; recipes must live in seq2seq.*")
        log.info("building %s in %s with %s", data.name, out_dir, target)
        instantiate(recipe)(out_dir=out_dir, force=bool(cfg.force), progress=progress)
    for spec in training_corpora(data) + dev_corpora(data):  # named, with valid settings
        for path in spec.pair:
            open_corpus_file(path).close()  # a missing file: one line naming it
    corpus = prepared_corpus(data, out_dir=None, progress=progress)
    report = {**corpus.stats, **_test_stats(data)}
    for split, stats in report.items():
        log.info("%s: %s", split, ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in stats.items()))
    log.info(
        "%s (%s-%s) is ready in %s: %s training pairs after filtering, tokenizer %s, encoded arrays in %s",
        data.name, data.src_lang, data.tgt_lang, out_dir, f"{len(corpus.train):,}",
        ", ".join(map(str, corpus.tokenizer_paths)), to_absolute_path(str(data.cache_dir)),
    )  # fmt: skip
    return report


def _test_stats(data: DictConfig) -> dict[str, dict[str, int]]:
    """Sizes of the test split (each direction's too, when it lists several), read through once; {} when
    the config names no test files or they do not exist."""
    report: dict[str, dict[str, int]] = {}
    total, found = CorpusStats(), False
    specs = dev_corpora(data, "test")
    for spec in specs:
        if not Path(spec.src).exists() and not Path(spec.tgt).exists():
            log.info("no test files (%s, %s); skipping", spec.src, spec.tgt)
            continue
        stats = CorpusStats()
        for source, target in iter_parallel(spec.src, spec.tgt, encoding_errors=str(data.encoding_errors)):
            stats.add(source, target)
        total.merge(stats)
        found = True
        if len(specs) > 1:
            report[f"test[{spec.label}]"] = stats.as_dict()
    return {"test": total.as_dict(), **report} if found else {}


@accept_deprecated_keys(DEPRECATED_DATA_KEYS)
@hydra.main(version_base="1.3", config_path=config_dir(), config_name="prepare")
def main(cfg: DictConfig) -> None:
    log.debug("config:\n%s", OmegaConf.to_yaml(cfg))
    prepare(cfg)


if __name__ == "__main__":
    main()
