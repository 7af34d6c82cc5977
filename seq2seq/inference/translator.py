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

Every call runs the one translation path (seq2seq.inference.pipeline), as seq2seq-translate, the server
and the corpus commands do: one result per input text, the input policy of seq2seq.inference.prepared
(an empty text gives ""; a text longer than `max_input_tokens` is truncated, split or refused, as
`long_lines` says).

Terminology: `constraints` (target phrases per text that must appear), a `glossary` that adds them and
`avoid` (phrases that must not appear); with an exported model, sentences with constraints are searched by
our engine on the PyTorch weights the export keeps (`TorchFallback`).

Languages: a multilingual model (M2M100, NLLB) reads the source language's code before the text and must
write the target language's code first; `src_lang=` / `tgt_lang=` choose them (at construction, or per
call of translate(), one for all texts or one per text), and every search forces the target code
(seq2seq.inference.languages).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.decode.compiled import compile_setting
from seq2seq.decode.hypotheses import Hypothesis, StopCheck
from seq2seq.decode.options import DEFAULT_OPTIONS, SearchOptions
from seq2seq.decode.tuned_decoding import TunedDecoding, apply_model_decoding, requested_options
from seq2seq.devices import pick_device
from seq2seq.errors import UserError, warn_renamed_keyword
from seq2seq.inference import pipeline
from seq2seq.inference.confidence import Translation
from seq2seq.inference.engine_choice import ENGINES, build_engine, check_quantization
from seq2seq.inference.engines import Engine
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.input_limits import input_limit, source_limits
from seq2seq.inference.languages import (
    ModelLanguages,
    any_languages,
    check_languages,
    choose_languages,
    prefix_of,
)
from seq2seq.inference.markup import markup_pattern
from seq2seq.inference.markup_text import AlignmentSource, markup_setting
from seq2seq.inference.prepared import Label, Prepared, prepare
from seq2seq.inference.request import TranslationRequest
from seq2seq.inference.rerank import QualityScorer, check_weight, qe_policy
from seq2seq.inference.results import with_alternatives
from seq2seq.precision import check_precision

log = logging.getLogger(__name__)

LONG_LINE_POLICIES = ("truncate", "split", "error")
KEPT_LANGUAGE_PAIRS = 32  # Translators for other languages kept for reuse (each holds two tokenizers)


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
        device: str | torch.device = "auto",
        precision: str = "fp32",
        quantization: str = "none",
        shortlist: str | Path | None = None,
        compile: str | bool = "auto",
        options: SearchOptions | Mapping[str, Any] | None = None,
        max_input_tokens: int | None = None,
        long_lines: str = "truncate",
        qe_checkpoint: str | Path | QualityScorer | None = None,
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
        `device`: "auto" (a GPU when CUDA has one, else the CPU), "cpu", "cuda" or "cuda:N", or a
        torch.device. `qe_checkpoint`: a QE model (seq2seq-qe-train's best.pt, loaded
        on `device`, or a loaded seq2seq.inference.quality.QualityEstimator) that scores every
        translation; `rerank="qe"` orders each beam's n-best by score + rerank_weight (default 1.0) * QE
        score (seq2seq.inference.rerank). `quality=` is qe_checkpoint's old name.
        `src_lang` / `tgt_lang`: the language codes a multilingual model (M2M100, NLLB) reads and writes
        by default (None: those recorded when it was imported); translate() may choose others.
        `markup` ("auto", "true", "false") and `placeholders`: texts with inline tags and placeholders
        (seq2seq.inference.markup_text); translate() may choose another `markup`.
        """
        paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
        requested, given = requested_options(options, DEFAULT_OPTIONS)
        if glossary is not None and not isinstance(glossary, Glossary):
            glossary = Glossary.load(glossary)
        target = device if isinstance(device, torch.device) else pick_device(str(device))
        policy = {
            "max_input_tokens": max_input_tokens,
            "long_lines": long_lines,
            "glossary": glossary,
            "src_lang": src_lang,
            "tgt_lang": tgt_lang,
            "markup": markup,
            "placeholders": placeholders,
            **qe_policy(qe_checkpoint, rerank, rerank_weight, quality, device=target, precision=precision),
        }
        built = build_engine(
            paths, engine=engine, device=target, precision=check_precision(precision),
            quantization=quantization, shortlist=shortlist, compile=compile_setting(compile),
        )  # fmt: skip
        resolved = _resolved(requested, given, built.tuned, built.source)
        return cls(built.src_tokenizer, built.tgt_tokenizer, built.engine, step=built.step,
                   languages=built.languages, options=resolved, **policy)  # fmt: skip

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

    def model_languages(self) -> ModelLanguages:
        """The languages the model reads and writes (its codes, or the pair its training recorded)."""
        return ModelLanguages.of(self.src_tokenizer, self.tgt_tokenizer, self.languages)

    def aligner(self) -> AlignmentSource:
        """What putting markup back reads: the model's cross-attention and the tokenizers."""
        return AlignmentSource(self.model, self.device, self.src_tokenizer, self.tgt_tokenizer)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.tgt_tokenizer.decode(tokens)

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
        src_lang: str | Sequence[str | None] | None = None,
        tgt_lang: str | Sequence[str | None] | None = None,
        return_scores: bool | None = None,
        return_confidence: bool | None = None,
        markup: str | bool | None = None,
        segment: str = "none",
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
        multilingual model reads and writes in this call, one for every text or a list of one per text
        (None: this Translator's; `for_languages`); texts of several languages are searched together; the
        target code is forced first, before any prefix, and shows in no Translation's text or tokens.
        `segment`: "sentences" splits each text into sentences, searched together and joined with the
        whitespace between them (seq2seq.inference.sentences; "none": a text is one sentence).
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
        request = TranslationRequest.of(
            texts, src_lang=src_lang, tgt_lang=tgt_lang, prefixes=prefixes, constraints=constraints,
            avoid=avoid, options=options, confidence=confidence, markup=markup, segment=segment,
        )  # fmt: skip
        [ranked] = pipeline.translate(self, [request], max_tokens=max_tokens, on_batch=on_batch)
        return [with_alternatives(nbest) if options.nbest > 1 else nbest[0] for nbest in ranked]

    # ------------------------------------------------------------------ the steps, one at a time
    def prepare(self, request: TranslationRequest, **labels: Label) -> Prepared:
        """The request as the search takes it (seq2seq.inference.prepared.prepare; `labels`: how its
        errors name a text, `label=` and `constraint_label=`)."""
        return prepare(self, request, **labels)

    def encode(self, texts: Sequence[str], **request: Any) -> Prepared:
        """`prepare` for texts; `request`: the keywords of TranslationRequest.of (src_lang, tgt_lang,
        prefixes, constraints, avoid, options, markup, confidence)."""
        return prepare(self, TranslationRequest.of(texts, **request))

    def search(
        self,
        sources: Prepared | Sequence[Sequence[int]],
        options: SearchOptions | None = None,
        *,
        max_tokens: int = 4096,
        on_batch: Callable[[int], Any] | None = None,
        confidence: bool | None = None,
        prefixes: list[list[int]] | None = None,
        constraints: list[list[list[int]]] | None = None,
        avoid: list[list[int]] | None = None,
        stop: StopCheck | None = None,
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses of every piece of `encode`'s result (seq2seq.inference.pipeline.search), or
        of token-id sources (ending in eos; [] gives []) with this Translator's target language code
        forced first unless `prefixes` says otherwise. `options`, `confidence`: None keeps the prepared
        ones (this Translator's options, no per-token log-probabilities)."""
        prepared = sources if isinstance(sources, Prepared) else self._prepared(sources, prefixes)
        banned = None if avoid is None else tuple(tuple(phrase) for phrase in avoid)
        changes = {"options": options, "confidence": confidence, "constraints": constraints, "avoid": banned}
        prepared = dataclasses.replace(prepared, **{k: v for k, v in changes.items() if v is not None})
        return pipeline.search(self, prepared, max_tokens=max_tokens, on_batch=on_batch, stop=stop)

    def _prepared(self, sources: Sequence[Sequence[int]], prefixes: list[list[int]] | None) -> Prepared:
        """Token-id sources as a Prepared: one text each, forced prefixes as given or the target code."""
        if prefixes is None:
            check_languages(self.src_tokenizer, self.tgt_tokenizer, source=False)
            prefixes = [list(prefix_of(self.tgt_tokenizer)) for _ in sources]
        return Prepared(sources=[list(s) for s in sources], owners=list(range(len(sources))),
                        n_texts=len(sources), options=self.options, prefixes=prefixes)  # fmt: skip

    def translations(self, prepared: Prepared, results: list[list[Hypothesis]]) -> list[list[Translation]]:
        """Per text of `prepared`, its n-best Translations (seq2seq.inference.pipeline.finish)."""
        return pipeline.finish(self, prepared, results)


def _resolved(
    requested: SearchOptions, given: frozenset[str], tuned: TunedDecoding | None, source: str
) -> SearchOptions:
    """The options to search with, the model's own tuned values filled in; logged with the reason."""
    resolved, note = apply_model_decoding(requested, given, tuned, source)
    log.info("%s", note)
    return resolved


__all__ = [
    "DEFAULT_OPTIONS",
    "ENGINES",
    "LONG_LINE_POLICIES",
    "Translation",
    "Translator",
    "check_quantization",
]
