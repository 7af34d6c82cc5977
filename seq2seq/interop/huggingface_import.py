"""A Hugging Face MarianMT or M2M100 / NLLB model directory -> one of our checkpoints.

The checkpoint is an ordinary one (step 0, no optimizer state): every command takes it as it takes a
trained model's (translate, serve, export, average, fine-tuning with init_from). Its `model_config`
holds build_model's settings for the architecture (seq2seq.interop.huggingface_config), `model` the
weights under our names (seq2seq.interop.huggingface_weights), `tokenizer` the source and target
tokenizers (MappedTokenizer bytes: the Hugging Face ids, special tokens and language codes), and
`config` a run config with the model settings and the languages, like the one training saves.

Everything is read and checked before the checkpoint is written, atomically: a refusal leaves no file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from seq2seq.checkpoint import save_checkpoint
from seq2seq.data.mapped_tokenizer import MappedTokenizer
from seq2seq.errors import UserError
from seq2seq.interop.huggingface_config import (
    ARCHITECTURES,
    model_settings,
    model_type_of,
    read_config,
    special_ids,
)
from seq2seq.interop.huggingface_tokenizers import read_tokenizers
from seq2seq.interop.huggingface_weights import (
    check_shapes,
    ours_from_huggingface,
    read_weights,
    weight_files,
)
from seq2seq.model import build_model, count_parameters
from seq2seq.model.builders import RUN_TIME_ARGUMENTS

log = logging.getLogger(__name__)

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
BUILDER = "seq2seq.model.build_model"


def import_huggingface(
    directory: Path,
    output: Path,
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    force: bool = False,
) -> Path:
    """Write `output`, a checkpoint of the model in `directory` (config.json, model.safetensors or
    pytorch_model.bin, the tokenizer files). `src_lang` / `tgt_lang`: the languages a multilingual
    model translates from and into by default (language codes of its tokenizer, e.g. "en" / "es" for
    M2M100, "eng_Latn" for NLLB; a model without codes only records them); without them, those its
    tokenizer_config.json names."""
    directory, output = Path(directory), Path(output)
    if output.exists() and not force:
        raise UserError(f"{output} exists; pass force=true to replace it or choose another output")
    if output.is_dir():
        raise UserError(f"{output} is a directory; pass the path of the checkpoint file to write")
    payload = checkpoint_payload(directory, src_lang=src_lang, tgt_lang=tgt_lang)
    save_checkpoint(output, payload)
    log.info("wrote %s; translate with: seq2seq-translate checkpoint=%s", output, output)
    return output


def checkpoint_payload(
    directory: Path, *, src_lang: str | None = None, tgt_lang: str | None = None
) -> dict[str, Any]:
    """The checkpoint payload of the model in `directory` (import_huggingface writes it)."""
    config = read_config(directory)
    model_type = model_type_of(config)
    settings = model_settings(config)
    files = weight_files(directory)
    src, tgt = read_tokenizers(directory, config)
    src, tgt, languages = _with_languages(directory, src, tgt, src_lang, tgt_lang)
    _check_tokenizers(config, settings, src, tgt)
    model = build_model(**settings)
    state = ours_from_huggingface(read_weights(files), settings, str(directory))
    check_shapes(state, model.state_dict(), str(directory))
    model.load_state_dict(state)
    _log_model(directory, model_type, settings, model, languages)
    joint = src.to_bytes() == tgt.to_bytes()
    return {
        "model": model.state_dict(),
        "model_config": model.config,
        "tokenizer": {"src": src.to_bytes(), "tgt": None if joint else tgt.to_bytes()},
        "config": run_config(model.config, languages, source=directory, model_type=model_type),
        "step": 0,
    }


def run_config(
    model_config: dict[str, Any], languages: tuple[str | None, str | None], *, source: Path, model_type: str
) -> dict[str, Any]:
    """The checkpoint's `config`: what a training run's resolved config holds that commands read (the
    model settings, data.src_lang / tgt_lang), and where the model came from."""
    model = {key: value for key, value in model_config.items() if key not in (*RUN_TIME_ARGUMENTS, "family")}
    return {
        "model": {"_target_": BUILDER, **model},
        "data": {"src_lang": languages[0], "tgt_lang": languages[1]},
        "imported_from": {"directory": str(Path(source).resolve()), "model_type": model_type,
                          "architecture": ARCHITECTURES[model_type]},
    }  # fmt: skip


def _tokenizer_config(directory: Path) -> dict[str, Any]:
    path = Path(directory) / TOKENIZER_CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path} is not valid JSON ({error}); restore the file") from None
    return config if isinstance(config, dict) else {}


def _with_languages(
    directory: Path,
    src: MappedTokenizer,
    tgt: MappedTokenizer,
    src_lang: str | None,
    tgt_lang: str | None,
) -> tuple[MappedTokenizer, MappedTokenizer, tuple[str | None, str | None]]:
    """The tokenizers set to the languages asked for, and the two languages the checkpoint records:
    those asked for, else the tokenizers', else tokenizer_config.json's. A tokenizer with language codes
    (M2M100, NLLB) gets that code as its prefix; for one without (a Marian model of one language pair)
    the names are only recorded (data.src_lang / tgt_lang of the checkpoint's config)."""
    named = _tokenizer_config(directory)
    if src_lang is not None and src.languages:
        src = src.for_language(src_lang)
    if tgt_lang is not None and tgt.languages:
        tgt = tgt.for_language(tgt_lang)
    source = src_lang or src.language or named.get("src_lang") or named.get("source_lang")
    target = tgt_lang or tgt.language or named.get("tgt_lang") or named.get("target_lang")
    return src, tgt, (source, target)


def _check_tokenizers(
    config: dict[str, Any], settings: dict[str, Any], src: MappedTokenizer, tgt: MappedTokenizer
) -> None:
    """The tokenizers' special ids and sizes are the model's (else the directory mixes two models)."""
    ids = special_ids(config)
    found = {"pad": tgt.pad_id, "eos": tgt.eos_id, "decoder_start": tgt.bos_id}
    for name, value in ids.items():
        if found[name] != value:
            raise UserError(f"config.json has {name}_token_id={value}, but the tokenizer's is {found[name]}; "
                            "the tokenizer files belong to another model")  # fmt: skip
    if src.pad_id != ids["pad"]:
        raise UserError(f"the source tokenizer's pad id {src.pad_id} is not config.json's {ids['pad']}")
    for side, tokenizer, key in (("source", src, "src_vocab_size"), ("target", tgt, "tgt_vocab_size")):
        if tokenizer.vocab_size != settings[key]:
            raise UserError(
                f"the {side} tokenizer has {tokenizer.vocab_size} tokens but the model's embedding has "
                f"{settings[key]} rows; the tokenizer files belong to another model"
            )


def _log_model(
    directory: Path, model_type: str, settings: dict[str, Any], model: torch.nn.Module, languages: tuple
) -> None:
    log.info(
        "importing %s (%s) from %s: %d encoder + %d decoder layers, d_model %d, %d heads, ffn %d, %s-norm, "
        "%s, vocabulary %d%s, %.1fM parameters; %s",
        ARCHITECTURES[model_type], model_type, directory, settings["encoder_layers"],
        settings["decoder_layers"], settings["d_model"], settings["n_heads"], settings["ffn_dim"],
        settings["norm"], settings["activation"], settings["tgt_vocab_size"],
        "" if settings["share_embeddings"] else f" (source {settings['src_vocab_size']})",
        count_parameters(model) / 1e6,
        f"languages {languages[0] or '-'} -> {languages[1] or '-'}" if any(languages) else "no languages",
    )  # fmt: skip
