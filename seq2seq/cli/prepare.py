"""seq2seq-prepare: build the corpus a data config describes, or check the files it names.

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

from seq2seq.cli.common import config_dir, exit_on_user_error
from seq2seq.data.corpus import describe_parallel, read_parallel
from seq2seq.errors import UserError

log = logging.getLogger("seq2seq.prepare")
SPLITS = ("train", "dev", "test")


@exit_on_user_error
def prepare(cfg: DictConfig) -> dict[str, Any]:
    """Run the data config's recipe (if any), then read back every configured split and report it."""
    data = cfg.data
    out_dir = Path(to_absolute_path(str(data.dir)))
    progress = _progress(str(cfg.progress_bar))
    recipe = data.get("recipe")
    if recipe is not None:
        target = str(recipe.get("_target_", ""))
        if not target.startswith("seq2seq."):
            raise UserError(f"data.recipe._target_={target!r} is not allowed; recipes must live in seq2seq.*")
        log.info("building %s in %s with %s", data.name, out_dir, target)
        instantiate(recipe)(out_dir=out_dir, force=bool(cfg.force), progress=progress)
    report = {}
    for split in SPLITS:
        paths = data.get(split)
        if paths is None or paths.get("src") is None:
            continue
        src_path, tgt_path = Path(to_absolute_path(str(paths.src))), Path(to_absolute_path(str(paths.tgt)))
        if split == "test" and not src_path.exists() and not tgt_path.exists():
            log.info("no test files (%s, %s); skipping", src_path, tgt_path)
            continue
        src, tgt = read_parallel(src_path, tgt_path, encoding_errors=str(data.encoding_errors))
        report[split] = describe_parallel(src, tgt)
        log.info("%s: %s", split, ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in report[split].items()))
    if "train" not in report or "dev" not in report:
        raise UserError("the data config must name train and dev files (data.train.src, data.dev.src, ...)")
    log.info("%s (%s-%s) is ready in %s", data.name, data.src_lang, data.tgt_lang, out_dir)
    return report


def _progress(setting: str) -> bool:
    if setting.lower() == "auto":
        return sys.stderr.isatty()
    return setting.lower() in ("true", "1", "yes")


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="prepare")
def main(cfg: DictConfig) -> None:
    log.debug("config:\n%s", OmegaConf.to_yaml(cfg))
    prepare(cfg)


if __name__ == "__main__":
    main()
