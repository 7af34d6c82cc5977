"""Lexical constraints as tensors: target phrases an output must contain, and phrases it must not.

Positive constraints (each sentence's phrases, as target token ids) drive the constrained beam search
(seq2seq.decode.constrained). For every row of the search, `ConstraintState` tracks each phrase:
  * progress: the length of the longest suffix of the row's output that is a prefix of the phrase, so
    phrases that share a prefix advance together, and a phrase that overlaps itself is never missed;
  * met: the progress reached the phrase's length once (on a word boundary, see below); a met phrase
    stays met.
A phrase counts only whole: a hypothesis that strays from a phrase it has started loses that progress.
Given the tokenizer's word-continuing pieces (`continuing_pieces`), a phrase also counts only on word
boundaries: once its last piece is written it is complete but not met ("pending"); the next piece meets
it if that piece does not continue the word (eos included), and voids it if it does ("Dios creó" is not
met by "Dios creóse", "god" not by "gods"). `word_rules_` steers the search by the same rules: a word of
an unmet phrase, once started, must be finished (a hypothesis may stray only between the phrase's
words), and after a pending phrase the word may only go on where that advances another unmet phrase the
row is inside, so "god" and "gods" can both be met; where these rules would leave a row no token at all
(an avoided phrase in the way), they give way. Without word-continuing pieces a phrase is met as soon
as its last piece is written.
A row's bank is the number of constraint tokens it has met: the lengths of its met and pending phrases,
plus its longest progress on another. A phrase given twice for one sentence is required once.

Negative constraints (`Avoided`, one list for a whole search): wherever a row's output ends with every
piece of an avoided phrase but its last, that last piece is banned; a one-piece phrase is banned
everywhere. So the phrase, as the tokenizer splits it, never appears, and its first pieces stay free
when something else follows them.

All shapes: B sentences, K rows per sentence (N = B * K), C phrases per sentence (padded with empty
phrases of length 0, which count as met), P = the longest phrase's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.decode.penalties import NEG_INF
from seq2seq.decode.spaceless import written_without_spaces

PAD = -1  # after a phrase's last token
BEFORE_START = -2  # an output position before the first token (matches no phrase token)
ANY = -3  # an avoided phrase's context position that matches anything (the phrase is shorter)


def phrase_tensor(phrases: Sequence[Sequence[Sequence[int]]], device: torch.device) -> tuple[Tensor, Tensor]:
    """Each sentence's phrases, deduplicated, as (B, C, P) token ids padded with PAD and (B, C) lengths.

    C and P are at least 1 (an empty phrase of length 0 where a sentence has none)."""
    unique = [list(dict.fromkeys(tuple(phrase) for phrase in sentence if phrase)) for sentence in phrases]
    count = max((len(sentence) for sentence in unique), default=0) or 1
    longest = max((len(phrase) for sentence in unique for phrase in sentence), default=0) or 1
    tokens = torch.full((len(unique), count, longest), PAD, dtype=torch.long)
    lengths = torch.zeros(len(unique), count, dtype=torch.long)
    for b, sentence in enumerate(unique):
        for c, phrase in enumerate(sentence):
            tokens[b, c, : len(phrase)] = torch.tensor(phrase, dtype=torch.long)
            lengths[b, c] = len(phrase)
    return tokens.to(device), lengths.to(device)


def recent_tokens(tokens: Tensor, width: int) -> Tensor:
    """The last `width` tokens of each row, BEFORE_START where the row is shorter.

    Shapes: tokens (N, T) -> (N, width)."""
    tail = tokens[:, max(tokens.shape[1] - width, 0) :]
    missing = width - tail.shape[1]
    if missing > 0:
        tail = torch.nn.functional.pad(tail, (missing, 0), value=BEFORE_START)
    return tail


def suffix_progress(window: Tensor, phrases: Tensor, lengths: Tensor) -> Tensor:
    """For each row and phrase, the longest k such that the window's last k tokens are the phrase's first k.

    Shapes: window (M, P) the output's last P tokens; phrases (M, C, P); lengths (M, C) -> (M, C) long.
    """
    longest = phrases.shape[2]
    progress = torch.zeros_like(lengths)
    for k in range(1, longest + 1):
        hit = (window[:, None, longest - k :] == phrases[:, :, :k]).all(dim=2) & (lengths >= k)  # (M, C)
        progress = torch.where(hit, k, progress)
    return progress


@dataclass
class ConstraintState:
    """The phrases of the sentences being searched and every row's progress on them."""

    phrases: Tensor  # (B, C, P) token ids, PAD after each phrase
    lengths: Tensor  # (B, C) tokens per phrase; 0 for padding
    met: Tensor  # (N, C) bool: the phrase appeared in the row's output (on word boundaries)
    progress: Tensor  # (N, C) long: see suffix_progress
    continuing: Tensor | None = None  # (V,) bool: pieces that continue a word (eos does not); None: no words

    @classmethod
    def start(
        cls,
        phrases: Sequence[Sequence[Sequence[int]]],
        *,
        copies: int,
        device: torch.device,
        continuing: Tensor | None = None,
    ) -> ConstraintState:
        """No progress yet, for `copies` rows per sentence (row b * copies + k belongs to sentence b)."""
        tokens, lengths = phrase_tensor(phrases, device)
        met = (lengths == 0).repeat_interleave(copies, dim=0)  # (N, C)
        return cls(tokens, lengths, met, torch.zeros_like(met, dtype=torch.long), continuing)

    @property
    def copies(self) -> int:
        return self.met.shape[0] // max(self.phrases.shape[0], 1)

    def totals(self) -> list[int]:
        """Phrases per sentence (after deduplication), on the host."""
        return (self.lengths > 0).sum(dim=1).tolist()

    def top_bank(self) -> int:
        """The most constraint tokens any sentence has."""
        return int(self.lengths.sum(dim=1).max()) if self.lengths.numel() else 0

    def complete(self) -> Tensor:
        """Phrases whose last piece ends the row's output. Shapes: (N, C) bool."""
        lengths = self.lengths.repeat_interleave(self.copies, dim=0)  # (N, C)
        return (self.progress >= lengths) & (lengths > 0)

    def pending(self) -> Tensor:
        """Complete phrases not met yet: the next piece meets or voids them. Shapes: (N, C) bool."""
        return self.complete() & ~self.met

    def may_end(self) -> Tensor:
        """Rows where eos would leave every phrase met (it meets the pending ones). Shapes: (N,) bool."""
        return (self.met | self.complete()).all(dim=1)

    def next_tokens(self) -> Tensor:
        """The token that advances each unmet phrase of each row; PAD for met and complete phrases.

        Shapes: -> (N, C)."""
        rows = self.phrases.repeat_interleave(self.copies, dim=0)  # (N, C, P)
        index = self.progress.clamp(max=rows.shape[2] - 1)[:, :, None]  # (N, C, 1)
        return rows.gather(2, index).squeeze(2).masked_fill(self.met | self.complete(), PAD)

    def after(self, rows: Tensor, tokens: Tensor, outputs: Tensor) -> tuple[Tensor, Tensor]:
        """(met, progress) of row `rows[m]` extended by `tokens[m]`, for every candidate m.

        Shapes: rows, tokens (M,); outputs (N, 1 + step) the rows' tokens so far -> (M, C) each.
        """
        width = self.phrases.shape[2]
        sentence = torch.div(rows, self.copies, rounding_mode="floor")  # (M,)
        recent = recent_tokens(outputs, width - 1).index_select(0, rows)  # (M, P - 1)
        window = torch.cat([recent, tokens[:, None]], dim=1)  # (M, P)
        phrases, lengths = self.phrases.index_select(0, sentence), self.lengths.index_select(0, sentence)
        progress = suffix_progress(window, phrases, lengths)  # (M, C)
        met = self.met.index_select(0, rows)
        if self.continuing is None:
            return met | ((progress >= lengths) & (lengths > 0)), progress
        ends_word = ~self.continuing[tokens]  # (M,)
        return met | (self.pending().index_select(0, rows) & ends_word[:, None]), progress

    def banks(self, rows: Tensor, met: Tensor, progress: Tensor) -> Tensor:
        """Constraint tokens met by the rows `met`/`progress` describe (rows: their sentences' rows);
        a pending phrase counts as met. Shapes: rows (M,); met, progress (M, C) -> (M,) long."""
        lengths = self.lengths.index_select(0, torch.div(rows, self.copies, rounding_mode="floor"))
        whole = met | (progress >= lengths)
        return (lengths * whole).sum(dim=1) + progress.masked_fill(whole, 0).amax(dim=1)

    def moved(self, met: Tensor, progress: Tensor, alive: Tensor | None) -> ConstraintState:
        """The state of the new beams (met, progress: (B * K, C)), keeping only the sentences `alive`."""
        phrases, lengths = self.phrases, self.lengths
        if alive is not None:
            rows = (alive[:, None] * self.copies + torch.arange(self.copies, device=alive.device)).reshape(-1)
            phrases, lengths = phrases[alive], lengths[alive]
            met, progress = met[rows], progress[rows]
        return ConstraintState(phrases, lengths, met, progress, self.continuing)


def allocation_order(scores: Tensor, banks: Tensor, top_bank: int) -> Tensor:
    """Dynamic beam allocation: the order in which a sentence's candidates fill its beam.

    Candidates are ranked by score within their bank; the beam takes rank 0 of every bank (the
    highest bank first), then rank 1 of every bank, and so on, so every bank that has candidates gets
    a share of the beam, and an empty bank's share goes to the others. Candidates with a score of -inf
    come last. Shapes: scores, banks (B, M) -> (B, M) candidate positions, in filling order.
    """
    by_score = scores.argsort(dim=1, descending=True, stable=True)  # (B, M)
    sorted_banks = banks.gather(1, by_score)
    valid = torch.isfinite(scores.gather(1, by_score))
    member = torch.nn.functional.one_hot(sorted_banks, top_bank + 1) * valid[:, :, None]  # (B, M, T+1)
    rank = (member.cumsum(dim=1) * member).sum(dim=2) - 1  # (B, M): rank within its bank
    key = rank * (top_bank + 1) + (top_bank - sorted_banks)
    key = key.masked_fill(~valid, torch.iinfo(key.dtype).max)
    return by_score.gather(1, key.argsort(dim=1, stable=True))


def continuing_pieces(pieces: Sequence[str], *, word_start: str = "\u2581") -> Tensor:
    """Which pieces of a sentencepiece vocabulary continue the word before them: those that do not start
    with the word-start mark and start with a letter or digit of a script written with spaces (one
    written without, seq2seq.decode.spaceless, has no word boundaries to keep). Shapes: -> (V,) bool."""
    flags = [
        not p.startswith(word_start) and p[:1].isalnum() and not written_without_spaces(p[0]) for p in pieces
    ]
    return torch.tensor(flags, dtype=torch.bool)


def word_rules_(logprobs: Tensor, wanted: ConstraintState, free: Tensor) -> Tensor:
    """Keep phrases to word boundaries (module docstring), for rows whose output ends inside a word of
    an unmet phrase or with a pending phrase: such a row may write the next piece of each word it is
    inside (several phrases may share a start), and, with a pending phrase, any piece that ends the word
    (which meets it); nothing else. A row these rules would leave with no allowed token keeps its
    other tokens. Only `free` rows are ruled: not those whose next token is forced (a prefix, the
    length limit). Without `wanted.continuing` there are no words, and no rules.
    Shapes: logprobs (N, V), free (N,) bool -> logprobs, edited in place."""
    if wanted.continuing is None:
        return logprobs
    rows, vocab = logprobs.shape
    following = wanted.next_tokens()  # (N, C), PAD for met and complete phrases
    inside = (following != PAD) & (wanted.progress > 0) & wanted.continuing[following.clamp(min=0)]  # (N, C)
    pending = wanted.pending()  # (N, C)
    columns = torch.where(inside, following, vocab)  # (N, C): column V collects the phrases not inside
    words = torch.zeros(rows, vocab + 1, dtype=torch.bool, device=logprobs.device).scatter_(1, columns, True)
    allowed = words[:, :vocab] | (pending.any(dim=1, keepdim=True) & ~wanted.continuing)  # (N, V)
    banned = ((inside | pending).any(dim=1) & free)[:, None] & ~allowed  # (N, V)
    kept = (torch.isfinite(logprobs) & ~banned).any(dim=1, keepdim=True)  # (N, 1)
    return logprobs.masked_fill_(banned & kept, NEG_INF)


def hold_eos_(logprobs: Tensor, ready: Tensor, *, eos_id: int) -> Tensor:
    """Forbid eos for rows that are not `ready` (some phrase unmet, length limit not reached).

    Shapes: logprobs (N, V), ready (N,) bool -> logprobs, edited in place."""
    logprobs[:, eos_id] = logprobs[:, eos_id].masked_fill(~ready, NEG_INF)
    return logprobs


@dataclass(frozen=True)
class Avoided:
    """Phrases no output may contain (the same for every row of a search)."""

    context: Tensor  # (A, W) each phrase's pieces before its last, right-aligned, ANY before them
    last: Tensor  # (A,) each phrase's last piece

    @classmethod
    def of(cls, phrases: Sequence[Sequence[int]], device: torch.device) -> Avoided | None:
        """None when there is nothing to avoid."""
        unique = list(dict.fromkeys(tuple(phrase) for phrase in phrases if phrase))
        if not unique:
            return None
        width = max(len(phrase) for phrase in unique) - 1
        context = torch.full((len(unique), width), ANY, dtype=torch.long)
        for a, phrase in enumerate(unique):
            if len(phrase) > 1:
                context[a, width - len(phrase) + 1 :] = torch.tensor(phrase[:-1], dtype=torch.long)
        last = torch.tensor([phrase[-1] for phrase in unique], dtype=torch.long)
        return cls(context.to(device), last.to(device))

    def in_columns(self, columns: Tensor) -> Avoided | None:
        """The phrases for a search over `columns` (C,) sorted token ids (a shortlist's): pieces become
        column indices, and a phrase with a piece outside the columns, which no output there can
        complete, is left out (None: nothing left)."""
        pieces = torch.cat([self.context, self.last[:, None]], dim=1)  # (A, W + 1)
        place = torch.searchsorted(columns, pieces.clamp(min=0)).clamp_(max=columns.shape[0] - 1)
        wildcard = pieces == ANY
        possible = ((columns[place] == pieces) | wildcard).all(dim=1)  # (A,)
        if not bool(possible.any()):
            return None
        mapped = torch.where(wildcard, ANY, place)[possible]  # (A', W + 1)
        return Avoided(mapped[:, :-1].contiguous(), mapped[:, -1].contiguous())

    def ban_(self, logprobs: Tensor, outputs: Tensor) -> Tensor:
        """Ban each phrase's last piece in rows whose output ends with the phrase's other pieces.

        Shapes: logprobs (N, V); outputs (N, T) the output tokens so far (bos excluded) -> logprobs."""
        rows, width = logprobs.shape[0], self.context.shape[1]
        recent = recent_tokens(outputs, width)  # (N, W)
        follows = ((recent[:, None, :] == self.context) | (self.context == ANY)).all(dim=2)  # (N, A)
        values = torch.full(follows.shape, float("inf"), dtype=logprobs.dtype, device=logprobs.device)
        values.masked_fill_(follows, NEG_INF)
        return logprobs.scatter_reduce_(1, self.last.expand(rows, -1), values, reduce="amin")


__all__ = [
    "Avoided",
    "ConstraintState",
    "allocation_order",
    "continuing_pieces",
    "hold_eos_",
    "phrase_tensor",
    "recent_tokens",
    "suffix_progress",
    "word_rules_",
]
