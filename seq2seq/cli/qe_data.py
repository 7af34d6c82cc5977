"""seq2seq-qe-data: a QE corpus from a parallel corpus and translation checkpoints (seq2seq.qe.generate).

seq2seq-qe-data output_dir=runs/qe_data \
    train_passes='[{checkpoint: runs/quickstart/checkpoint_300.pt, decode: greedy}, ...]' \
    dev_passes='[{checkpoint: runs/quickstart/best.pt, decode: beam}]'
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig
from tqdm import tqdm

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli.config.launch import config_dir, exit_on_user_error
from seq2seq.cli.config.setting_checks import pick_device, progress_bar_setting
from seq2seq.cli.config.translator_config import translator_from_config
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.model.families import ENCODER_DECODER, ENCODER_ONLY
from seq2seq.qe.corpus import TOKENIZER_FILES, write_qe_corpus
from seq2seq.qe.generate import Pass, pass_record, read_pairs, run_pass, search_options, tokenizer_digest
from seq2seq.qe.labels import sentence_labels

log = logging.getLogger("seq2seq.qe_data")
SPLITS = ("train", "dev")


def absolute(path: Any) -> Path:
    return Path(hydra.utils.to_absolute_path(str(path)))


def passes_of(cfg: DictConfig, split: str) -> list[Pass]:
    entries = cfg.get(f"{split}_passes")
    if not entries:
        raise UserError(f"{split}_passes is empty; list at least one {{checkpoint: PATH, decode: greedy}}")
    passes = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, DictConfig) or "checkpoint" not in entry:
            raise UserError(
                f"{split}_passes[{index}] must be {{checkpoint: PATH, decode: greedy|beam|sample}}"
            )
        checkpoint = absolute(entry.checkpoint)
        if not checkpoint.is_file():
            raise UserError(
                f"{split}_passes[{index}].checkpoint={checkpoint} does not exist; "
                "pass a .pt file written by seq2seq-train"
            )
        decode = str(entry.get("decode", "greedy"))
        search_options(decode, seed=0)  # a bad name fails here, before any translation
        passes.append(Pass(split, index, checkpoint, decode))
    return passes


def shared_tokenizers(passes: Sequence[Pass]) -> dict[str, Any]:
    """The tokenizer bytes of the passes' checkpoints: they must be one (the QE model reads with them)."""
    payloads = {}
    for one in passes:
        payload = load_checkpoint(one.checkpoint)
        if "tokenizer" not in payload:
            raise UserError(f"{one.checkpoint} holds no tokenizer; pass checkpoints written by seq2seq-train")
        family = (payload.get("model_config") or {}).get("family", ENCODER_DECODER)
        if family == ENCODER_ONLY:
            raise UserError(f"{one.checkpoint} is a QE model; the passes need translation checkpoints")
        payloads[one.checkpoint] = payload["tokenizer"]
    first = passes[0].checkpoint
    for path, payload in payloads.items():
        if tokenizer_digest(payload) != tokenizer_digest(payloads[first]):
            raise UserError(f"{first} and {path} use different tokenizers; take every pass's checkpoint from "
                            "one training run")  # fmt: skip
    return payloads[first]


class PassTranslator:
    """Translates a pass's sources, keeping one Translator per checkpoint, with a progress bar."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg, self.translators = cfg, {}
        self.device = pick_device(str(cfg.device))

    def __call__(self, one: Pass, sources: Sequence[str]) -> list[str]:
        if one.checkpoint not in self.translators:
            self.translators[one.checkpoint] = translator_from_config(
                self.cfg, checkpoint=one.checkpoint, device=self.device
            )
        translator = self.translators[one.checkpoint]
        options = search_options(one.decode, seed=int(self.cfg.seed) + one.index)
        encoded = translator.encode(sources)
        show = progress_bar_setting(self.cfg.progress_bar)
        bar = tqdm(total=len(encoded.sources), unit="sent", desc=f"pass {one.name} ({one.decode})",
                   file=sys.stderr, disable=not (sys.stderr.isatty() if show is None else show))  # fmt: skip
        start = time.perf_counter()
        results = translator.search(encoded.sources, options, max_tokens=int(self.cfg.max_tokens),
                                    on_batch=bar.update)  # fmt: skip
        bar.close()
        seconds = time.perf_counter() - start
        log.info("pass %s: %d sentences with %s in %.0f s (%.1f sentences/s)", one.name, len(sources),
                 options.describe(), seconds, len(sources) / max(seconds, 1e-9))  # fmt: skip
        return [nbest[0][0] if nbest else "" for nbest in translator.join_pieces(encoded, results)]


@exit_on_user_error
def make_qe_data(cfg: DictConfig) -> dict[str, Any]:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")  # fmt: skip
    out = absolute(cfg.output_dir)
    passes = {split: passes_of(cfg, split) for split in SPLITS}
    tokenizers = shared_tokenizers(passes["train"] + passes["dev"])
    limits = {"train": cfg.max_train_sentences, "dev": None}
    translate = PassTranslator(cfg)
    summary: dict[str, Any] = {"metric": str(cfg.metric), "passes": []}
    for split in SPLITS:
        source, reference = absolute(cfg[f"{split}_source"]), absolute(cfg[f"{split}_reference"])
        sources, references = read_pairs(source, reference, limit=limits[split])
        rows: list[tuple[str, str, float]] = []
        for one in passes[split]:
            record = pass_record(
                one, source, limit=limits[split], seed=int(cfg.seed), precision=str(cfg.precision)
            )
            translations = run_pass(one, sources, record, out / "passes", translate)
            labels = sentence_labels(translations, references, metric=str(cfg.metric))
            rows += [
                (s, t, label) for s, t, label in zip(sources, translations, labels) if s.strip() and t.strip()
            ]
            mean = sum(labels) / max(len(labels), 1)
            summary["passes"].append({
                "pass": one.name, "checkpoint": str(one.checkpoint), "decode": one.decode,
                "sentences": len(sources), "mean_label": mean,
            })  # fmt: skip
            log.info("pass %s: mean %s label %.3f", one.name, cfg.metric, mean)
        written = write_qe_corpus(out / f"{split}.tsv", rows)
        summary[f"{split}_pairs"] = written
        log.info("wrote %s (%d pairs)", out / f"{split}.tsv", written)
    for side, name in TOKENIZER_FILES.items():  # a joint tokenizer has no target file: none may be left over
        if tokenizers.get(side):
            (out / name).write_bytes(tokenizers[side])
        else:
            (out / name).unlink(missing_ok=True)
    with atomic_output(out / "summary.json", "w", encoding="utf-8") as stream:
        stream.write(json.dumps(summary, indent=2))
    return summary


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="qe_data")
def main(cfg: DictConfig) -> None:
    make_qe_data(cfg)


if __name__ == "__main__":
    main()


__all__ = ["make_qe_data", "passes_of"]
