"""The Python API for a trained model: load it once, translate lists of sentences.

    from seq2seq import Translator

    translator = Translator.from_checkpoint("runs/quickstart/best.pt")
    [best] = translator.translate(["In the beginning was the Word."])  # beam 5: a Translation per text
    str(best), best.score                                               # "En el principio ...", -0.41
    translator.translate(texts, beam_size=8, nbest=3)[0].nbest  # its 3 best Translations, best first
    translator.translate(texts, confidence=True)  # each Translation also has confidence, token_probs, ...
    translator.translate(["The LORD is my shepherd."], constraints=[["Jehová"]])  # "Jehová" will appear

Setting names are the CLI's and the server's (seq2seq.inference.settings has them all side by side).

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

Languages: a multilingual model (M2M100, NLLB) reads the source language's code before the text and must
write the target language's code first; `src_lang=` / `tgt_lang=` choose them (at construction, or per
call of translate()), and every search forces the target code (seq2seq.inference.languages).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.compiled import compile_setting
from seq2seq.decode.constraints import continuing_pieces
from seq2seq.decode.hypotheses import Hypothesis, SpecialIds, StopCheck
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.decode.shortlist import Shortlist
from seq2seq.decode.tuned_decoding import PAYLOAD_KEY, TunedDecoding, apply_model_decoding, requested_options
from seq2seq.errors import UserError, warn_renamed_keyword
from seq2seq.inference.confidence import Translation
from seq2seq.inference.constraint_input import (
    encode_avoid,
    encode_constraints,
    log_unmet,
    on_pieces,
    text_constraints,
)
from seq2seq.inference.engine_choice import ENGINES, check_quantization, engine_for
from seq2seq.inference.engines import Engine, TorchEngine
from seq2seq.inference.exported import METADATA_FILE, load_exported
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.input_limits import input_limit, source_limits
from seq2seq.inference.languages import (
    any_languages,
    check_languages,
    choose_languages,
    forced_codes,
    prefix_of,
    without_language_code,
)
from seq2seq.inference.loading import load_ensemble
from seq2seq.inference.markup import Marked, markup_pattern
from seq2seq.inference.markup_text import markup_setting, put_back, take_out
from seq2seq.inference.rerank import (
    QualityScorer,
    attach_quality,
    check_weight,
    loaded_scorer,
    rerank,
    rerank_setting,
)
from seq2seq.inference.results import by_rank, joined, translation_of, with_alternatives
from seq2seq.inference.text_input import clean_line
from seq2seq.nn.quantized import quantize_int8
from seq2seq.precision import check_precision

log = logging.getLogger(__name__)

LONG_LINE_POLICIES = ("truncate", "split", "error")
KEPT_LANGUAGE_PAIRS = 32  # Translators for other languages kept for reuse (each holds two tokenizers)
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
    marked: list[Marked | None] | None = None  # per text, its markup (None: plain); None: no text has any

    def plain(self, texts: Sequence[str]) -> list[str]:
        """`texts` as the model read them: a text with markup as its plain text."""
        if self.marked is None:
            return list(texts)
        return [text if found is None else found.plain for text, found in zip(texts, self.marked)]


class Translator:
    """Tokenizers, an engine that searches (ours, or CTranslate2 on an exported model), search settings
    and the input policy. `languages` is (source, target) when the training config saved in the
    checkpoint names them (None for an exported model), so a server need not read the file again.
    `src_lang` / `tgt_lang`: the language codes a multilingual model reads and writes (None: those
    recorded at import; seq2seq.inference.languages); `for_languages` gives a Translator for others."""

    def __init__(
        self,
        src_tokenizer: TextTokenizer,
        tgt_tokenizer: TextTokenizer,
        engine: Engine,
        *,
        options: SearchOptions = DEFAULT_OPTIONS,
        max_input_tokens: int | None = None,
        long_lines: str = "truncate",
        step: int = 0,
        languages: tuple[str, str] | None = None,
        quality: QualityScorer | None = None,
        rerank_weight: float | None = None,
        glossary: Glossary | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        markup: str | bool = "auto",
        placeholders: Sequence[str] | None = None,
    ) -> None:
        """`quality`: a QE model (seq2seq.qe.QualityEstimator) that scores every translation; with
        `rerank_weight` (None: no re-ranking), each search keeps its beam's n-best and orders them by
        score + weight * QE (from_checkpoint's qe_checkpoint=, rerank="qe" and rerank_weight= set both).
        `glossary`: its target terms become constraints of every text whose source has the term.
        `markup`, `placeholders`: how texts with inline tags and placeholders are translated
        (seq2seq.inference.markup_text; `placeholders`: regular expressions, None: the defaults)."""
        if long_lines not in LONG_LINE_POLICIES:
            raise UserError(
                f"long_lines={long_lines!r} is not supported; choose {', '.join(LONG_LINE_POLICIES)}"
            )
        self.src_tokenizer, self.tgt_tokenizer = choose_languages(
            src_tokenizer, tgt_tokenizer, src_lang=src_lang, tgt_lang=tgt_lang
        )
        self.engine = engine
        self.options, self.long_lines, self.step, self.languages = options, long_lines, step, languages
        limits = source_limits(engine, src_tokenizer.eos_id)
        self.max_input_tokens = input_limit(max_input_tokens, *limits, max_positions=engine.max_positions)
        self.quality, self.rerank_weight = quality, check_weight(rerank_weight)
        self.glossary = glossary
        self.markup, self.markup_pattern = markup_setting(markup), markup_pattern(placeholders)
        self._for_languages: dict[tuple[str | None, str | None], Translator] = {}  # for_languages' results
        self.check_shortlist()
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
        qe_checkpoint: QualityScorer | None = None,
        rerank: str | None = None,
        rerank_weight: float | None = None,
        glossary: str | Path | Glossary | None = None,
        quality: QualityScorer | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        markup: str | bool = "auto",
        placeholders: Sequence[str] | None = None,
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
        `qe_checkpoint`: a loaded QE model (`QualityEstimator.from_checkpoint(path)`, seq2seq.qe) that
        scores every translation; `rerank="qe"` orders each beam's n-best by score + rerank_weight (default
        1.0) * QE score (seq2seq.inference.rerank). `quality=` is qe_checkpoint's old name.
        `src_lang` / `tgt_lang`: the language codes a multilingual model (M2M100, NLLB) reads and writes
        by default (None: those recorded when it was imported); translate() may choose others.
        `markup` ("auto", "true", "false") and `placeholders`: texts with inline tags and placeholders
        (seq2seq.inference.markup_text); translate() may choose another `markup`.
        """
        paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
        chosen = engine_for(paths, engine)
        requested, given = requested_options(options, DEFAULT_OPTIONS)
        if glossary is not None and not isinstance(glossary, Glossary):
            glossary = Glossary.load(glossary)
        policy = {"max_input_tokens": max_input_tokens, "long_lines": long_lines, "glossary": glossary,
                  "src_lang": src_lang, "tgt_lang": tgt_lang, "markup": markup, "placeholders": placeholders,
                  **_qe_policy(qe_checkpoint, rerank, rerank_weight, quality)}  # fmt: skip
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
            tuned = TunedDecoding.read(exported.metadata.get(PAYLOAD_KEY), f"{metadata}{CTRANSLATE2_PENALTY}")
            resolved = _resolved(requested, given, tuned, metadata)
            tokenizers = (exported.src_tokenizer, exported.tgt_tokenizer)
            return cls(*tokenizers, exported.engine, step=exported.step, options=resolved, **policy)
        loaded = load_ensemble(paths, target)
        if quantization == "int8":
            quantize_int8(loaded.model)
        source = str(paths[0]) + (" (the first model of the ensemble)" if len(paths) > 1 else "")
        resolved = _resolved(requested, given, TunedDecoding.read(loaded.tuned_decoding, source), source)
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

    def for_languages(self, *, src_lang: str | None = None, tgt_lang: str | None = None) -> Translator:
        """This Translator reading `src_lang` and writing `tgt_lang` (None: as now): the same engine and
        settings, the tokenizers for those languages (one-line UserError for a code the model does not
        have, or for a model without language codes). Up to KEPT_LANGUAGE_PAIRS are kept: a server asks
        for one per request, and a tokenizer for another language is a new sentencepiece model."""
        if src_lang is None and tgt_lang is None:
            return self
        kept = self._for_languages.get((src_lang, tgt_lang))
        if kept is not None:
            return kept
        chosen = copy.copy(self)
        chosen.src_tokenizer, chosen.tgt_tokenizer = choose_languages(
            self.src_tokenizer, self.tgt_tokenizer, src_lang=src_lang, tgt_lang=tgt_lang
        )
        chosen._for_languages = {}
        chosen.check_shortlist()
        if len(self._for_languages) >= KEPT_LANGUAGE_PAIRS:
            self._for_languages.clear()  # (atomic: threads may share this Translator)
        self._for_languages[(src_lang, tgt_lang)] = chosen
        return chosen

    def warm_up(self) -> None:
        """One short greedy search, so that the first real one does not pay one-time setup (a server's
        first request); a multilingual model without chosen languages warms up in any of its own."""
        src, tgt = any_languages(self.src_tokenizer, self.tgt_tokenizer)
        self.translate(["Warm-up."], beam_size=1, src_lang=src, tgt_lang=tgt)

    def own_tokens(self, hypothesis: Hypothesis) -> Hypothesis:
        """The hypothesis without the target language code a multilingual model's output starts with:
        the tokens a Translation and its confidence describe (seq2seq.inference.languages)."""
        return without_language_code(hypothesis, forced_codes(self.src_tokenizer, self.tgt_tokenizer))

    def check_shortlist(self) -> None:
        """A one-line UserError when the engine's shortlist was learned for another direction than the one
        this Translator translates (a multilingual model's shortlist serves one: seq2seq.decode.shortlist)."""
        shortlist = getattr(self.engine, "shortlist", None)
        if shortlist is not None:
            shortlist.check_direction(self.src_tokenizer.language, self.tgt_tokenizer.language)

    def check_languages(self) -> None:
        """A one-line UserError when the model has language codes and no language was chosen on a side
        (nor recorded at import): src_lang= or tgt_lang= is then needed."""
        check_languages(self.src_tokenizer, self.tgt_tokenizer)

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
        confidence: bool = False,
        max_tokens: int = 4096,
        options: SearchOptions | None = None,
        prefixes: Sequence[str] | None = None,
        constraints: Sequence[Sequence[str]] | None = None,
        avoid: Sequence[str] | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        return_scores: bool | None = None,
        return_confidence: bool | None = None,
        markup: str | bool | None = None,
        on_batch: Callable[[int], Any] | None = None,
    ) -> list[Translation]:
        """One Translation per text, in order (seq2seq.inference.confidence; `str()` of one is its text).
        Arguments left None keep `options` (default: this Translator's). Every Translation has its
        `score` (what the CLI's `scores=true` writes as a column); `confidence` fills its confidence,
        mean_log_prob, tokens and token_probs (else None / empty). With nbest > 1, each Translation is the
        text's best and carries its n-best list, best first, in `nbest`. A text split into pieces joins
        the pieces' k-th hypotheses, its score is the sum of theirs and its confidence their tokens'
        together (seq2seq.inference.results). `prefixes` (one per text, "" for none) forces the start of
        each translation; forced tokens count in the score and the confidence. `constraints` (one list of
        target phrases per text, [] for none) must appear in the translations, with the glossary's
        (seq2seq.decode.constrained); `avoid` (phrases) must appear in none. A Translation then says how
        many phrases it met and which engine found it. `src_lang` / `tgt_lang`: the language codes a
        multilingual model reads and writes in this call (None: this Translator's; `for_languages`); the
        target code is forced first, before any prefix, and shows in no Translation's text or tokens.
        `markup`: "auto", "true" or "false" for this call (None: this Translator's): a text's inline tags,
        entities and placeholders are taken out, and put back into its translation by alignment
        (seq2seq.inference.markup_text); scores, confidence and tokens are those of the plain text's.
        `on_batch(n)`: called after each search batch with its number of pieces (a progress bar).
        `return_confidence`: the old name of `confidence`; `return_scores`: no longer needed (every
        Translation has its score).
        """
        if return_scores is not None:
            warn_renamed_keyword("return_scores", "each Translation's score (always filled)")
        if return_confidence is not None:
            warn_renamed_keyword("return_confidence", "confidence")
            confidence = confidence or return_confidence
        options = (options or self.options).replace(
            beam_size=beam_size, nbest=nbest, length_penalty=length_penalty, max_len_a=max_len_a,
            max_len_b=max_len_b,
        )  # fmt: skip
        translator = self.for_languages(src_lang=src_lang, tgt_lang=tgt_lang)
        encoded = translator.encode(texts, markup=markup)
        forced = None if prefixes is None else translator.encode_prefixes(prefixes, encoded)
        wanted, banned = translator.encode_constraints(
            texts, encoded, options, constraints=constraints, avoid=avoid
        )
        results = translator.search(
            encoded.sources, options, max_tokens=max_tokens, prefixes=forced, confidence=confidence,
            constraints=wanted, avoid=banned, on_batch=on_batch,
        )  # fmt: skip
        ranked = translator.translations(encoded, results, confidence=confidence)
        return [with_alternatives(nbest) if options.nbest > 1 else nbest[0] for nbest in ranked]

    # ------------------------------------------------------------------ the steps, for the CLI
    def encode(self, texts: Sequence[str], *, markup: str | bool | None = None) -> EncodedInput:
        """Clean each text and split it into pieces of at most `max_input_tokens` tokens (+ eos). The
        source tokenizer's prefix (a multilingual model's source language code) starts every piece and
        counts in its tokens; a model with language codes and none chosen is a UserError here. A text
        with markup (`markup`; None: this Translator's) is encoded as its plain text, and `translations`
        / `join_pieces` put its markup back (seq2seq.inference.markup_text)."""
        self.check_languages()
        mode = self.markup if markup is None else markup_setting(markup)
        marked: list[Marked | None] | None = take_out(texts, mode, self.markup_pattern)
        if any(found is not None for found in marked):
            texts = [text if found is None else found.plain for text, found in zip(texts, marked)]
        else:
            marked = None
        limit, tokenizer = self.max_input_tokens, self.src_tokenizer
        head = list(prefix_of(tokenizer))  # what encode() puts first: on every piece of a split text
        room = max(limit - len(head), 1)
        sources: list[list[int]] = []
        owners: list[int] = []
        truncated = 0
        for number, text in enumerate(texts):
            line = clean_line(text)
            body = tokenizer.encode(line)[len(head) :] if line else []
            if len(head) + len(body) > limit and self.long_lines == "error":
                raise UserError(
                    f"input line {number + 1} has {len(head) + len(body)} tokens, more than the limit of "
                    f"{limit}; pass long_lines=truncate or long_lines=split"
                )
            if len(head) + len(body) > limit and self.long_lines == "truncate":
                body, truncated = body[:room], truncated + 1
            for start in range(0, max(len(body), 1), room):
                chunk = body[start : start + room]
                sources.append(head + chunk + [tokenizer.eos_id] if chunk else [])
                owners.append(number)
        if truncated:
            log.warning(
                "%d line(s) longer than %d tokens were truncated (long_lines=truncate)", truncated, limit
            )
        return EncodedInput(sources=sources, owners=owners, n_texts=len(texts), marked=marked)

    def encode_prefixes(self, prefixes: Sequence[str], encoded: EncodedInput) -> list[list[int]]:
        """Target tokens forced at the start of each piece: the target tokenizer's prefix (a multilingual
        model's target language code) on every piece, then a text's prefix on its first piece only."""
        if len(prefixes) != encoded.n_texts:
            raise UserError(f"got {len(prefixes)} prefixes for {encoded.n_texts} texts; pass one per text")
        head = list(prefix_of(self.tgt_tokenizer))
        forced, seen = [], set()
        for owner in encoded.owners:
            text = clean_line(prefixes[owner]) if owner not in seen else ""
            ids = self.tgt_tokenizer.encode(text) if text else []
            forced.append(ids if head and ids[: len(head)] == head else head + ids)  # the prefix once
            seen.add(owner)
        return forced

    def target_prefixes(self, sources: Sequence[Sequence[int]]) -> list[list[int]] | None:
        """Per source, the target tokens this Translator's searches force first (its target language
        code), or None when there are none: search(prefixes=None) forces them, and a caller that searches
        sources of several Translators together (a server batching requests for several target
        languages) passes each source's own (`for_languages(...).target_prefixes`)."""
        check_languages(self.src_tokenizer, self.tgt_tokenizer, source=False)
        head = list(prefix_of(self.tgt_tokenizer))
        return [list(head) for _ in sources] if head else None

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
        texts = encoded.plain(texts)  # a text with markup: its plain text, as the model reads it
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
        seq2seq.decode.hypotheses.SearchStopped (a server stops a search nobody waits for any more).
        `prefixes`: per source, the whole forced start of its output (`encode_prefixes`, which puts the
        target language code first); None: the target language code alone (`target_prefixes`), if any."""
        options = options or self.options
        if prefixes is None:
            prefixes = self.target_prefixes(sources)
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
        """Per text, its n-best (text, score) pairs: the pieces' k-th hypotheses joined with spaces (and
        markup put back, when a text had some)."""
        if encoded.marked is not None:
            return [
                [(t.text, t.score) for t in ranked]
                for ranked in self.translations(encoded, results, confidence=False)
            ]
        ranks = by_rank(encoded.owners, encoded.n_texts, results)
        return [[joined(parts, self.detokenize) for parts in ranked] for ranked in ranks]

    def translations(
        self, encoded: EncodedInput, results: list[list[Hypothesis]], *, confidence: bool = True
    ) -> list[list[Translation]]:
        """Per text, its n-best Translations (seq2seq.inference.results), with their confidence when asked
        for: `results` must then come from `search(..., confidence=True)`."""
        ranks = by_rank(encoded.owners, encoded.n_texts, results)
        tokenizer = self.tgt_tokenizer
        if forced_codes(self.src_tokenizer, tokenizer):  # the forced language code: no token of the text
            ranks = [[[self.own_tokens(h) for h in parts] for parts in ranked] for ranked in ranks]
        translations = [
            [translation_of(parts, self.detokenize, tokenizer, confidence=confidence) for parts in ranked]
            for ranked in ranks
        ]
        if encoded.marked is None:
            return translations
        return put_back(self, encoded.marked, encoded.owners, encoded.sources, results, translations)


def _qe_policy(
    qe_checkpoint: QualityScorer | None,
    rerank: str | None,
    weight: float | None,
    quality: QualityScorer | None,
) -> dict[str, Any]:
    """The Translator's `quality` and `rerank_weight` from from_checkpoint's QE settings; warns (at its
    caller's caller) for the old names: `quality=`, and `rerank_weight=` alone, which used to re-rank."""
    if quality is not None:
        warn_renamed_keyword("quality", "qe_checkpoint", depth=2)
        if qe_checkpoint is None:
            qe_checkpoint = quality
    if rerank is None and weight is not None:
        warn_renamed_keyword("rerank_weight= without rerank=", 'rerank="qe" with rerank_weight=', depth=2)
        rerank = "qe"
    scorer = loaded_scorer(qe_checkpoint)
    return {"quality": scorer, "rerank_weight": rerank_setting(rerank, weight, has_qe=scorer is not None)}


def _resolved(
    requested: SearchOptions, given: frozenset[str], tuned: TunedDecoding | None, source: str
) -> SearchOptions:
    """The options to search with, the model's own tuned values filled in; logged with the reason."""
    resolved, note = apply_model_decoding(requested, given, tuned, source)
    log.info("%s", note)
    return resolved


def _languages(config: dict[str, Any]) -> tuple[str, str] | None:
    """(source, target) language of a checkpoint's training config, when it names both."""
    data = config.get("data") or {}
    if data.get("src_lang") and data.get("tgt_lang"):
        return str(data["src_lang"]), str(data["tgt_lang"])
    return None


__all__ = [
    "DEFAULT_OPTIONS",
    "ENGINES",
    "LONG_LINE_POLICIES",
    "EncodedInput",
    "Translation",
    "Translator",
    "check_quantization",
]
