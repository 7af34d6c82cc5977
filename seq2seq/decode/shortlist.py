"""Vocabulary shortlists: the output projection of each search batch computed for a few candidate target
tokens instead of the whole vocabulary (what Marian's lexical shortlists and CTranslate2's `vmap` do).

A `Shortlist` holds a lexical table learned from parallel training text (`build_shortlist`): for every
source token, the `per_source` target tokens it co-occurs with most strongly (Dice coefficient over
sentence pairs: 2 c(s, t) / (c(s) + c(t)), so a target token frequent everywhere does not fill every
row), plus the `frequent` most common target tokens. A sentence's candidates (`Shortlist.keep`) are the
frequent tokens, the rows of the tokens in its source, its forced prefix's and constraints' tokens and
the special ids.

`restricted(model, keep)` swaps the model's output projection(s) for a `CandidateProjection` during one
batch: it computes the union of the batch's candidates (one product for the batch: the speed), plus
the search's special ids. Greedy and beam search run over those C columns only (`compact`: scores,
top-k and the step rules work on (N, C), and token ids are mapped back; seq2seq.decode.step_rules.
in_columns); sampling and constrained search get full-width logits, -inf for every other token. The
per-sentence candidates stay with it (`sentence_candidates`), and whatever normalises a step
(seq2seq.decode.step_rules.next_token_scores; an Ensemble for each member) first gives -inf to the
tokens outside each row's own sentence's candidates. So a sentence's output and scores are those of
searching it alone, whatever its batch-mates (under a server's dynamic batching too). Its token
log-probabilities are then normalised over its candidates: where confidence is asked for, the found
outputs are scored again over the full vocabulary (seq2seq.decode.teacher_forcing), so confidence
stays the model's own. The swap holds a lock for the batch, so one Translator called from several
threads searches one batch at a time, each with its own candidates, and always gets its own projection
back. A shortlist that holds every token the full-vocabulary search would pick gives the same greedy
output (tests/decode/test_shortlist.py).

The file (`Shortlist.save`) records the sha256 of both tokenizers, and `Shortlist.load` refuses a model
whose tokenizers differ: a table of another vocabulary would give wrong tokens without an error. A
multilingual model's shortlist is learned from one direction's text and records it (`languages`): its
frequent tokens and rows are that target language's, so a Translator refuses it for another direction
(seq2seq.inference.translator); each direction gets its own file.
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
    languages: tuple[str, str] | None = None  # a multilingual model's direction (src_lang, tgt_lang)

    def keep(self, src: Tensor, needed: Sequence[Sequence[int]] | None = None, *, pad_id: int) -> Tensor:
        """Per sentence, the target ids it may produce: the frequent and special ids, the rows of its own
        source tokens (pad ignored) and its `needed` ids (one list per sentence: a forced prefix's and
        constraints' tokens). Shapes: src (B, S) -> (B, V) bool, on the CPU."""
        src = src.cpu()
        nowhere = self.tgt_vocab_size  # a column for the table's -1 entries, dropped at the end
        rows = self.table[src.clamp(0, self.table.shape[0] - 1)].long()  # (B, S, K)
        rows = rows.masked_fill((src == pad_id)[:, :, None] | (rows < 0), nowhere).flatten(1)  # (B, S * K)
        keep = torch.zeros(src.shape[0], nowhere + 1, dtype=torch.bool).scatter_(1, rows, True)[:, :nowhere]
        keep[:, torch.cat([self.frequent, self.always]).long()] = True
        for row, tokens in enumerate(needed or []):
            keep[row, torch.tensor(list(tokens), dtype=torch.long)] = True
        return keep

    def candidates(
        self, src: Tensor, needed: Sequence[Sequence[int]] | None = None, *, pad_id: int = 0
    ) -> Tensor:
        """The sorted target ids a batch may produce: the union of its sentences' (`keep`). Shapes: src (B, S)
        -> (C,)."""
        return self.keep(src, needed, pad_id=pad_id).any(dim=0).nonzero().squeeze(1)

    def save(self, path: Path) -> None:
        save_checkpoint(path, {
            "format": FORMAT, "version": VERSION, "table": self.table, "frequent": self.frequent,
            "always": self.always, "tgt_vocab_size": self.tgt_vocab_size, "digests": list(self.digests),
            **({} if self.languages is None else {"languages": list(self.languages)}),
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
        languages = payload.get("languages")
        return cls(payload["table"], payload["frequent"], payload["always"], int(payload["tgt_vocab_size"]),
                   tuple(payload["digests"]), None if languages is None else tuple(languages))  # fmt: skip

    def check_direction(self, src_lang: str | None, tgt_lang: str | None) -> None:
        """A one-line UserError when a multilingual model's shortlist, learned for one direction, is asked
        to serve another (a side left None is not compared)."""
        if self.languages is None:
            return
        if src_lang not in (None, self.languages[0]) or tgt_lang not in (None, self.languages[1]):
            asked, learned = f"{src_lang or '?'}->{tgt_lang or '?'}", "->".join(self.languages)
            raise UserError(f"shortlist= was learned for {learned}, not {asked}: its candidates are that "
                            "target language's; learn one per direction (seq2seq-shortlist src_lang= "
                            "tgt_lang=) and translate each with its own")  # fmt: skip


def build_shortlist(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    per_source: int,
    frequent: int,
    always: Sequence[int],
    digests: tuple[str, str],
    languages: tuple[str, str] | None = None,
) -> Shortlist:
    """The lexical table of token-id sentence pairs (module docstring), counted in sparse chunks."""
    if per_source < 1 or frequent < 0:
        raise UserError(f"per_source={per_source} and frequent={frequent}: per_source must be at least 1 and "
                        "frequent at least 0")  # fmt: skip
    counts = _Counts.empty(src_vocab_size, tgt_vocab_size)
    for chunk in _chunks(pairs, CHUNK_PAIRS):
        counts.add(chunk)
    if not counts.pairs:
        raise UserError("the training text holds no sentence pairs; pass non-empty source and target files")
    table = _best_per_source(counts, per_source)
    most_common = torch.argsort(counts.tgt_tokens, descending=True, stable=True)[:frequent]
    log.info("shortlist of %d sentence pairs: %d target candidates per source token, %d frequent",
             counts.pairs, per_source, frequent)  # fmt: skip
    return Shortlist(table, most_common.int(), torch.tensor(sorted(set(always)), dtype=torch.int32),
                     tgt_vocab_size, digests, languages)  # fmt: skip


@dataclass
class _Counts:
    """What the table is computed from: in how many pairs each source token, target token and pair of
    them occurs (`together`: sparse, (source vocabulary, target vocabulary)), and every target token's
    occurrences (for the frequent list)."""

    together: Tensor
    src_count: Tensor  # (source vocabulary,)
    tgt_count: Tensor  # (target vocabulary,)
    tgt_tokens: Tensor  # (target vocabulary,)
    pairs: int = 0

    @classmethod
    def empty(cls, src_vocab_size: int, tgt_vocab_size: int) -> _Counts:
        together = torch.sparse_coo_tensor(
            torch.zeros(2, 0, dtype=torch.long),
            torch.zeros(0),
            (src_vocab_size, tgt_vocab_size),
            check_invariants=False,  # indices built here are in range
        )
        return cls(
            together, torch.zeros(src_vocab_size), torch.zeros(tgt_vocab_size), torch.zeros(tgt_vocab_size)
        )

    def add(self, chunk: list[tuple[Sequence[int], Sequence[int]]]) -> None:
        """Count one chunk of sentence pairs, with one sparse update of `together`."""
        keys = []
        for source, target in chunk:
            s = torch.tensor(sorted(set(source)), dtype=torch.long)
            t = torch.tensor(sorted(set(target)), dtype=torch.long)
            self.src_count[s] += 1
            self.tgt_count[t] += 1
            self.tgt_tokens += torch.bincount(
                torch.tensor(list(target), dtype=torch.long), minlength=self.tgt_count.shape[0]
            )
            keys.append(
                torch.cartesian_prod(s, t) if len(s) and len(t) else torch.zeros(0, 2, dtype=torch.long)
            )
        indices = torch.cat(keys).T  # (2, N)
        update = torch.sparse_coo_tensor(
            indices, torch.ones(indices.shape[1]), self.together.shape, check_invariants=False
        )
        self.together = (self.together + update).coalesce()
        self.pairs += len(chunk)


def _best_per_source(counts: _Counts, per_source: int) -> Tensor:
    """Each source token's `per_source` target tokens by Dice coefficient, best first (ties: lower id).

    Shapes: -> (source vocabulary, per_source) int32, -1 where a row has fewer.
    """
    together = counts.together.coalesce()
    (rows, columns), both = together.indices(), together.values()
    dice = 2 * both / (counts.src_count[rows] + counts.tgt_count[columns])  # (N,)
    src_vocab_size = together.shape[0]
    table = torch.full((src_vocab_size, per_source), -1, dtype=torch.int32)
    by_score = torch.argsort(dice, descending=True, stable=True)
    order = by_score[torch.argsort(rows[by_score], stable=True)]  # by row, then best first
    rows, columns = rows[order], columns[order]
    starts = torch.searchsorted(rows, torch.arange(src_vocab_size + 1))
    for row in range(src_vocab_size):
        chosen = columns[starts[row] : min(starts[row + 1], starts[row] + per_source)]
        table[row, : len(chosen)] = chosen.int()
    return table


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass(frozen=True)
class BatchCandidates:
    """One restricted batch's candidates: each sentence's (`keep`) and the union's sorted token ids
    (`columns`), which also holds the search's special ids, so that its rules mask them as they would
    over the whole vocabulary. `compact`: the projection returns scores over `columns` only, (..., C),
    and the search runs over those C columns (seq2seq.decode.step_rules.ColumnSpace); otherwise it
    returns (..., V) with -inf outside `columns`.

    Shapes: keep (B, V) bool; columns (C,) long.
    """

    keep: Tensor
    columns: Tensor
    compact: bool = False

    @classmethod
    def of(cls, keep: Tensor, *, specials: Sequence[int] = (), compact: bool = False) -> BatchCandidates:
        union = keep.any(dim=0)  # (V,)
        union[list(specials)] = True
        return cls(keep, union.nonzero().squeeze(1), compact)

    def to(self, device: torch.device) -> BatchCandidates:
        return BatchCandidates(self.keep.to(device), self.columns.to(device), self.compact)


@dataclass(frozen=True)
class RowCandidates:
    """The target ids each decoded row may produce: its sentence's shortlist candidates. Rows follow the
    search (beams reordered, finished sentences dropped) through `select`, as its other rules do.

    The logits it restricts come from a CandidateProjection: compact ones hold only the union's C
    columns; full-width ones are -inf outside them already. So only those C columns are looked at
    (C is a few hundred where V is thousands), which gives the same result as masking all V.

    Shapes: rows (N,) long, the sentence of each row; columns (C,) long, the union's token ids;
    barred (B, C) bool, where a union token is not the sentence's.
    """

    rows: Tensor
    columns: Tensor
    barred: Tensor
    compact: bool = False

    @classmethod
    def of(cls, batch: BatchCandidates, copies: int) -> RowCandidates | None:
        """For B * copies rows, row b * copies + k being sentence b's (how every search lays them out);
        None where no sentence lacks a union column: the projection alone then restricts every row."""
        barred = batch.keep.index_select(1, batch.columns).logical_not_()  # (B, C)
        if not bool(barred.any()):
            return None
        rows = torch.arange(barred.shape[0], device=barred.device).repeat_interleave(copies)
        return cls(rows, batch.columns, barred, batch.compact)

    def select(self, index: Tensor) -> RowCandidates:
        return RowCandidates(self.rows.index_select(0, index), self.columns, self.barred, self.compact)

    def restrict_(self, logits: Tensor) -> Tensor:
        """-inf, in place, for every token outside the row's own sentence's candidates: applied before
        normalising, it makes each row's distribution the one its sentence alone would get.
        Shapes: logits (N, C) compact, or (N, V) -inf outside the union of candidates -> the same."""
        barred = self.barred.index_select(0, self.rows)  # (N, C)
        if self.compact:
            return logits.masked_fill_(barred, float("-inf"))
        union = logits.index_select(1, self.columns).masked_fill_(barred, float("-inf"))  # (N, C)
        return logits.index_copy_(1, self.columns, union)


class CandidateProjection(nn.Module):
    """An output projection restricted to the union of a batch's candidates (`BatchCandidates`): their
    logits, compact (..., C) or with -inf for every other token (..., V); the batch's candidates stay
    with it for the search's rules (`sentence_candidates`).

    Shapes: hidden (..., D) -> (..., C) or (..., V). An int8 projection computes the candidates' rows of
    its own int8 weights (Int8Linear.rows): the same numbers as the full projection, with no float copy
    kept. A logit bias (model.output_bias) is restricted to the candidates with the rows.
    """

    def __init__(self, output: OutputProjection | Int8Linear, batch: BatchCandidates) -> None:
        super().__init__()
        self.vocab_size = batch.keep.shape[1]
        device = output.weight.device if isinstance(output, OutputProjection) else torch.device("cpu")
        self.batch = batch.to(device)
        self.candidates = self.batch.columns  # (C,)
        if isinstance(output, Int8Linear):
            self.project = output.rows(self.candidates)  # its bias, if any, sliced with the rows
        else:
            rows = output.weight.detach().index_select(0, self.candidates)  # (C, D)
            bias = None if output.bias is None else output.bias.detach().index_select(0, self.candidates)
            self.project = lambda hidden: linear(hidden, rows, bias)  # (..., C)

    def forward(self, hidden: Tensor) -> Tensor:
        small = self.project(hidden)  # (..., C)
        if self.batch.compact:
            return small
        logits = small.new_full((*small.shape[:-1], self.vocab_size), float("-inf"))  # (..., V)
        return logits.index_copy_(-1, self.candidates, small)


def _outputs(model: nn.Module) -> list[nn.Module]:
    """The modules whose `output` attribute projects to the vocabulary (one per ensemble member)."""
    return [
        m for m in model.modules() if isinstance(getattr(m, "output", None), (OutputProjection, Int8Linear))
    ]


def sentence_candidates(model: nn.Module) -> BatchCandidates | None:
    """The candidates of the batch `model` searches under `restricted`; None outside."""
    return next((m.batch for m in model.modules() if isinstance(m, CandidateProjection)), None)


_SWAP = threading.Lock()  # one restricted batch at a time: the swap changes the shared model


@contextmanager
def restricted(
    model: nn.Module, keep: Tensor, *, specials: Sequence[int] = (), compact: bool = False
) -> Iterator[None]:
    """Within the block, every output projection of `model` computes only the candidates of `keep`
    (B, V), each sentence's (`Shortlist.keep`; module docstring), and the `specials` (the search's
    pad, bos and eos ids); `compact`: over those columns only (`BatchCandidates`)."""
    with _SWAP:
        yield from _swapped(model, BatchCandidates.of(keep, specials=specials, compact=compact))


@contextmanager
def full_vocabulary(model: nn.Module) -> Iterator[None]:
    """Within the block, `model` has its full output projections: no other thread's batch swaps them."""
    with _SWAP:
        yield


def _swapped(model: nn.Module, batch: BatchCandidates) -> Iterator[None]:
    owners = _outputs(model)
    saved = [owner.output for owner in owners]
    try:
        for owner, output in zip(owners, saved):
            owner.output = CandidateProjection(output, batch)
        yield
    finally:
        for owner, output in zip(owners, saved):
            owner.output = output


__all__ = [
    "BatchCandidates",
    "CandidateProjection",
    "RowCandidates",
    "Shortlist",
    "build_shortlist",
    "full_vocabulary",
    "restricted",
    "sentence_candidates",
    "tokenizer_digest",
]
