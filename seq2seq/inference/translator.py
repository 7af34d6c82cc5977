"""The Python API for a trained model: load it once, translate lists of sentences.

    from seq2seq import Translator

    translator = Translator.from_checkpoint("runs/quickstart/best.pt")
    translator.translate(["In the beginning was the Word."])        # beam 5 -> ["En el principio ..."]
    translator.translate(texts, beam_size=8, nbest=3, return_scores=True)  # 3 (text, score) per text
    translator.translate(texts, return_confidence=True)  # a Translation per text: text, score, confidence
    translator.translate(["The LORD is my shepherd."], constraints=[["Jehová"]])  # "Jehová" will appear

Search settings: beam 5 with the model's own length_penalty and max_len_a when training tuned them
(seq2seq.decode.tuned_decoding), else the built-in defaults; `options=` or translate()'s arguments
override them.

Input policy, the same as seq2seq-translate's (which is a thin layer over this class): one result per
input text; an empty or whitespace-only text gives ""; control characters are removed and spaces
squeezed (`clean_line`); a text longer than `max_input_tokens` is truncated (the count is logged),
split into chunks translated separately and joined (`long_lines="split"`), or refused
(`long_lines="error"`).

Terminology: `constraints` (target phrases per text that must appear: seq2seq.decode.constrained), a
`glossary` (source term -> target term, seq2seq.inference.glossary) that adds them, and `avoid` (phrases that
must not appear). CTranslate2 has no positive constraints: with an exported model, the sentences that carry
some are searched by our engine on the PyTorch weights the export keeps (`TorchFallback`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.decode.compiled import compile_setting
from seq2seq.decode.constraints import continuing_pieces
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds, StopCheck
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.decode.shortlist import Shortlist
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY, ModelDecoding, apply_model_decoding, requested_options
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation, confidence_of
from seq2seq.inference.constraint_input import (
    encode_avoid,
    encode_constraints,
    log_unmet,
    on_pieces,
    text_constraints,
)
from seq2seq.inference.engines import CTranslate2Engine, TorchEngine, is_exported_model
from seq2seq.inference.exported import METADATA_FILE, load_exported
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.loading import load_ensemble
from seq2seq.inference.rerank import QualityScorer, attach_quality, check_weight, rerank
from seq2seq.inference.text_input import clean_line
from seq2seq.nn.quantized import QUANTIZATIONS, int8_available, quantize_int8
from seq2seq.precision import check_precision

log = logging.getLogger(__name__)

LONG_LINE_POLICIES = ("truncate", "split", "error")
ENGINES = ("auto", "torch", "ctranslate2")
CTRANSLATE2_PENALTY = (
    " (tuned with our GNMT length penalty; CTranslate2 divides by length ** penalty, which ranks a little "
    "differently)"
)


@dataclass
class EncodedInput:
    """Texts as the model reads them: one or more pieces per text (more with long_lines="split")."""

    sources: list[list[int]]  # token ids ending in eos per piece; [] for an empty text
    owners: list[int]  # the index of the text each piece belongs to
    n_texts: int


class Translator:
    """Tokenizers, an engine that searches (ours, or CTranslate2 on an exported model), search settings
    and the input policy. `languages` is (source, target) when the training config saved in the
    checkpoint names them (None for an exported model), so a server need not read the file again."""

    def __init__(
        self,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        engine: TorchEngine | CTranslate2Engine,
        *,
        options: SearchOptions = DEFAULT_OPTIONS,
        max_input_tokens: int | None = None,
        long_lines: str = "truncate",
        step: int = 0,
        languages: tuple[str, str] | None = None,
        quality: QualityScorer | None = None,
        rerank_weight: float | None = None,
        glossary: Glossary | None = None,
    ) -> None:
        """`quality`: a QE model (seq2seq.qe.QualityEstimator) that scores every translation; with
        `rerank_weight`, each search keeps its beam's n-best and orders them by score + weight * QE.
        `glossary`: its target terms become constraints of every text whose source has the term."""
        if long_lines not in LONG_LINE_POLICIES:
            raise UserError(
                f"long_lines={long_lines!r} is not supported; choose {', '.join(LONG_LINE_POLICIES)}"
            )
        self.src_tokenizer, self.tgt_tokenizer, self.engine = src_tokenizer, tgt_tokenizer, engine
        self.options, self.long_lines, self.step, self.languages = options, long_lines, step, languages
        model = engine.model if engine.model is not None else engine  # an exported model: the engine answers
        limits = _source_limits(model, engine.max_positions, src_tokenizer.eos_id, engine.device)
        self.max_input_tokens = _input_limit(max_input_tokens, *limits, max_positions=engine.max_positions)
        self.quality, self.rerank_weight = quality, check_weight(rerank_weight)
        self.glossary = glossary
        if self.rerank_weight is not None and quality is None:
            raise UserError("re-ranking by quality needs a QE model; pass qe_checkpoint= (seq2seq-qe-train's "
                            "best.pt), or drop rerank")  # fmt: skip

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path | Sequence[str | Path],
        *,
        engine: str = "auto",
        device: str | torch.device = "cpu",
        precision: str = "fp32",
        quantization: str = "none",
        shortlist: str | Path | None = None,
        compile: str | bool = "auto",
        options: SearchOptions | Mapping[str, Any] | None = None,
        max_input_tokens: int | None = None,
        long_lines: str = "truncate",
        quality: QualityScorer | None = None,
        rerank_weight: float | None = None,
        glossary: str | Path | Glossary | None = None,
    ) -> Translator:
        """A checkpoint file (engine "torch"), several checkpoint files (an ensemble of their models), or
        a directory written by `seq2seq-export` (engine "ctranslate2"); "auto" tells them apart. Models and
        tokenizers come from the files alone.

        `options`: None = DEFAULT_OPTIONS with the model's own tuned length_penalty and max_len_a, when it
        has them (seq2seq.decode.tuned_decoding); a SearchOptions = exactly those settings; a mapping like the
        `decode` config = its keys over DEFAULT_OPTIONS, and the model's own values for the tuned keys it
        leaves out or null. One log line says which values are used and why.

        `quantization="int8"`: the linear layers compute in int8, through PyTorch's dynamic int8 kernels
        (seq2seq.nn.quantized; CPU only, with precision="fp32") or CTranslate2's int8 compute type.
        `shortlist`: a file written by seq2seq-shortlist for this model; each batch's output projection
        then runs on its candidate tokens only (seq2seq.decode.shortlist; engine "torch").
        `compile`: "auto", "true" or "false" (or a bool): whether our engine's searches run a compiled
        decoder step (seq2seq.decode.compiled; auto: on CPU, for inputs large enough to repay compiling).
        `glossary`: a TSV file of source and target terms (or a Glossary): seq2seq.inference.glossary.
        """
        paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
        chosen = _engine_for(paths, engine)
        requested, given = requested_options(options, DEFAULT_OPTIONS)
        if glossary is not None and not isinstance(glossary, Glossary):
            glossary = Glossary.load(glossary)
        policy = {"max_input_tokens": max_input_tokens, "long_lines": long_lines, "quality": quality,
                  "rerank_weight": rerank_weight, "glossary": glossary}  # fmt: skip
        check_precision(precision)
        target = torch.device(device)
        check_quantization(quantization, engine=chosen, device=target, precision=precision)
        if chosen == "ctranslate2" and shortlist is not None:
            raise UserError("shortlist= works with engine=torch; CTranslate2 has its own vocabulary map "
                            "(vmap.txt in the exported directory, use_vmap)")  # fmt: skip
        compile = compile_setting(compile)
        if chosen == "ctranslate2" and compile == "true":
            raise UserError("compile=true compiles our engine's decoder step; CTranslate2 runs its own "
                            "kernels: use compile=auto or false with an exported model")  # fmt: skip
        if chosen == "ctranslate2":
            exported = load_exported(paths[0], device=target, precision=precision, quantization=quantization)
            metadata = f"{paths[0] / METADATA_FILE}"
            tuned = ModelDecoding.read(exported.metadata.get(PAYLOAD_KEY), f"{metadata}{CTRANSLATE2_PENALTY}")
            resolved = _resolved(requested, given, tuned, metadata)
            tokenizers = (exported.src_tokenizer, exported.tgt_tokenizer)
            return cls(*tokenizers, exported.engine, step=exported.step, options=resolved, **policy)
        loaded = load_ensemble(paths, target)
        if quantization == "int8":
            quantize_int8(loaded.model)
        source = str(paths[0]) + (" (the first model of the ensemble)" if len(paths) > 1 else "")
        resolved = _resolved(requested, given, ModelDecoding.read(loaded.decoding, source), source)
        ids = SpecialIds.of(loaded.tgt_tokenizer)
        candidates = None
        if shortlist is not None:
            models = (loaded.src_tokenizer.to_bytes(), loaded.tgt_tokenizer.to_bytes())
            candidates = Shortlist.load(Path(shortlist), src_model=models[0], tgt_model=models[1])
        tgt_pieces = loaded.tgt_tokenizer.pieces_of_vocabulary()
        torch_engine = TorchEngine(
            loaded.model, ids, device=target, precision=precision, shortlist=candidates, compile=compile,
            quantization=quantization, continuing=continuing_pieces(tgt_pieces),
        )  # fmt: skip
        return cls(loaded.src_tokenizer, loaded.tgt_tokenizer, torch_engine, step=loaded.step,
                   languages=_languages(loaded.config), options=resolved, **policy)  # fmt: skip

    @property
    def model(self) -> nn.Module | None:
        """The PyTorch model (None for an exported model: it lives inside CTranslate2)."""
        return self.engine.model

    @property
    def device(self) -> torch.device:
        return self.engine.device

    # ------------------------------------------------------------------ the one-call API
    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int | None = None,
        nbest: int | None = None,
        length_penalty: float | None = None,
        max_len_a: float | None = None,
        max_len_b: int | None = None,
        return_scores: bool = False,
        return_confidence: bool = False,
        max_tokens: int = 4096,
        options: SearchOptions | None = None,
        prefixes: Sequence[str] | None = None,
        constraints: Sequence[Sequence[str]] | None = None,
        avoid: Sequence[str] | None = None,
    ) -> list[Any]:
        """Translations of `texts`, in order. Arguments left None keep `options` (default: this
        Translator's). Returns one string per text; with `return_scores`, (text, score) pairs; with
        `return_confidence`, a `Translation` (text, score, confidence, mean_log_prob, tokens, token_probs:
        seq2seq.inference.confidence), whatever `return_scores` says; with nbest > 1, a list of nbest of
        those per text. A text split into pieces joins the pieces' k-th hypotheses, its score is the sum
        of theirs and its confidence their tokens' together. `prefixes` (one per text, "" for none)
        forces the start of each translation; forced tokens count in the score and the confidence.
        `constraints` (one list of target phrases per text, [] for none) must appear in the translations,
        with the glossary's (seq2seq.decode.constrained); `avoid` (phrases) must appear in none. A
        Translation then says how many phrases it met and which engine found it.
        """
        options = (options or self.options).replace(
            beam_size=beam_size, nbest=nbest, length_penalty=length_penalty, max_len_a=max_len_a,
            max_len_b=max_len_b,
        )  # fmt: skip
        encoded = self.encode(texts)
        forced = None if prefixes is None else self.encode_prefixes(prefixes, encoded)
        wanted, banned = self.encode_constraints(
            texts, encoded, options, constraints=constraints, avoid=avoid
        )
        results = self.search(
            encoded.sources, options, max_tokens=max_tokens, prefixes=forced, confidence=return_confidence,
            constraints=wanted, avoid=banned,
        )  # fmt: skip
        if return_confidence:
            shaped: list[list[Any]] = self.translations(encoded, results)
        else:
            joined = self.join_pieces(encoded, results)
            shaped = [[(text, score) if return_scores else text for text, score in nbest] for nbest in joined]
        return shaped if options.nbest > 1 else [nbest[0] for nbest in shaped]

    # ------------------------------------------------------------------ the steps, for the CLI
    def encode(self, texts: Sequence[str]) -> EncodedInput:
        """Clean each text and split it into pieces of at most `max_input_tokens` tokens (+ eos)."""
        limit, tokenizer = self.max_input_tokens, self.src_tokenizer
        sources: list[list[int]] = []
        owners: list[int] = []
        truncated = 0
        for number, text in enumerate(texts):
            line = clean_line(text)
            ids = tokenizer.encode(line) if line else []
            if len(ids) > limit and self.long_lines == "error":
                raise UserError(
                    f"input line {number + 1} has {len(ids)} tokens, more than the limit of {limit}; "
                    "pass long_lines=truncate or long_lines=split"
                )
            if len(ids) > limit and self.long_lines == "truncate":
                ids, truncated = ids[:limit], truncated + 1
            for start in range(0, max(len(ids), 1), limit):
                chunk = ids[start : start + limit]
                sources.append(chunk + [tokenizer.eos_id] if chunk else [])
                owners.append(number)
        if truncated:
            log.warning(
                "%d line(s) longer than %d tokens were truncated (long_lines=truncate)", truncated, limit
            )
        return EncodedInput(sources=sources, owners=owners, n_texts=len(texts))

    def encode_prefixes(self, prefixes: Sequence[str], encoded: EncodedInput) -> list[list[int]]:
        """Target tokens forced at the start of each piece: a text's prefix on its first piece only."""
        if len(prefixes) != encoded.n_texts:
            raise UserError(f"got {len(prefixes)} prefixes for {encoded.n_texts} texts; pass one per text")
        forced, seen = [], set()
        for owner in encoded.owners:
            text = clean_line(prefixes[owner]) if owner not in seen else ""
            forced.append(self.tgt_tokenizer.encode(text) if text else [])
            seen.add(owner)
        return forced

    def encode_constraints(
        self,
        texts: Sequence[str],
        encoded: EncodedInput,
        options: SearchOptions | None = None,
        *,
        constraints: Sequence[Sequence[str]] | None = None,
        avoid: Sequence[str] | None = None,
        label: Callable[[int], str] | None = None,
    ) -> tuple[list[list[list[int]]] | None, list[list[int]]]:
        """Per piece, the target phrases its translation must contain (explicit, then the glossary's; None
        when neither applies), and the avoided phrases, as target tokens (seq2seq.inference.constraint_input).
        `label(n)` names the n-th text (from 1) in errors; default "constraints line n"."""
        options = options or self.options
        banned = encode_avoid(avoid, self.tgt_tokenizer)
        glossed = None if self.glossary is None else [self.glossary.constraints(clean_line(t)) for t in texts]
        phrases = text_constraints(constraints, glossed, n_texts=encoded.n_texts)
        if phrases is None:
            return None, banned
        beams = options.beam_size if options.searches_beams else 1
        named = {} if label is None else {"label": label}
        per_text = encode_constraints(phrases, self.tgt_tokenizer, beam_size=beams, avoided=banned, **named)
        return on_pieces(per_text, encoded.owners), banned

    def search(
        self,
        sources: list[list[int]],
        options: SearchOptions | None = None,
        *,
        max_tokens: int = 4096,
        prefixes: list[list[int]] | None = None,
        on_batch: Callable[[int], Any] | None = None,
        confidence: bool = False,
        constraints: list[list[list[int]]] | None = None,
        avoid: list[list[int]] | None = None,
        stop: StopCheck | None = None,
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses of every source (token ids ending in eos; [] gives []). `confidence`:
        every hypothesis carries its per-token log-probabilities (`positional_scores`, eos included), as
        `translations` needs them; our engine always gives them, CTranslate2 only when asked. With a QE
        model every hypothesis carries its `qe` score; with a re-ranking weight the search keeps the
        beam's n-best (beam_size of them), orders them by score + weight * qe and keeps `nbest`.
        `constraints` / `avoid`: `encode_constraints`' results; unmet phrases are logged (`log_unmet`).
        `stop`: asked before each batch and at every decoding step; True ends the search with
        seq2seq.decode.hypotheses.SearchStopped (a server stops a search nobody waits for any more)."""
        options = options or self.options
        wanted = options.nbest
        if self.rerank_weight is not None and options.searches_beams:
            options = options.replace(nbest=options.beam_size)
        results = self.engine.search(
            sources, options, max_tokens=max_tokens, prefixes=prefixes, on_batch=on_batch,
            confidence=confidence, constraints=constraints, avoid=avoid, stop=stop,
        )  # fmt: skip
        if constraints is not None:
            log_unmet(results, no_repeat_ngram_size=options.no_repeat_ngram_size)
        if self.quality is not None:
            texts = [self.src_tokenizer.decode(source[:-1]) if source else "" for source in sources]
            attach_quality(self.quality, texts, results, self.detokenize)
            if self.rerank_weight is not None:
                results = rerank(results, self.rerank_weight, wanted)
        return results

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.tgt_tokenizer.decode(tokens)

    def join_pieces(
        self, encoded: EncodedInput, results: list[list[Hypothesis]]
    ) -> list[list[tuple[str, float]]]:
        """Per text, its n-best (text, score) pairs: the pieces' k-th hypotheses joined with spaces."""
        return [[self._joined(parts) for parts in ranks] for ranks in by_rank(encoded, results)]

    def translations(self, encoded: EncodedInput, results: list[list[Hypothesis]]) -> list[list[Translation]]:
        """`join_pieces` with each entry's confidence (seq2seq.inference.confidence): per text, its n-best
        Translations. `results` must come from `search(..., confidence=True)`."""
        return [
            [
                Translation.of(
                    *self._joined(parts),
                    confidence_of(parts, self.tgt_tokenizer),
                    _quality(parts),
                    **constraint_outcome(parts),
                )
                for parts in ranks
            ]
            for ranks in by_rank(encoded, results)
        ]

    def _joined(self, parts: list[Hypothesis]) -> tuple[str, float]:
        """(text, score) of the pieces' hypotheses: texts joined with spaces, scores summed."""
        texts = (self.detokenize(hypothesis.tokens) for hypothesis in parts)
        return " ".join(text for text in texts if text), sum(hypothesis.score for hypothesis in parts)


def constraint_outcome(parts: list[Hypothesis]) -> dict[str, Any]:
    """A text's constraint fields for its Translation: phrases met and asked for (summed over its pieces,
    when a constrained search found them) and the engine that translated it (when one says)."""
    outcome: dict[str, Any] = {}
    if any(hypothesis.constraints_total is not None for hypothesis in parts):
        outcome["constraints_met"] = sum(hypothesis.constraints_met or 0 for hypothesis in parts)
        outcome["constraints_total"] = sum(hypothesis.constraints_total or 0 for hypothesis in parts)
    engines = {hypothesis.engine for hypothesis in parts if hypothesis.engine}
    if engines:
        outcome["engine"] = "+".join(sorted(engines))
    return outcome


def _quality(parts: list[Hypothesis]) -> float | None:
    """A text's QE score: its pieces' mean (None unless every piece has one)."""
    scores = [hypothesis.qe for hypothesis in parts]
    return None if not scores or None in scores else sum(scores) / len(scores)  # type: ignore[arg-type]


def by_rank(encoded: EncodedInput, results: list[list[Hypothesis]]) -> list[list[list[Hypothesis]]]:
    """Per text, per rank k (as deep as its shallowest piece's n-best list), the pieces' k-th hypotheses
    in order; an empty text has one rank with no pieces."""
    pieces: list[list[list[Hypothesis]]] = [[] for _ in range(encoded.n_texts)]
    for owner, nbest in zip(encoded.owners, results):
        if nbest:
            pieces[owner].append(nbest)
    ranks = []
    for parts in pieces:
        depth = min((len(nbest) for nbest in parts), default=1)
        ranks.append([[nbest[k] for nbest in parts] for k in range(depth)])
    return ranks


def _resolved(
    requested: SearchOptions, given: frozenset[str], tuned: ModelDecoding | None, source: str
) -> SearchOptions:
    """The options to search with, the model's own tuned values filled in; logged with the reason."""
    resolved, note = apply_model_decoding(requested, given, tuned, source)
    log.info("%s", note)
    return resolved


def _source_limits(
    model: nn.Module | None, max_positions: int, eos_id: int, device: torch.device
) -> tuple[int, int]:
    """(most, default) source lengths in tokens, eos apart: the longest source that leaves room for one
    output token, and the longest that leaves room for an output as long as itself, as the model's
    `output_room` tells. An encoder-decoder's output has positions of its own (both are max_positions - 1);
    a decoder-only model's source and output share them, so its longest inputs, read whole, would leave
    no room to answer. `model` may be an engine with `output_room` (an exported decoder-only model);
    without one, max_positions - 1."""
    most = max_positions - 1
    room = getattr(model, "output_room", None)
    if not callable(room):
        return most, most

    def leaves(length: int) -> int:
        return int(room(torch.full((1, length + 1), eos_id, device=device))[0])  # only the count matters

    most = _longest(lambda length: leaves(length) >= 1, most)
    return most, _longest(lambda length: leaves(length) >= length, most)


def _longest(fits: Callable[[int], bool], most: int) -> int:
    """The largest length from 1 to `most` that fits (`fits` holds up to some length, then never); 1 if
    none does."""
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def _input_limit(max_input_tokens: int | None, most: int, default: int, *, max_positions: int) -> int:
    """The longest source in tokens: the setting, or `default` (what the model reads and still has room to
    answer, _source_limits). A limit of 0 or less would empty every translation without a word; one above
    `most` asks the model for positions it was not built to read."""
    if max_input_tokens is None:
        return default
    if (
        not isinstance(max_input_tokens, int)
        or isinstance(max_input_tokens, bool)
        or not 1 <= max_input_tokens <= most
    ):
        raise UserError(
            f"max_input_tokens={max_input_tokens!r} must be an integer from 1 to {most} (the longest source, "
            f"eos apart, that leaves room for output in this model's {max_positions} positions); "
            f"or null for {default}"
        )
    return max_input_tokens


def _languages(config: dict[str, Any]) -> tuple[str, str] | None:
    """(source, target) language of a checkpoint's training config, when it names both."""
    data = config.get("data") or {}
    if data.get("src_lang") and data.get("tgt_lang"):
        return str(data["src_lang"]), str(data["tgt_lang"])
    return None


def check_quantization(quantization: str, *, engine: str, device: torch.device, precision: str) -> None:
    """A quantization this engine, device and precision can run, else a one-line error that says why."""
    if quantization not in QUANTIZATIONS:
        choices = " or ".join(QUANTIZATIONS)
        raise UserError(f"quantization={quantization!r} is not supported; choose {choices}")
    if quantization == "none" or engine == "ctranslate2":
        return
    if device.type != "cpu":
        raise UserError(f"quantization=int8 runs on CPU (PyTorch's dynamic int8 kernels have no "
                        f"{device.type} version); on a GPU use precision=bf16, or engine=ctranslate2 with "
                        "an exported model")  # fmt: skip
    if precision != "fp32":
        raise UserError(f"quantization=int8 cannot run with precision={precision}: its products are int8 and "
                        "the rest of the model fp32; use precision=fp32")  # fmt: skip
    if not int8_available():
        raise UserError("this PyTorch build has no dynamic int8 kernels; use quantization=none, or "
                        "engine=ctranslate2 with a model exported by seq2seq-export")  # fmt: skip


def _engine_for(paths: list[Path], engine: str) -> str:
    if engine not in ENGINES:
        raise UserError(f"engine={engine!r} is not supported; choose {', '.join(ENGINES)}")
    if not paths:
        raise UserError("no checkpoint given; pass checkpoint=PATH (or a list of them for an ensemble)")
    exported = [p.is_dir() and is_exported_model(p) for p in paths]
    if len(paths) > 1 and any(exported):
        raise UserError("an ensemble takes .pt checkpoints, not exported models; pass the checkpoints")
    if engine == "auto":
        return "ctranslate2" if exported[0] else "torch"
    if engine == "ctranslate2" and not exported[0]:
        raise UserError(f"{paths[0]} is not a CTranslate2 model directory; make one with seq2seq-export")
    return engine


__all__ = [
    "DEFAULT_OPTIONS",
    "ENGINES",
    "LONG_LINE_POLICIES",
    "EncodedInput",
    "Translation",
    "Translator",
    "by_rank",
]
