"""A small learnable parallel corpus (word-for-word "translation" with reordering), written to disk."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tiny_models import TINY

EN = "the a man woman dog cat sees loves finds house water bread light day night king".split()
ES = "el un hombre mujer perro gato ve ama encuentra casa agua pan luz dia noche rey".split()
LEXICON = dict(zip(EN, ES))

# Another model than the toy run's (model=tiny at half its width): a checkpoint that does not fit it
NARROWER = [f"model.{key}={TINY[key] // 2}" for key in ("d_model", "ffn_dim")]


def sentence_pair(rng: random.Random) -> tuple[str, str]:
    words = [rng.choice(EN) for _ in range(rng.randint(2, 9))]
    return " ".join(words), " ".join(LEXICON[w] for w in reversed(words))


def write_toy_corpus(
    directory: Path, *, train: int = 300, dev: int = 20, test: int = 20, seed: int = 0
) -> Path:
    """train/dev/test .en/.es files in `directory`; returns it."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for split, size in (("train", train), ("dev", dev), ("test", test)):
        pairs = [sentence_pair(rng) for _ in range(size)]
        (directory / f"{split}.en").write_text("".join(en + "\n" for en, _ in pairs), encoding="utf-8")
        (directory / f"{split}.es").write_text("".join(es + "\n" for _, es in pairs), encoding="utf-8")
    return directory


def tiny_train_overrides(corpus: Path, run_dir: Path | None, *changes: str) -> list[str]:
    """Overrides for a seconds-long seq2seq-train run on the toy corpus, in `run_dir` (None: no
    hydra.run.dir, for a multirun). `changes` replace the overrides of the same keys
    ("trainer.max_updates=6"; the last change of a key wins); "~key" only drops key's override."""
    changed = {change.removeprefix("~").split("=", 1)[0]: change for change in changes}
    base = [
        "data=parallel_files",
        f"data.dir={corpus}",
        "data.src_lang=en",
        "data.tgt_lang=es",
        "data.tokenizer.vocab_size=60",
        "model=tiny",
        "trainer.max_updates=4",
        "trainer.max_tokens=400",
        "trainer.validate_every=2",
        "trainer.save_every=2",
        "trainer.log_every=1",
        "trainer.num_threads=1",
        "trainer.progress_bar=false",
        "schedule.warmup=2",
        *([] if run_dir is None else [f"hydra.run.dir={run_dir}"]),
    ]
    kept = [override for override in base if override.split("=", 1)[0] not in changed]
    return kept + [change for change in changed.values() if not change.startswith("~")]


def data_config(*, train: object, dev: object, cache_dir: Path, vocab_size: int = 60, **more: object) -> Any:
    """A `data` config group as seq2seq.cli.config.data_config reads it, for tests that build one by hand:
    `train` and `dev` as given (a mapping or a list), the filter and a small joint BPE tokenizer, and any
    `more` keys (extra_train, temperature, ...)."""
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "train": train, "dev": dev, "cache_dir": str(cache_dir), "encoding_errors": "strict", "workers": 1,
        "transforms": [], "transform_splits": ["train"],
        "filter": {"max_tokens_per_side": 256, "max_token_ratio": 3.0, "min_tokens_for_ratio": 5},
        "tokenizer": {"model_type": "bpe", "vocab_size": vocab_size, "joint": True, "character_coverage": 1.0,
                      "sample_sentences": 1000},
        **more,
    })  # fmt: skip
