"""A small learnable parallel corpus (word-for-word "translation" with reordering), written to disk."""

from __future__ import annotations

import random
from pathlib import Path

EN = "the a man woman dog cat sees loves finds house water bread light day night king".split()
ES = "el un hombre mujer perro gato ve ama encuentra casa agua pan luz dia noche rey".split()
LEXICON = dict(zip(EN, ES))


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


def tiny_train_overrides(corpus: Path, run_dir: Path) -> list[str]:
    """Overrides for a seconds-long seq2seq-train run on the toy corpus."""
    return [
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
        f"hydra.run.dir={run_dir}",
    ]
