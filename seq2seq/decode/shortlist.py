"""Vocabulary shortlists: the output projection of each search batch computed for a few candidate target
tokens instead of the whole vocabulary (what Marian's lexical shortlists and CTranslate2's `vmap` do).

A `Shortlist` holds a lexical table learned from parallel training text (`build_shortlist`): for every
source token, the `per_source` target tokens it co-occurs with most strongly (Dice coefficient over
sentence pairs: 2 c(s, t) / (c(s) + c(t)), so a target token frequent everywhere does not fill every
row), plus the `frequent` most common target tokens. A batch's candidates are the frequent tokens, the
rows of the tokens in its sources, its forced prefixes' tokens and the special ids, sorted.

`restricted(model, candidates)` swaps the model's output projection(s) for a `CandidateProjection`
during one batch: logits for the candidates, -inf for every other token, so each search (greedy, beam,
sampling, ensembles) runs unchanged, renormalised over the candidates. The swap holds a lock for the
batch, so one Translator called from several threads searches one batch at a time, each with its own
candidates, and always gets its own projection back. A shortlist that holds every
token the full-vocabulary search would pick gives the same greedy output (tests/decode/test_shortlist.py).

The file (`Shortlist.save`) records the sha256 of both tokenizers, and `Shortlist.load` refuses a model
whose tokenizers differ: a table of another vocabulary would give wrong tokens without an error.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.errors import UserError
from seq2seq.nn.embeddings import OutputProjection
from seq2seq.nn.linear import linear
from seq2seq.nn.quantized import Int8Linear

log = logging.getLogger(__name__)
FORMAT, VERSION = "seq2seq-shortlist", 1
CHUNK_PAIRS = 20_000  # sentence pairs counted per sparse update: memory stays flat in corpus size


def tokenizer_digest(model_bytes: bytes) -> str:
    return hashlib.sha256(model_bytes).hexdigest()


@dataclass
class Shortlist:
    table: Tensor  # (source vocabulary, per_source) target ids, -1 where a row has fewer
    frequent: Tensor  # (frequent,) the most common target ids
    always: Tensor  # (specials,) ids every batch keeps: eos, unk
    tgt_vocab_size: int
    digests: tuple[str, str]  # sha256 of the source and target tokenizers' model bytes

    def candidates(self, src: Tensor, prefixes: Sequence[Sequence[int]] | None = None) -> Tensor:
        """The sorted target ids a batch may produce. Shapes: src (B, S) -> (C,)."""
        rows = self.table[src.flatten().clamp(0, self.table.shape[0] - 1).unique()].flatten()  # (R * K,)
        parts = [rows[rows >= 0], self.frequent, self.always]
        if prefixes:
            parts.append(torch.tensor([token for prefix in prefixes for token in prefix], dtype=torch.long))
        return torch.cat([part.long().cpu() for part in parts]).unique()  # sorted

    def save(self, path: Path) -> None:
        save_checkpoint(path, {
            "format": FORMAT, "version": VERSION, "table": self.table, "frequent": self.frequent,
            "always": self.always, "tgt_vocab_size": self.tgt_vocab_size, "digests": list(self.digests),
        })  # fmt: skip

    @classmethod
    def load(cls, path: Path, *, src_model: bytes, tgt_model: bytes) -> Shortlist:
        """The shortlist in `path`, checked against the tokenizers of the model it will serve."""
        if not Path(path).is_file():
            raise UserError(f"shortlist={path} does not exist; build one with seq2seq-shortlist")
        payload = load_checkpoint(path, map_location="cpu")
        if (
            not isinstance(payload, dict)
            or payload.get("format") != FORMAT
            or payload.get("version") != VERSION
        ):
            raise UserError(f"{path} is not a shortlist written by seq2seq-shortlist (format {FORMAT} "
                            f"{VERSION}); build one with seq2seq-shortlist")  # fmt: skip
        if tuple(payload["digests"]) != (tokenizer_digest(src_model), tokenizer_digest(tgt_model)):
            raise UserError(f"{path} was built for other tokenizers than this model's; build the shortlist "
                            "again with seq2seq-shortlist checkpoint=<this model>")  # fmt: skip
        return cls(payload["table"], payload["frequent"], payload["always"], int(payload["tgt_vocab_size"]),
                   tuple(payload["digests"]))  # fmt: skip


def build_shortlist(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    per_source: int,
    frequent: int,
    always: Sequence[int],
    digests: tuple[str, str],
) -> Shortlist:
    """The lexical table of token-id sentence pairs (module docstring), counted in sparse chunks."""
    if per_source < 1 or frequent < 0:
        raise UserError(f"per_source={per_source} and frequent={frequent}: per_source must be at least 1 and "
                        "frequent at least 0")  # fmt: skip
    together = torch.sparse_coo_tensor(
        torch.zeros(2, 0, dtype=torch.long),
        torch.zeros(0),
        (src_vocab_size, tgt_vocab_size),
        check_invariants=False,  # indices built here are in range
    )
    src_count, tgt_count = torch.zeros(src_vocab_size), torch.zeros(tgt_vocab_size)
    tgt_tokens = torch.zeros(tgt_vocab_size)  # every occurrence, for the frequent list
    pairs_seen = 0
    for chunk in _chunks(pairs, CHUNK_PAIRS):
        keys = []
        for source, target in chunk:
            s, t = (
                torch.tensor(sorted(set(source)), dtype=torch.long),
                torch.tensor(sorted(set(target)), dtype=torch.long),
            )
            src_count[s] += 1
            tgt_count[t] += 1
            tgt_tokens += torch.bincount(
                torch.tensor(list(target), dtype=torch.long), minlength=tgt_vocab_size
            )
            keys.append(
                torch.cartesian_prod(s, t) if len(s) and len(t) else torch.zeros(0, 2, dtype=torch.long)
            )
        indices = torch.cat(keys).T  # (2, N)
        together = (
            together
            + torch.sparse_coo_tensor(
                indices, torch.ones(indices.shape[1]), together.shape, check_invariants=False
            )
        ).coalesce()
        pairs_seen += len(chunk)
    if not pairs_seen:
        raise UserError("the training text holds no sentence pairs; pass non-empty source and target files")
    together = together.coalesce()
    (rows, columns), counts = together.indices(), together.values()
    dice = 2 * counts / (src_count[rows] + tgt_count[columns])  # (N,)
    table = torch.full((src_vocab_size, per_source), -1, dtype=torch.int32)
    by_score = torch.argsort(dice, descending=True, stable=True)
    order = by_score[torch.argsort(rows[by_score], stable=True)]  # by row, then best first
    rows, columns = rows[order], columns[order]
    starts = torch.searchsorted(rows, torch.arange(src_vocab_size + 1))
    for row in range(src_vocab_size):
        chosen = columns[starts[row] : min(starts[row + 1], starts[row] + per_source)]
        table[row, : len(chosen)] = chosen.int()
    most_common = torch.argsort(tgt_tokens, descending=True, stable=True)[:frequent]
    log.info("shortlist of %d sentence pairs: %d target candidates per source token, %d frequent",
             pairs_seen, per_source, frequent)  # fmt: skip
    return Shortlist(table, most_common.int(), torch.tensor(sorted(set(always)), dtype=torch.int32),
                     tgt_vocab_size, digests)  # fmt: skip


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class CandidateProjection(nn.Module):
    """An output projection restricted to `candidates`: their logits, -inf for every other token.

    Shapes: hidden (..., D) -> (..., V). `weight` (V, D) is the full projection's float weight; int8
    computes the candidates' rows on the int8 kernel, as the projection it stands in for does.
    """

    def __init__(self, weight: Tensor, candidates: Tensor, *, int8: bool) -> None:
        super().__init__()
        self.vocab_size = weight.shape[0]
        self.candidates = candidates.to(weight.device)  # (C,)
        rows = weight.detach().index_select(0, self.candidates)  # (C, D)
        self.project = Int8Linear(rows, None) if int8 else (lambda hidden: linear(hidden, rows))

    def forward(self, hidden: Tensor) -> Tensor:
        small = self.project(hidden)  # (..., C)
        logits = small.new_full((*small.shape[:-1], self.vocab_size), float("-inf"))  # (..., V)
        logits[..., self.candidates] = small
        return logits


def _outputs(model: nn.Module) -> list[nn.Module]:
    """The modules whose `output` attribute projects to the vocabulary (one per ensemble member)."""
    return [
        m for m in model.modules() if isinstance(getattr(m, "output", None), (OutputProjection, Int8Linear))
    ]


_SWAP = threading.Lock()  # one restricted batch at a time: the swap changes the shared model


@contextmanager
def restricted(model: nn.Module, candidates: Tensor) -> Iterator[None]:
    """Within the block, every output projection of `model` computes only `candidates` (module docstring)."""
    with _SWAP:
        yield from _swapped(model, candidates)


def _swapped(model: nn.Module, candidates: Tensor) -> Iterator[None]:
    owners = _outputs(model)
    saved = [owner.output for owner in owners]
    try:
        for owner, output in zip(owners, saved):
            weight = output.weight if isinstance(output, OutputProjection) else output.float_weight
            if weight is None:
                raise UserError("this int8 model's output projection kept no float weight; load it again "
                                "with quantization=int8 and the shortlist together")  # fmt: skip
            owner.output = CandidateProjection(weight, candidates, int8=isinstance(output, Int8Linear))
        yield
    finally:
        for owner, output in zip(owners, saved):
            owner.output = output


__all__ = ["CandidateProjection", "Shortlist", "build_shortlist", "restricted", "tokenizer_digest"]
