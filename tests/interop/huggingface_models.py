"""Random-weight Hugging Face translation models saved with their tokenizer files (the fixture
directories of huggingface_fixtures), imported; and `generate` set to search the way our Translator does.

How our searches and `generate` are made to search alike: no length normalisation on either side
(length_penalty=0: the sum of log-probabilities; HF divides by length ** penalty, we by the GNMT
((5 + length) / 6) ** alpha, which agree only at 0), early_stopping=True (ours: stop_early), pad never
generated (its bad_words_ids, as in the Opus-MT models' own generation configs), and one length limit:
after LIMIT output tokens only eos may follow, keeping its log-probability, which is our limit and
`EosAtLimit` for transformers (its forced_eos_token_id would give eos a log-probability of 0).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import transformers
from huggingface_fixtures import EN, MARIAN_LANGUAGE_CODES, config_entries, sentences, tokenizer_dir

from seq2seq.interop.huggingface_import import import_huggingface

SIZES = dict(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_ffn_dim=64, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    max_position_embeddings=64, init_std=0.3,
)  # fmt: skip
LIMIT = 12  # output tokens before the forced eos
TEXTS = sentences(EN, count=6, seed=7) + ["Tom sees the dog.", "the"]
LANGUAGES = {"marian": {}, "m2m100": {"src_lang": "en", "tgt_lang": "es"},
             "nllb": {"src_lang": "eng_Latn", "tgt_lang": "spa_Latn"}}  # fmt: skip


@dataclass
class Imported:
    """A Hugging Face model saved with its tokenizer files, and its import."""

    kind: str
    directory: Path
    checkpoint: Path
    model: torch.nn.Module  # transformers'
    tokenizer: object  # transformers'

    @property
    def languages(self) -> dict[str, str]:
        return LANGUAGES[self.kind]

    def encode(self, texts: list[str], targets: list[str] | None = None) -> dict[str, torch.Tensor]:
        return self.tokenizer(texts, text_target=targets, padding=True, return_tensors="pt")

    def generate(self, texts: list[str], **settings) -> torch.Tensor:
        """`generate` searching as our Translator does (module docstring); (B, 1 + at most LIMIT + 1)."""
        config = self.model.config
        forced = {}
        if self.languages:
            forced["forced_bos_token_id"] = self.tokenizer.convert_tokens_to_ids(self.tgt_code)
        with torch.no_grad():
            return self.model.generate(
                **self.encode(texts), max_new_tokens=LIMIT + 1, do_sample=False, early_stopping=True,
                bad_words_ids=[[config.pad_token_id]], forced_eos_token_id=None,
                logits_processor=transformers.LogitsProcessorList([EosAtLimit(config.eos_token_id)]),
                **forced, **settings,
            )  # fmt: skip

    @property
    def tgt_code(self) -> str:
        return {"m2m100": "__es__", "nllb": "spa_Latn"}[self.kind]


class EosAtLimit(transformers.LogitsProcessor):
    """Our length limit for `generate`: after LIMIT output tokens, eos only, at its own log-probability."""

    def __init__(self, eos: int) -> None:
        self.eos = eos

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] < 1 + LIMIT:
            return scores
        forced = torch.full_like(scores, -math.inf)
        forced[:, self.eos] = scores[:, self.eos]
        return forced


def _without_language_codes(directory: Path) -> Path:
    """An OPUS-MT directory of a one-target-language model: vocab.json without the >>xx<< tokens."""
    path = directory / "vocab.json"
    table = [t for t in sorted(json.loads(path.read_text()), key=json.loads(path.read_text()).get)
             if t not in MARIAN_LANGUAGE_CODES]  # fmt: skip
    path.write_text(json.dumps({token: index for index, token in enumerate(table)}, ensure_ascii=False))
    return directory


def _marian(entries: dict) -> torch.nn.Module:
    entries = {**entries, "forced_eos_token_id": None}
    config = transformers.MarianConfig(**entries, **SIZES, activation_function="swish", scale_embedding=True)
    model = transformers.MarianMTModel(config)
    with torch.no_grad():  # an output bias of its own, eos among the likely tokens (some outputs end early)
        model.final_logits_bias.normal_(0.0, 1.0)
        model.final_logits_bias[0, config.eos_token_id] += 4.0
    return model


def _m2m100(entries: dict) -> torch.nn.Module:
    config = transformers.M2M100Config(**entries, **SIZES, encoder_layerdrop=0.0, decoder_layerdrop=0.0)
    model = transformers.M2M100ForConditionalGeneration(config)
    with torch.no_grad():  # the final norm's bias raises eos's logit (the output matrix is the embedding)
        eos = model.model.shared.weight[config.eos_token_id]
        model.model.decoder.layer_norm.bias.copy_(3.0 * eos / eos.dot(eos))
    return model


def build(kind: str, root: Path) -> Imported:
    torch.manual_seed({"marian": 0, "m2m100": 1, "nllb": 2}[kind])
    directory = tokenizer_dir(kind, root)
    if kind == "marian":
        directory = _without_language_codes(directory)
    model = (_marian if kind == "marian" else _m2m100)(config_entries(kind, directory))
    model.eval().save_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, **LANGUAGES[kind])
    checkpoint = import_huggingface(directory, root / f"{kind}.pt", **LANGUAGES[kind])
    return Imported(kind, directory, checkpoint, model, tokenizer)


def logit_difference(model: torch.nn.Module, tokenizer, checkpoint: Path) -> float:
    """The largest difference between transformers' `model` and our import of it (`checkpoint`) in the
    logits of a padded batch of TEXTS under teacher forcing, at every real target position."""
    from seq2seq.inference.loading import load_for_inference

    batch = tokenizer(TEXTS, text_target=list(reversed(TEXTS)), padding=True, return_tensors="pt")
    config = model.config
    labels = batch["labels"]  # (B, T): the target tokens and eos, right-padded
    start = torch.full_like(labels[:, :1], config.decoder_start_token_id)
    tgt_in = torch.cat([start, labels[:, :-1]], dim=1)  # (B, T)
    real = torch.cat([torch.ones_like(start, dtype=torch.bool), labels[:, :-1] != config.pad_token_id], 1)
    with torch.no_grad():
        expected = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         decoder_input_ids=tgt_in).logits  # fmt: skip
        ours = load_for_inference(checkpoint, torch.device("cpu")).model(batch["input_ids"], tgt_in)
    assert real.sum() > 2 * len(TEXTS) and (batch["attention_mask"] == 0).any()  # padded on both sides
    return (expected - ours)[real].abs().max().item()


def outputs(sequences: torch.Tensor, config) -> list[list[int]]:
    """generate's sequences as our hypotheses' tokens: no decoder start, nothing from eos on."""
    rows = []
    for row in sequences[:, 1:].tolist():
        rows.append(row[: row.index(config.eos_token_id)] if config.eos_token_id in row else row)
    return rows
