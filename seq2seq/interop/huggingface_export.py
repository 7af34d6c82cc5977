"""One of our encoder-decoder checkpoints -> a Hugging Face model directory.

A post-norm model becomes a MarianMT directory, a pre-norm one with M2M100's positions (fairseq
sinusoids counted from pad_id + 1, a shared embedding, no output bias) an M2M100 directory: config.json,
generation_config.json, model.safetensors and the tokenizer files, so that
`AutoModelForSeq2SeqLM.from_pretrained(directory)` and `AutoTokenizer.from_pretrained(directory)` load
it and a plain `generate` searches as our Translator does by default, as far as generation_config.json
can say it (huggingface_config.generation_config: the tokens our searches never produce, pad and bos, are
its bad_words_ids; a multilingual model's target language is its forced_bos_token_id; the beam size and
early stopping are ours; our length penalty and source-proportional length limit have no counterpart).
A setting neither architecture has is refused by name before anything is written; the directory is
built beside its final name and renamed into place.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from seq2seq.decode.options import DEFAULT_OPTIONS
from seq2seq.errors import UserError
from seq2seq.files import build_directory_atomically, temporary_path
from seq2seq.inference.languages import prefix_of
from seq2seq.inference.loading import LoadedModel, load_for_inference
from seq2seq.interop.huggingface_config import (
    ARCHITECTURES,
    CONFIG_FILE,
    GENERATION_CONFIG_FILE,
    export_model_type,
    export_problems,
    generation_config,
    huggingface_config,
)
from seq2seq.interop.huggingface_tokenizers import write_tokenizer_files
from seq2seq.interop.huggingface_weights import SAFETENSORS_FILE, huggingface_from_ours, write_safetensors

log = logging.getLogger(__name__)


def export_huggingface(checkpoint: Path, output: Path, *, force: bool = False) -> Path:
    """Write `output` (a new directory, or an existing one with force=True) holding the model of
    `checkpoint` as a MarianMT or M2M100 model directory."""
    checkpoint, output = Path(checkpoint), Path(output)
    loaded = load_for_inference(checkpoint, torch.device("cpu"))
    config = loaded.model.config
    problems = export_problems(config)
    if problems:
        raise UserError(f"Hugging Face's MarianMT and M2M100 cannot express {problems[0]}; export a model "
                        "trained without it (or export to CTranslate2)")  # fmt: skip
    if output.exists() and not (output.is_dir() and not any(output.iterdir())) and not force:
        raise UserError(
            f"{output} exists and is not empty; pass force=true to replace it or choose another output"
        )
    weights = huggingface_from_ours(loaded.model.state_dict(), config)
    _check_tokenizers(loaded)
    _build_in_place_of(output, lambda directory: _write(directory, loaded, weights))
    model_type = export_model_type(config)
    log.info("exported %s as %s (%s) to %s; load it with transformers' AutoModelForSeq2SeqLM and "
             "AutoTokenizer.from_pretrained(%r)", checkpoint, ARCHITECTURES[model_type], model_type, output,
             str(output))  # fmt: skip
    return output


def _build_in_place_of(output: Path, build: Callable[[Path], None]) -> None:
    """build_directory_atomically, replacing what `output` holds only once the new directory is complete
    (a refusal while writing leaves it as it was)."""
    if not output.exists() or (output.is_dir() and not any(output.iterdir())):
        build_directory_atomically(output, build, what="Hugging Face export")
        return
    staged, old = temporary_path(output), temporary_path(output)
    build_directory_atomically(staged, build, what="Hugging Face export")
    try:
        os.replace(output, old)
        try:
            os.replace(staged, output)
        except OSError:
            os.replace(old, output)  # the old one back
            raise
    finally:
        for leftover in (old, staged):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def _check_tokenizers(loaded: LoadedModel) -> None:
    """The tokenizers fit the model's embeddings and padding (else the files would not load together)."""
    config = loaded.model.config
    for side, tokenizer, key in (("source", loaded.src_tokenizer, "src_vocab_size"),
                                 ("target", loaded.tgt_tokenizer, "tgt_vocab_size")):  # fmt: skip
        if tokenizer.vocab_size != config[key] or tokenizer.pad_id != config["pad_id"]:
            raise UserError(f"the checkpoint's {side} tokenizer ({tokenizer.vocab_size} tokens, pad "
                            f"{tokenizer.pad_id}) does not fit its model ({config[key]} embeddings, pad "
                            f"{config['pad_id']}); the checkpoint is damaged")  # fmt: skip


def _write(directory: Path, loaded: LoadedModel, weights: dict[str, torch.Tensor]) -> None:
    """Fill `directory` (new): the tokenizer files first, whose ids config.json records."""
    directory.mkdir(parents=True)
    src, tgt = loaded.src_tokenizer, loaded.tgt_tokenizer
    token_ids = write_tokenizer_files(directory, src, tgt)
    config = huggingface_config(loaded.model.config, _config_ids(token_ids, loaded.model.config))
    banned = sorted({tgt.pad_id, tgt.bos_id} - {tgt.eos_id})  # what our searches never produce
    prefix = prefix_of(tgt)  # a multilingual model's target language code
    generation = generation_config(config, banned=banned, forced_bos=prefix[0] if len(prefix) == 1 else None,
                                   search=DEFAULT_OPTIONS)  # fmt: skip
    write_safetensors(weights, directory / SAFETENSORS_FILE)
    _write_json(directory / CONFIG_FILE, config)
    _write_json(directory / GENERATION_CONFIG_FILE, generation)


def _config_ids(token_ids: dict[str, Any], model_config: dict[str, Any]) -> dict[str, Any]:
    """config.json's token entries among write_tokenizer_files' answer (forced_bos_token_id, a
    multilingual target's language code, goes to generation_config.json), checked against the model."""
    sizes = {
        "vocab_size": model_config["src_vocab_size"],
        "decoder_vocab_size": model_config["tgt_vocab_size"],
    }
    for key, size in sizes.items():
        if key in token_ids and token_ids[key] != size:
            raise UserError(f"the tokenizer files give {key}={token_ids[key]}, but the model has {size} "
                            "embeddings; the checkpoint's tokenizer does not fit its model")  # fmt: skip
    if token_ids.get("pad_token_id", model_config["pad_id"]) != model_config["pad_id"]:
        raise UserError(f"the tokenizer's pad id {token_ids['pad_token_id']} is not the model's "
                        f"{model_config['pad_id']}; the checkpoint's tokenizer does not fit it")  # fmt: skip
    return {
        key: value
        for key, value in token_ids.items()
        if key.endswith("_token_id") and key != "forced_bos_token_id"
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
