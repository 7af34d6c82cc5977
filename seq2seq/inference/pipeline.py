"""The one translation path: requests -> prepared pieces -> search -> Translations.

    prepare(translator, request)        texts cleaned, markup out, encoded per language, prefixes,
                                        constraints (seq2seq.inference.prepared)
    search(translator, prepared)        the engine's n-best per piece, QE scores, re-ranking
    finish(translator, prepared, found) per text its n-best Translations: pieces joined, language codes
                                        left out, markup put back
    translate(translator, requests)     all three for a list of requests, searched together where their
                                        search settings and avoided phrases are the same

Translator.translate, seq2seq-translate, the server's batcher and the corpus commands all run these
functions and no copy of them; a server prepares each request on arrival and merges the prepared
requests of a batch (seq2seq.inference.prepared.merge) before one search.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from seq2seq.decode.hypotheses import Hypothesis, StopCheck
from seq2seq.inference.confidence import Translation
from seq2seq.inference.constraint_input import log_unmet
from seq2seq.inference.languages import forced_codes, without_language_code
from seq2seq.inference.markup_text import put_back
from seq2seq.inference.prepared import Prepared, merge, prepare
from seq2seq.inference.request import TranslationRequest
from seq2seq.inference.rerank import attach_quality, rerank
from seq2seq.inference.results import by_rank, translation_of
from seq2seq.inference.translation_setup import TranslationSetup

Ranked = list[list[Translation]]  # per text, its n-best Translations, best first


def search(
    translator: TranslationSetup,
    prepared: Prepared,
    *,
    max_tokens: int = 4096,
    on_batch: Callable[[int], Any] | None = None,
    stop: StopCheck | None = None,
) -> list[list[Hypothesis]]:
    """The n-best hypotheses of every piece ([] for an empty one). With a QE model every hypothesis
    carries its `qe` score; with a re-ranking weight the search keeps the beam's n-best (beam_size of
    them), orders them by score + weight * qe and keeps `nbest`. Unmet constraints are logged. `stop`:
    asked before each batch and at every decoding step; True ends the search with SearchStopped."""
    options = prepared.options
    wanted = options.nbest
    if translator.rerank_weight is not None and options.searches_beams:
        options = options.replace(nbest=options.beam_size)
    results = translator.engine.search(
        prepared.sources, options, max_tokens=max_tokens,
        prefixes=prepared.prefixes if any(prepared.prefixes) else None, on_batch=on_batch,
        confidence=prepared.confidence, constraints=prepared.constraints,
        avoid=[list(phrase) for phrase in prepared.avoid], stop=stop,
    )  # fmt: skip
    if prepared.constraints is not None:
        log_unmet(results, no_repeat_ngram_size=options.no_repeat_ngram_size)
    if translator.quality is not None:
        texts = [
            translator.src_tokenizer.decode(source[:-1]) if source else "" for source in prepared.sources
        ]
        attach_quality(translator.quality, texts, results, translator.tgt_tokenizer.decode)
        if translator.rerank_weight is not None:
            results = rerank(results, translator.rerank_weight, wanted)
    return results


def finish(translator: TranslationSetup, prepared: Prepared, results: list[list[Hypothesis]]) -> Ranked:
    """Per text, its n-best Translations (seq2seq.inference.results): a split text's pieces joined rank
    by rank, the forced language code in no text, token or probability, confidence when the request
    asked for it, and the markup put back."""
    ranks = by_rank(prepared.owners, prepared.n_texts, results)
    tokenizer = translator.tgt_tokenizer
    codes = forced_codes(translator.src_tokenizer, tokenizer)
    if codes:  # the forced language code: no token of the text
        ranks = [[[without_language_code(h, codes) for h in parts] for parts in ranked] for ranked in ranks]
    joints = prepared.separators or [None] * prepared.n_texts  # a paragraph's sentences: their whitespace
    translations = [
        [
            translation_of(
                parts, tokenizer.decode, tokenizer, confidence=prepared.confidence, separators=joint
            )
            for parts in ranked
        ]
        for ranked, joint in zip(ranks, joints)
    ]
    if prepared.marked is not None:
        translations = put_back(
            translator.aligner(), prepared.marked, prepared.owners, prepared.sources, results, translations
        )
    if prepared.edges is None:
        return translations
    return [  # a paragraph's own leading and trailing whitespace, around each of its translations
        [dataclasses.replace(t, text=f"{lead}{t.text}{trail}") for t in ranked] if lead or trail else ranked
        for ranked, (lead, trail) in zip(translations, prepared.edges)
    ]


def translate(
    translator: TranslationSetup,
    requests: Sequence[TranslationRequest],
    *,
    max_tokens: int = 4096,
    on_batch: Callable[[int], Any] | None = None,
) -> list[Ranked]:
    """Per request, per text, its n-best Translations. Requests with the same search settings and
    avoided phrases are searched together, whatever their languages."""
    prepared = [prepare(translator, request) for request in requests]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, part in enumerate(prepared):
        groups.setdefault((part.options, part.avoid), []).append(index)
    answers: list[Ranked] = [[] for _ in requests]
    for members in groups.values():
        merged = merge([prepared[i] for i in members])
        ranked = finish(
            translator, merged, search(translator, merged, max_tokens=max_tokens, on_batch=on_batch)
        )
        start = 0
        for index in members:
            answers[index] = ranked[start : start + prepared[index].n_texts]
            start += prepared[index].n_texts
    return answers


__all__ = ["Ranked", "finish", "search", "translate"]
