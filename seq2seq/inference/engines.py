"""The engines a Translator searches with: our own PyTorch search, or CTranslate2 on an exported model.

Both take sources as token ids ending in eos and return n-best Hypothesis lists, so the Translator's
input policy, batching by token budget and output formatting are the same whatever runs the model.
An exported encoder-decoder runs in CTranslate2's Translator, an exported decoder-only model in its
Generator (seq2seq.inference.generator_engine); the two share the batching loop and the settings, and
differ in how one batch is run.
CTranslate2 is an optional dependency (`pip install seq2seq[export]`), imported only when used.

Constraints: our engine searches them (seq2seq.decode.constrained). CTranslate2 has no positive
constraints, so an exported model translates the sentences that carry some with our engine, on the
PyTorch weights the export keeps (`TorchFallback`, loaded at the first such sentence), and the others
itself; each hypothesis then says which engine found it. Avoided phrases are CTranslate2's
`suppress_sequences`.

Every engine implements `Engine` (tests/inference/test_engines.py checks each against it): the
Translator, the CLI and the server use nothing else of it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.compiled import compile_setting, should_compile, use_eager_decoding, use_static_decoding
from seq2seq.decode.constraints import continuing_pieces
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds, StopCheck, check_stop
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.search import length_sorted_batches, search_ids
from seq2seq.decode.searchable import SearchableModel
from seq2seq.decode.shortlist import Shortlist
from seq2seq.errors import UserError
from seq2seq.nn.linear import bound_onednn_caches

log = logging.getLogger(__name__)
OnBatch = Callable[[int], Any] | None
Constraints = Sequence[Sequence[Sequence[int]]] | None  # per source, target phrases its output must contain
Avoid = Sequence[Sequence[int]] | None  # target phrases no output may contain
EXPORTED_MODEL_FILE = "model.bin"  # what makes a directory a CTranslate2 model
VOCABULARY_MAP_FILE = "vmap.txt"  # CTranslate2's vocabulary shortlist, written by seq2seq-export shortlist=


@runtime_checkable
class Engine(Protocol):
    """What a Translator searches with: our search on a PyTorch model, or CTranslate2 on an export."""

    name: str  # which engine found a hypothesis ("torch", "ctranslate2")
    model: nn.Module | None  # the PyTorch model; None for an export (it lives inside CTranslate2)
    device: torch.device

    @property
    def max_positions(self) -> int:
        """The model's positions (SearchableModel.max_positions; an export records its model's)."""
        ...

    @property
    def compiled(self) -> bool:
        """Whether searches run a compiled decoder step now (seq2seq.decode.compiled; CTranslate2: never)."""
        ...

    def output_room(self, src: Tensor) -> Tensor:
        """Output tokens (before eos) each source leaves in the model's positions, as the search limits
        them: the Translator's input limit asks it. Shapes: src (B, S) right-padded -> (B,) long."""
        ...

    def search(
        self, sources: list[list[int]], options: SearchOptions, *, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None, on_batch: OnBatch = None, confidence: bool = False,
        constraints: Constraints = None, avoid: Avoid = None, stop: StopCheck | None = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """The n-best hypotheses of each source (token ids ending in eos), in order; [] for an empty one.
        `confidence`: fill each hypothesis' per-token log-probabilities, the model's own."""
        ...


class TorchEngine:
    """Our batched greedy / beam / sampling search on a PyTorch model."""

    name = "torch"

    def __init__(
        self, model: SearchableModel, ids: SpecialIds, *, device: torch.device, precision: str,
        shortlist: Shortlist | None = None, compile: str = "false", quantization: str = "none",
        continuing: torch.Tensor | None = None,
    ) -> None:  # fmt: skip
        """`compile`: auto | true | false, whether searches run a compiled decoder step
        (seq2seq.decode.compiled); `quantization` only tells it whether the model's layers are int8;
        `continuing`: the target pieces that continue a word (constraints.continuing_pieces)."""
        self.continuing = continuing
        bound_onednn_caches()  # a long-running translator meets new batch shapes all the time
        self.model, self.ids, self.device, self.precision = model.to(device).eval(), ids, device, precision
        self.shortlist, self.compile, self.quantization = shortlist, compile_setting(compile), quantization
        self.compiled = False  # whether searches run the compiled step now
        # compile=auto switches the model between static and eager decoding per search: a search holds
        # this lock from its switch to its end, so another thread's switch cannot land in between (where
        # start_search has sized growing caches and init_state would build static ones that size)
        self._one_choice = threading.RLock() if self.compile == "auto" else contextlib.nullcontext()
        if self.compile == "true":  # a setting that cannot work fails now, not at the first request
            self._choose_step(0, greedy=True)

    def _choose_step(self, sentences: int, *, greedy: bool) -> None:
        """The compiled or the eager step, as the setting says for this search."""
        compiled = should_compile(
            self.compile, self.model, sentences=sentences, device=self.device, greedy=greedy,
            quantization=self.quantization, shortlist=self.shortlist is not None,
        )  # fmt: skip
        if compiled == self.compiled:
            return
        if compiled:
            log.info("decoding with a compiled step (compile=%s): each kind of search compiles at its "
                     "first batch", self.compile)  # fmt: skip
            use_static_decoding(self.model, compiled=True)
        else:
            use_eager_decoding(self.model)
        self.compiled = compiled

    @property
    def max_positions(self) -> int:
        return self.model.max_positions

    def output_room(self, src: Tensor) -> Tensor:
        """The model's (SearchableModel.output_room). Shapes: src (B, S) -> (B,)."""
        return self.model.output_room(src.to(self.device))

    def search(
        self, sources: list[list[int]], options: SearchOptions, *, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None, on_batch: OnBatch = None, confidence: bool = False,
        constraints: Constraints = None, avoid: Avoid = None, stop: StopCheck | None = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """`confidence`: our searches always record each token's log-probability; under a shortlist they
        are then scored over the full vocabulary (search_ids). `constraints` (target phrases per source),
        `avoid` and `stop` (asked at every step): seq2seq.decode.search.search_ids."""
        constrained = constraints is not None and any(constraints)
        greedy = not options.searches_beams and not options.sampling and not constrained
        with self._one_choice:
            self._choose_step(len(sources), greedy=greedy)
            results = search_ids(
                self.model, sources, options=options, ids=self.ids, device=self.device, max_tokens=max_tokens,
                precision=self.precision, prefixes=prefixes, on_batch=on_batch, shortlist=self.shortlist,
                constraints=constraints, avoid=avoid, continuing=self.continuing, confidence=confidence,
                stop=stop,
            )  # fmt: skip
        if constraints is not None:
            mark_engine(results, self.name)
        return results


def mark_engine(results: list[list[Hypothesis]], name: str) -> None:
    for nbest in results:
        for hypothesis in nbest:
            hypothesis.engine = name


class TorchFallback:
    """Our engine on the PyTorch weights an export keeps (torch_weights=true), loaded when first needed."""

    def __init__(self, path: Path | None, *, device: torch.device, precision: str) -> None:
        self.path, self.device, self.precision = path, device, precision
        self._engine: TorchEngine | None = None
        self._lock = threading.Lock()

    def engine(self) -> TorchEngine:
        with self._lock:
            if self._engine is None:
                if self.path is None or not self.path.is_file():
                    raise UserError(
                        "CTranslate2 has no positive constraints, and this export keeps no PyTorch weights "
                        "to search them with; export again with torch_weights=true, or translate with the "
                        ".pt checkpoint"
                    )
                from seq2seq.inference.loading import load_for_inference

                loaded = load_for_inference(self.path, self.device)
                ids = SpecialIds.of(loaded.tgt_tokenizer)
                continuing = continuing_pieces(loaded.tgt_tokenizer.pieces_of_vocabulary())
                self._engine = TorchEngine(
                    loaded.model, ids, device=self.device, precision=self.precision, continuing=continuing
                )
                log.info("constrained sentences: our engine on %s (CTranslate2 has no positive constraints)",
                         self.path)  # fmt: skip
            return self._engine


class CTranslate2Engine:
    """An exported encoder-decoder run by CTranslate2's Translator, our search settings mapped onto its own.

    Differences a user may see: CTranslate2 normalises beam scores by length ** length_penalty (ours
    uses the GNMT penalty) and gives forced prefix tokens no score, and its output limit is one number
    per call, so each token-budget batch gets the largest limit floor(max_len_a * length + max_len_b)
    of its sentences, within every sentence's room in the model's positions (`batch_limit`). Per-token
    log-probabilities (confidence) mean what ours mean: `score_tokens` computes them by teacher forcing.
    """

    name = "ctranslate2"
    compiled = False  # CTranslate2 runs its own kernels: there is no step of ours to compile

    def __init__(
        self, directory: Path, tokenizers: tuple[TextTokenizer, TextTokenizer], *, device: torch.device,
        threads: int, max_positions: int, compute_type: str = "default",
    ) -> None:  # fmt: skip
        """`compute_type` "default" runs the weights as exported (e.g. int8); see CTranslate2's Translator."""
        runner = self._runner_class(import_ctranslate2())
        self.runner = runner(
            str(directory), device=device.type, device_index=device.index or 0, intra_threads=threads,
            compute_type=compute_type,
        )  # fmt: skip
        self.src_tokenizer, self.tgt_tokenizer = tokenizers
        self.ids, self.max_positions = SpecialIds.of(self.tgt_tokenizer), max_positions
        self.use_vmap = (Path(directory) / VOCABULARY_MAP_FILE).is_file()  # exported with shortlist=
        self.model: nn.Module | None = None  # the model lives inside CTranslate2
        self.device = device
        self.fallback: TorchFallback | None = None  # set by load_exported: constrained sentences go there

    def output_room(self, src: Tensor) -> Tensor:
        """An encoder-decoder's output has positions of its own: max_positions - 1 (bos takes one), as
        Seq2Seq.output_room. Shapes: src (B, S) -> (B,)."""
        return torch.full((src.shape[0],), self.max_positions - 1, dtype=torch.long, device=src.device)

    @staticmethod
    def _runner_class(ctranslate2: Any) -> Any:
        return ctranslate2.Translator

    def search(
        self, sources: list[list[int]], options: SearchOptions, *, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None = None, on_batch: OnBatch = None, confidence: bool = False,
        constraints: Constraints = None, avoid: Avoid = None, stop: StopCheck | None = None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """`confidence`: each hypothesis also gets its per-token log-probabilities (`score_tokens`).
        Sources with constraints go to our engine (module docstring); `avoid` is suppress_sequences.
        `stop` is asked before each batch (CTranslate2 runs a batch to its end)."""
        results: list[list[Hypothesis]] = [[] for _ in sources]
        mine = [i for i, source in enumerate(sources) if source and constraints and constraints[i]]
        if mine:
            results = self._search_constrained(sources, mine, options, max_tokens, prefixes, on_batch,
                                               constraints, avoid, stop)  # fmt: skip
        suppressed = [pieces_of(self.tgt_tokenizer, phrase) for phrase in avoid or []]
        skip = set(mine)
        todo = [i for i, source in enumerate(sources) if source and i not in skip]
        if options.sampling:
            import_ctranslate2().set_random_seed(options.seed)
        for batch in length_sorted_batches([len(sources[i]) for i in todo], max_tokens):
            check_stop(stop)
            indices = [todo[i] for i in batch]
            forced = None if prefixes is None else [list(prefixes[i]) for i in indices]
            outputs = self._search_batch([sources[i] for i in indices], forced, options, suppressed)
            if confidence:
                self.score_tokens([sources[i] for i in indices], outputs)
            for index, nbest in zip(indices, outputs):
                results[index] = nbest
            if on_batch is not None:
                on_batch(len(indices))
        if constraints is not None:
            mark_engine([results[i] for i in todo], self.name)
        return results

    def _search_constrained(
        self, sources: list[list[int]], mine: list[int], options: SearchOptions, max_tokens: int,
        prefixes: Sequence[Sequence[int]] | None, on_batch: OnBatch, constraints: Constraints, avoid: Avoid,
        stop: StopCheck | None,
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """Our engine's results for the sources `mine` (those with constraints), [] for the others."""
        if self.fallback is None:
            self.fallback = TorchFallback(None, device=self.device, precision="fp32")
        engine = self.fallback.engine()
        log.info("%d of %d sentences carry constraints: our engine translates them, CTranslate2 the rest",
                 len(mine), len(sources))  # fmt: skip
        found = engine.search(
            [sources[i] for i in mine], options, max_tokens=max_tokens, on_batch=on_batch,
            prefixes=None if prefixes is None else [prefixes[i] for i in mine],
            constraints=[constraints[i] for i in mine] if constraints else None, avoid=avoid, stop=stop,
        )  # fmt: skip
        results: list[list[Hypothesis]] = [[] for _ in sources]
        for index, nbest in zip(mine, found):
            results[index] = nbest
        return results

    def _search_batch(
        self, sources: list[list[int]], forced: list[list[int]] | None, options: SearchOptions,
        suppressed: list[list[str]],
    ) -> list[list[Hypothesis]]:  # fmt: skip
        """One translate_batch call: sources without eos (CTranslate2 adds it); a forced prefix is its
        target_prefix, returned with the output and counted in its length limit like ours."""
        limit = batch_limit(options, [len(s) for s in sources], [self.max_positions - 1] * len(sources))
        pieces = [pieces_of(self.src_tokenizer, source[:-1]) for source in sources]
        prefix = None if forced is None else [pieces_of(self.tgt_tokenizer, p) for p in forced]
        settings = {
            **self._settings(options, suppressed), "max_decoding_length": limit,
            "min_decoding_length": min(options.min_len, limit), "max_input_length": 0,
        }  # fmt: skip
        outputs = self.runner.translate_batch(pieces, prefix, use_vmap=self.use_vmap, **settings)
        return [[self._hypothesis(h, s) for h, s in zip(o.hypotheses, o.scores)] for o in outputs]

    def _settings(self, options: SearchOptions, suppressed: list[list[str]]) -> dict[str, Any]:
        """The keywords Translator.translate_batch and Generator.generate_batch share: sampling draws
        `nbest` samples like ours; pad and bos are never output, as in ours (bos unless it is eos: an
        M2M100/NLLB model starts from eos), nor the `suppressed` phrases (avoided, as pieces)."""
        never = [i for i in (self.ids.pad, self.ids.bos) if i != self.ids.eos]
        settings: dict[str, Any] = {
            "beam_size": 1 if options.sampling else options.beam_size, "num_hypotheses": options.nbest,
            "length_penalty": options.length_penalty, "no_repeat_ngram_size": options.no_repeat_ngram_size,
            "return_scores": True, "suppress_sequences": [pieces_of(self.tgt_tokenizer, [i]) for i in never]
            + suppressed,
        }  # fmt: skip
        if options.sampling:
            settings.update(
                sampling_topk=options.top_k,
                sampling_topp=options.top_p,
                sampling_temperature=options.temperature,
            )
        return settings

    def _hypothesis(self, pieces: list[str], score: float) -> Hypothesis:
        tokens = [self.tgt_tokenizer.piece_to_id(piece) for piece in pieces]
        return Hypothesis(tokens=tokens, score=float(score), log_prob=float(score))

    def score_tokens(self, sources: list[list[int]], outputs: list[list[Hypothesis]]) -> None:
        """Fill each hypothesis' `positional_scores` (and `log_prob`, their sum) with the model's own
        log-probability of every output token and the final eos, as ours mean them: CTranslate2's
        search scores are length-normalised sums and give forced prefix tokens none, so the outputs
        are scored again by teacher forcing (score_batch: one forward pass of the batch), prefix
        tokens included. Costs that pass only when confidence is asked for."""
        rows = [(source, hypothesis) for source, nbest in zip(sources, outputs) for hypothesis in nbest]
        if not rows:
            return
        scored = self._score_batch([source for source, _ in rows], [h.tokens for _, h in rows])
        for (_, hypothesis), log_probs in zip(rows, scored):
            hypothesis.positional_scores = log_probs
            hypothesis.log_prob = float(sum(log_probs))

    def _score_batch(self, sources: list[list[int]], outputs: list[list[int]]) -> list[list[float]]:
        """Translator.score_batch: sources without eos and outputs without bos / eos (it adds them);
        one log-probability per output token, then eos's."""
        results = self.runner.score_batch(
            [pieces_of(self.src_tokenizer, source[:-1]) for source in sources],
            [pieces_of(self.tgt_tokenizer, output) for output in outputs], max_input_length=0,
        )  # fmt: skip
        return [
            checked_log_probs(list(result.log_probs), len(output) + 1)
            for result, output in zip(results, outputs)
        ]


def pieces_of(tokenizer: TextTokenizer, ids: Sequence[int]) -> list[str]:
    return [tokenizer.id_to_piece(i) for i in ids]


def checked_log_probs(log_probs: list[float], expected: int) -> list[float]:
    """CTranslate2's per-token log-probabilities of one output, which must number `expected`."""
    if len(log_probs) != expected:
        raise RuntimeError(f"CTranslate2 scored {len(log_probs)} tokens of an output of {expected - 1} + eos")
    return [float(value) for value in log_probs]


def batch_limit(
    options: SearchOptions, lengths: Sequence[int], rooms: Sequence[int], already: Sequence[int] | None = None
) -> int:
    """The one output limit of a CTranslate2 call: the largest floor(max_len_a * length + max_len_b) of
    its sentences (less the `already` forced tokens it does not count), within every sentence's room.

    Ours gives every sentence its own limit; this equals it whenever the batch's limits are equal.
    """
    already = already if already is not None else [0] * len(lengths)
    rules = [math.floor(options.max_len_a * n + options.max_len_b) - a for n, a in zip(lengths, already)]
    return max(0, min(max(rules), min(rooms)))


def import_ctranslate2() -> Any:
    """The optional ctranslate2 package, or a one-line error saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise UserError("CTranslate2 is not installed; pip install 'seq2seq[export]'") from None
    return ctranslate2


def is_exported_model(path: str | Path) -> bool:
    return (Path(path) / EXPORTED_MODEL_FILE).is_file()
