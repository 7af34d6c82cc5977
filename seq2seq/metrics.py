"""Corpus-level BLEU, chrF and TER through sacreBLEU, each reported with its signature.

The signature (e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``) is what makes
a score comparable with published ones, so it travels with every number this module returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER

from seq2seq.errors import UserError

METRICS = ("bleu", "chrf", "chrf++", "ter")
DEFAULT_METRICS = ("bleu", "chrf", "ter")


def score_corpus(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    tokenize: str = "13a",
    lowercase: bool = False,
    hypothesis_name: str = "hypotheses",
    reference_names: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Score line-aligned hypotheses against one or more reference sets.

    `references` holds one list of lines per reference set (sacreBLEU's layout). `tokenize` and
    `lowercase` apply to BLEU (and `lowercase` to chrF); TER keeps sacreBLEU's defaults. The names
    only make error messages point at the right files.
    Returns {metric: {"score", "signature", "text"} (+ BLEU's "precisions", "bp", "ratio",
    "hyp_len", "ref_len")}, in the order of `metrics`.
    """
    names = (
        list(reference_names)
        if reference_names
        else [f"reference set {i + 1}" for i in range(len(references))]
    )
    _check_lines(hypotheses, references, hypothesis_name, names)
    results: dict[str, dict[str, Any]] = {}
    for name in metrics:
        metric = _metric(name, tokenize=tokenize, lowercase=lowercase)
        score = metric.corpus_score(list(hypotheses), [list(r) for r in references])
        result: dict[str, Any] = {
            "score": float(score.score),
            "signature": str(metric.get_signature()),
            "text": score.format(),
        }
        if name == "bleu":
            result.update(
                precisions=list(score.precisions),
                bp=score.bp,
                ratio=score.ratio,
                hyp_len=score.sys_len,
                ref_len=score.ref_len,
            )
        results[name] = result
    return results


def _check_lines(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    hypothesis_name: str,
    reference_names: Sequence[str],
) -> None:
    if not references:
        raise UserError("no references given; pass at least one reference file or set")
    if len(reference_names) != len(references):
        raise UserError(f"{len(reference_names)} reference names for {len(references)} reference sets")
    for name, lines in zip(reference_names, references):
        if len(lines) != len(hypotheses):
            raise UserError(
                f"{hypothesis_name} has {len(hypotheses)} lines but {name} has {len(lines)}; "
                "hypotheses and references must be line-aligned"
            )
    if not hypotheses:
        raise UserError(f"{hypothesis_name} is empty; there is nothing to score")


def _metric(name: str, *, tokenize: str, lowercase: bool) -> BLEU | CHRF | TER:
    if name == "bleu":
        if tokenize not in BLEU.TOKENIZERS:
            raise UserError(
                f"tokenize={tokenize!r} is not a sacreBLEU tokenizer; choose one of "
                f"{', '.join(BLEU.TOKENIZERS)}"
            )
        return BLEU(tokenize=tokenize, lowercase=lowercase)
    if name in ("chrf", "chrf++"):
        return CHRF(word_order=2 if name == "chrf++" else 0, lowercase=lowercase)
    if name == "ter":
        return TER()
    raise UserError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")


def format_scores(results: dict[str, dict[str, Any]]) -> str:
    """Human-readable lines: sacreBLEU's summary of each metric, then its signature."""
    return "\n".join(f"{r['text']}\n  signature: {r['signature']}" for r in results.values())


__all__ = ["DEFAULT_METRICS", "METRICS", "format_scores", "score_corpus"]
