"""The engines a Translator searches with: our own PyTorch search, or CTranslate2 on an exported model.

Both take sources as token ids ending in eos and return n-best Hypothesis lists, so the Translator's
input policy, batching by token budget and output formatting are the same whatever runs the model.
CTranslate2 is an optional dependency (`pip install seq2seq[export]`), imported only when used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.common import Hypothesis, SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import length_sorted_batches, search_ids
from seq2seq.errors import UserError
from seq2seq.nn.linear import bound_onednn_caches

OnBatch = Callable[[int], Any] | None
EXPORTED_MODEL_FILE = "model.bin"  # what makes a directory a CTranslate2 model


class TorchEngine:
    """Our batched greedy / beam / sampling search on a PyTorch model."""

    name = "torch"

    def __init__(self, model: nn.Module, ids: SpecialIds, *, device: torch.device, precision: str) -> None:
        bound_onednn_caches()  # a long-running translator meets new batch shapes all the time
        self.model, self.ids, self.device, self.precision = model.to(device).eval(), ids, device, precision

    @property
    def max_positions(self) -> int:
        return int(getattr(self.model, "config", {}).get("max_positions", 1024))

    def search(
        self, sources: list[list[int]], options: SearchOptions, *, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None, on_batch: OnBatch = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        return search_ids(
            self.model, sources, options=options, ids=self.ids, device=self.device, max_tokens=max_tokens,
            precision=self.precision, prefixes=prefixes, on_batch=on_batch,
        )  # fmt: skip


class CTranslate2Engine:
    """An exported model run by CTranslate2's Translator, with our search settings mapped onto its own.

    Differences a user may see: CTranslate2 normalises beam scores by length ** length_penalty (ours
    uses the GNMT penalty), and its output limit is one number per call, so each token-budget batch
    gets the largest limit floor(max_len_a * length + max_len_b) of its sentences, capped at
    max_positions - 1 like ours.
    """

    name = "ctranslate2"

    def __init__(
        self, directory: Path, tokenizers: tuple[Tokenizer, Tokenizer], *, device: torch.device, threads: int,
        max_positions: int, compute_type: str = "default",
    ) -> None:  # fmt: skip
        """`compute_type` "default" runs the weights as exported (e.g. int8); see CTranslate2's Translator."""
        ctranslate2 = import_ctranslate2()
        self.translator = ctranslate2.Translator(
            str(directory), device=device.type, device_index=device.index or 0, intra_threads=threads,
            compute_type=compute_type,
        )  # fmt: skip
        self.src_tokenizer, self.tgt_tokenizer = tokenizers
        self.ids, self.max_positions = SpecialIds.of(self.tgt_tokenizer), max_positions
        self.model, self.device = None, device

    def search(
        self, sources: list[list[int]], options: SearchOptions, *, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None, on_batch: OnBatch = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        results: list[list[Hypothesis]] = [[] for _ in sources]
        todo = [i for i, source in enumerate(sources) if source]
        if options.sampling:
            import_ctranslate2().set_random_seed(options.seed)
        for batch in length_sorted_batches([len(sources[i]) for i in todo], max_tokens):
            indices = [todo[i] for i in batch]
            limit = max(math.floor(options.max_len_a * len(sources[i]) + options.max_len_b) for i in indices)
            limit = min(limit, self.max_positions - 1)  # the exported position table has max_positions rows
            pieces = [_pieces(self.src_tokenizer, sources[i][:-1]) for i in indices]  # CTranslate2 adds eos
            prefix = None if prefixes is None else [_pieces(self.tgt_tokenizer, prefixes[i]) for i in indices]
            settings = _settings(options, max(limit, 0))
            settings["suppress_sequences"] = [
                [_pieces(self.tgt_tokenizer, [i])[0]] for i in (self.ids.pad, self.ids.bos)
            ]
            outputs = self.translator.translate_batch(pieces, prefix, **settings)
            for index, output in zip(indices, outputs):
                results[index] = [self._hypothesis(h, s) for h, s in zip(output.hypotheses, output.scores)]
            if on_batch is not None:
                on_batch(len(indices))
        return results

    def _hypothesis(self, pieces: list[str], score: float) -> Hypothesis:
        tokens = [self.tgt_tokenizer.piece_to_id(piece) for piece in pieces]
        return Hypothesis(tokens=tokens, score=float(score), log_prob=float(score))


def _pieces(tokenizer: Tokenizer, ids: Sequence[int]) -> list[str]:
    return [tokenizer.id_to_piece(i) for i in ids]


def _settings(options: SearchOptions, limit: int) -> dict[str, Any]:
    """translate_batch keywords for `options`; sampling draws `nbest` samples like ours, and the length
    limit wins over min_len, as in ours."""
    settings: dict[str, Any] = {
        "beam_size": 1 if options.sampling else options.beam_size, "num_hypotheses": options.nbest,
        "length_penalty": options.length_penalty, "max_decoding_length": limit,
        "min_decoding_length": min(options.min_len, limit),
        "no_repeat_ngram_size": options.no_repeat_ngram_size, "return_scores": True, "max_input_length": 0,
    }  # fmt: skip
    if options.sampling:
        settings.update(
            sampling_topk=options.top_k, sampling_topp=options.top_p, sampling_temperature=options.temperature
        )
    return settings


def import_ctranslate2() -> Any:
    """The optional ctranslate2 package, or a one-line error saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise UserError("CTranslate2 is not installed; pip install 'seq2seq[export]'") from None
    return ctranslate2


def is_exported_model(path: str | Path) -> bool:
    return (Path(path) / EXPORTED_MODEL_FILE).is_file()
