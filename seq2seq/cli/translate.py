"""seq2seq-translate: a checkpoint plus text in, translations out, one output line per input line.

seq2seq-translate checkpoint=runs/bible.en-es/best.pt input=test.en output=test.hyp
echo "In the beginning God created the heavens." | seq2seq-translate checkpoint=... decode=greedy

Output line, tab-separated: the translation, then the score (scores=true), the confidence
(confidence=true, confidence_format=tsv) and the alignment (alignment=true), in that order; an empty
input line gives an empty line. With confidence_format=jsonl, one JSON object per input line instead
(`jsonl_lines`). With decode.nbest > 1, Moses n-best lines "index ||| text ||| score", plus
" ||| confidence" with confidence=true (tsv).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from seq2seq.cli.launch import config_dir, exit_on_user_error
from seq2seq.cli.setting_checks import pick_device, progress_bar_setting
from seq2seq.decode.attention_plot import column_labels, save_attention_png
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.decode.search import pad_batch
from seq2seq.errors import UserError
from seq2seq.files import atomic_output
from seq2seq.inference.confidence import Translation, confidence_of
from seq2seq.inference.rerank import check_weight
from seq2seq.inference.text_input import read_text_lines
from seq2seq.inference.translator import EncodedInput, Translator
from seq2seq.qe.scorer import QualityEstimator

log = logging.getLogger("seq2seq.translate")
CONFIDENCE_FORMATS = ("tsv", "jsonl")


def format_line(
    translation: Translation, *, scores: bool, confidence: bool, alignment: str | None, qe: bool = False
) -> str:
    """The columns of one non-empty input line's output: the text, then (each when asked for) score,
    confidence, QE score and alignment, tab-separated. An empty translation has no QE score: its column
    is empty, so that the columns after it stay in place."""
    text = translation.text
    if scores:
        text += f"\t{translation.score:.4f}"
    if confidence:
        text += f"\t{translation.confidence:.4f}"
    if qe:
        text += "\t" if translation.qe is None else f"\t{translation.qe:.4f}"
    if alignment is not None:
        text += f"\t{alignment}"
    return text


def alignments_and_pictures(
    cfg: DictConfig, translator: Translator, sources: list[list[int]], results: list[list[Hypothesis]]
) -> list[str | None]:
    """Argmax cross-attention alignments ("src-tgt" pairs) and optional heat maps, one sentence at a time."""
    out: list[str | None] = [None] * len(sources)
    picture_dir = Path(cfg.attention_dir) if cfg.attention_dir else None
    if picture_dir is not None:
        picture_dir.mkdir(parents=True, exist_ok=True)
    model, device = translator.model, translator.device
    stride = int(model.config.get("cross_downsample", 1))
    tokenizer = translator.tgt_tokenizer
    for index, (source, nbest) in enumerate(zip(sources, results)):
        if not nbest:
            out[index] = ""
            continue
        hypothesis = list(nbest[0].tokens)
        src = pad_batch([source], tokenizer.pad_id).to(device)  # (1, S)
        tgt_in = pad_batch([[tokenizer.bos_id] + hypothesis], tokenizer.pad_id).to(device)  # (1, T)
        weights = model.cross_attention(src, tgt_in, layer=int(cfg.attention_layer))[0]  # (H, T, S')
        weights = (
            weights.mean(0) if cfg.attention_head is None else weights[int(cfg.attention_head)]
        )  # (T, S')
        best_source = weights[: len(hypothesis)].argmax(-1).tolist()  # per target token
        out[index] = " ".join(f"{s * stride}-{t}" for t, s in enumerate(best_source))
        if picture_dir is not None:
            src_pieces = column_labels([translator.src_tokenizer.id_to_piece(i) for i in source], stride)
            tgt_pieces = [tokenizer.id_to_piece(i) for i in hypothesis] + ["</s>"]
            save_attention_png(picture_dir / f"{index + 1:06d}.png", weights, src_pieces, tgt_pieces)
    return out


def check_attention_settings(cfg: DictConfig, translator: Translator) -> None:
    """Refuse alignment=/attention_dir= before the search, not after it: they need one PyTorch model with
    cross-attention (a one-token probe lets the model refuse by itself: a decoder-only model has none),
    and attention_layer / attention_head must name one of its layers / heads."""
    model = translator.model
    if not hasattr(model, "cross_attention"):
        raise UserError(
            f"alignment and attention_dir need one PyTorch model, not engine={translator.engine.name} "
            "or an ensemble; pass a single .pt checkpoint"
        )
    layer, tokenizer = int(cfg.attention_layer), translator.tgt_tokenizer
    src = torch.tensor([[tokenizer.eos_id]], device=translator.device)  # (1, 1)
    tgt_in = torch.tensor([[tokenizer.bos_id]], device=translator.device)  # (1, 1)
    try:
        with torch.no_grad():
            heads = model.cross_attention(src, tgt_in, layer=layer).shape[1]  # (1, H, 1, 1)
    except IndexError:
        layers = int(model.config.get("decoder_layers", 0))
        raise UserError(f"attention_layer={layer} is not a decoder layer of this model ({layers} layers); "
                        f"use 0 to {layers - 1}, or -1 for the last") from None  # fmt: skip
    if cfg.attention_head is not None and not -heads <= int(cfg.attention_head) < heads:
        raise UserError(f"attention_head={cfg.attention_head} is not a head of this model ({heads} heads); "
                        f"use 0 to {heads - 1}, or null for their mean")  # fmt: skip


def write_output(target: str, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    with atomic_output(Path(target), "w", encoding="utf-8") as stream:  # mode from the umask
        stream.write(text)


@exit_on_user_error
def translate(cfg: DictConfig) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING if cfg.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    device = pick_device(str(cfg.device))
    weight = rerank_weight(cfg)
    quality = quality_model(cfg, device)
    translator = Translator.from_checkpoint(
        checkpoint_paths(cfg.checkpoint),
        device=device,
        quality=quality,
        rerank_weight=weight,
        engine=str(cfg.engine),
        precision=str(cfg.precision),
        quantization=str(cfg.quantization),
        compile=cfg.compile,
        shortlist=None if cfg.shortlist is None else hydra.utils.to_absolute_path(str(cfg.shortlist)),
        options=OmegaConf.to_container(cfg.decode),
        max_input_tokens=cfg.max_input_tokens,
        long_lines=str(cfg.long_lines),
        glossary=None if cfg.glossary is None else hydra.utils.to_absolute_path(str(cfg.glossary)),
    )  # fmt: skip  (decode keys left null take the model's own tuned values: seq2seq.decode.tuned_decoding)
    decode = dataclasses.asdict(translator.options)  # what the search uses, for the report
    confidence = confidence_setting(cfg)
    if cfg.alignment or cfg.attention_dir:
        check_attention_settings(cfg, translator)
    lines = _read(cfg.input, cfg.encoding_errors)
    encoded = translator.encode(lines)
    forced = None
    if cfg.prefix:
        prefixes = _read(cfg.prefix, cfg.encoding_errors)
        if len(prefixes) != len(lines):
            raise UserError(f"prefix={cfg.prefix} has {len(prefixes)} lines but the input has {len(lines)}; "
                            "give one target prefix (or an empty line) per input line")  # fmt: skip
        forced = translator.encode_prefixes(prefixes, encoded)
    wanted, banned = translator.encode_constraints(
        lines, encoded, constraints=_constraint_lines(cfg), avoid=_avoided(cfg)
    )
    log.info(
        "translating %d lines (%d pieces) with %s on %s",
        len(lines), len(encoded.sources), translator.options.describe(), translator.device,
    )  # fmt: skip
    start = time.perf_counter()
    results = _search_with_progress(
        cfg, translator, encoded.sources, forced, confidence=confidence is not None or quality is not None,
        constraints=wanted, avoid=banned,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    output = cfg.output if cfg.output == "-" else hydra.utils.to_absolute_path(cfg.output)
    if confidence == "jsonl":
        write_output(output, jsonl_lines(cfg, translator, encoded, results))
    elif translator.options.nbest > 1:  # Moses n-best format: "line ||| translation ||| score"
        write_output(output, nbest_lines(encoded.owners, results, translator, confidence=confidence == "tsv"))
    else:
        write_output(output, output_lines(cfg, translator, encoded, results, confidence=confidence == "tsv"))
    if cfg.report:
        write_report(
            Path(hydra.utils.to_absolute_path(cfg.report)), cfg, decode, results, len(lines), seconds,
            compiled=bool(getattr(translator.engine, "compiled", False)),
        )  # fmt: skip


def quality_model(cfg: DictConfig, device: torch.device) -> QualityEstimator | None:
    """The QE model of qe_checkpoint= (None when not set): it scores every translation."""
    if not cfg.qe_checkpoint:
        return None
    path = hydra.utils.to_absolute_path(str(cfg.qe_checkpoint))
    return QualityEstimator.from_checkpoint(path, device=device, precision=str(cfg.precision))


def rerank_weight(cfg: DictConfig) -> float | None:
    """rerank=qe's weight (None without re-ranking); rerank=qe needs qe_checkpoint= (checked before any
    model loads: seq2seq-serve calls this too)."""
    if cfg.rerank is None:
        return None
    if cfg.rerank != "qe":
        raise UserError(f"rerank={cfg.rerank!r} is not supported; choose qe (with qe_checkpoint=), or null")
    if not cfg.qe_checkpoint:
        raise UserError("rerank=qe needs a QE model: pass qe_checkpoint= (seq2seq-qe-train's best.pt)")
    return check_weight(cfg.rerank_weight)


def confidence_setting(cfg: DictConfig) -> str | None:
    """How to write each translation's confidence: "tsv" or "jsonl" (confidence_format), or None."""
    if not isinstance(cfg.confidence, bool):
        raise UserError(f"confidence={cfg.confidence!r} must be true or false")
    if cfg.confidence_format not in CONFIDENCE_FORMATS:
        raise UserError(f"confidence_format={cfg.confidence_format!r} is not supported; choose "
                        f"{' or '.join(CONFIDENCE_FORMATS)}")  # fmt: skip
    return str(cfg.confidence_format) if cfg.confidence else None


def output_lines(
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]],
    *, confidence: bool = False,
) -> list[str]:  # fmt: skip
    """One line per input line, its columns as `format_line` writes them. A split line's pieces are
    joined: texts with spaces, scores summed, the confidence over all their tokens, alignments with
    spaces (each piece's positions counted from its own start)."""
    qe = translator.quality is not None
    best = [nbest[0] for nbest in _translations(translator, encoded, results, confidence=confidence or qe)]
    alignments = _text_alignments(cfg, translator, encoded, results)
    return [
        format_line(translation, scores=bool(cfg.scores), confidence=confidence,
                    alignment=alignment if cfg.alignment else None, qe=qe) if given else ""
        for translation, alignment, given in zip(best, alignments, _given(encoded))
    ]  # fmt: skip


def jsonl_lines(
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]]
) -> list[str]:
    """One JSON object per input line: {"translation", "confidence", "mean_log_prob", "tokens",
    "token_probs"}, with "score" when scores=true and "alignment" when alignment=true; with
    decode.nbest > 1, {"nbest": [such objects, best first, each with "score"]}. An empty input line has
    translation "", confidence, mean_log_prob and score null and no tokens."""
    nbest = translator.options.nbest
    with_scores = bool(cfg.scores) or nbest > 1
    alignments = (
        _text_alignments(cfg, translator, encoded, results) if nbest == 1 else [None] * encoded.n_texts
    )
    lines = []
    for ranked, alignment, given in zip(
        translator.translations(encoded, results), alignments, _given(encoded)
    ):
        records = [_record(translation, score=with_scores, given=given) for translation in ranked]
        record = records[0] if nbest == 1 else {"nbest": records}
        if cfg.alignment and nbest == 1:
            record["alignment"] = alignment if given else None
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _record(translation: Translation, *, score: bool, given: bool) -> dict[str, Any]:
    record = translation.to_json()
    if score:
        record["score"] = round(translation.score, 4) if given else None
    return record


def _translations(
    translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]], *, confidence: bool
) -> list[list[Translation]]:
    """Per text, its n-best Translations, with their confidence only when asked for."""
    if confidence:
        return translator.translations(encoded, results)
    return [
        [Translation(text, score) for text, score in ranked]
        for ranked in translator.join_pieces(encoded, results)
    ]


def _given(encoded: EncodedInput) -> list[bool]:
    """Per text, whether it had anything to translate (an empty or blank line has no tokens)."""
    given = [False] * encoded.n_texts
    for owner, source in zip(encoded.owners, encoded.sources):
        given[owner] = given[owner] or bool(source)
    return given


def _text_alignments(
    cfg: DictConfig, translator: Translator, encoded: EncodedInput, results: list[list[Hypothesis]]
) -> list[str | None]:
    """Per text, its pieces' alignments joined with spaces (None unless alignment or attention_dir is
    set; the pictures are saved on the way)."""
    if not (cfg.alignment or cfg.attention_dir):
        return [None] * encoded.n_texts
    pieces: list[list[str]] = [[] for _ in range(encoded.n_texts)]
    for owner, alignment in zip(
        encoded.owners, alignments_and_pictures(cfg, translator, encoded.sources, results)
    ):
        pieces[owner].append(alignment or "")
    return [" ".join(p for p in parts if p) for parts in pieces]


def write_report(
    path: Path,
    cfg: DictConfig,
    decode: dict,
    results: list[list[Hypothesis]],
    n_lines: int,
    seconds: float,
    *,
    compiled: bool = False,
) -> None:
    """Speed and settings of this translation, as JSON (read by scripts/decode_and_score.sh)."""
    tokens = sum(len(nbest[0].tokens) + 1 for nbest in results if nbest)
    report = {
        "checkpoint": str(cfg.checkpoint),
        "input": str(cfg.input),
        "decode": decode,
        "precision": str(cfg.precision),
        "quantization": str(cfg.quantization),
        "compile": str(cfg.compile).lower(),
        "compiled": compiled,
        "device": str(cfg.device),
        "lines": n_lines,
        "seconds": seconds,
        "sentences_per_second": n_lines / max(seconds, 1e-9),
        "tokens_per_second": tokens / max(seconds, 1e-9),
        "threads": torch.get_num_threads(),
    }
    constrained = constraint_report(results)
    if constrained is not None:
        report["constraints"] = constrained
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


def nbest_lines(
    owners: list[int], results: list[list[Hypothesis]], translator: Translator, *, confidence: bool = False
) -> list[str]:
    """n-best lists in Moses format; a long line split into pieces lists each piece's hypotheses. With
    `confidence`, a fourth field: each hypothesis' confidence (empty for an empty input line)."""
    lines = []
    for owner, nbest in zip(owners, results):
        if not nbest:
            lines.append(f"{owner} |||  ||| 0.0000" + (" ||| " if confidence else ""))
        for hypothesis in nbest:
            text = translator.detokenize(hypothesis.tokens)
            line = f"{owner} ||| {text} ||| {hypothesis.score:.4f}"
            if confidence:
                line += f" ||| {confidence_of([hypothesis], translator.tgt_tokenizer).confidence:.4f}"
            lines.append(line)
    return lines


def _constraint_lines(cfg: DictConfig) -> list[list[str]] | None:
    """constraints=FILE: per line, its tab-separated phrases (a blank line: none)."""
    if not cfg.constraints:
        return None
    return [line.split("\t") if line.strip() else [] for line in _read(cfg.constraints, cfg.encoding_errors)]


def _avoided(cfg: DictConfig) -> list[str] | None:
    """avoid=FILE: one phrase per line (blank lines skipped)."""
    if not cfg.avoid:
        return None
    return [line for line in _read(cfg.avoid, cfg.encoding_errors) if line.strip()]


def constraint_report(results: list[list[Hypothesis]]) -> dict[str, Any] | None:
    """Sentences with constraints, their phrases, how many were met, and which engine translated them."""
    best = [nbest[0] for nbest in results if nbest and nbest[0].constraints_total]
    if not best:
        return None
    engines: dict[str, int] = {}
    for hypothesis in best:
        engines[hypothesis.engine or "torch"] = engines.get(hypothesis.engine or "torch", 0) + 1
    return {
        "sentences": len(best),
        "phrases": sum(h.constraints_total or 0 for h in best),
        "met": sum(h.constraints_met or 0 for h in best),
        "engines": engines,
    }


def checkpoint_paths(setting: Any) -> list[str]:
    """checkpoint=PATH, or checkpoint=[a.pt,b.pt] for an ensemble, as absolute paths."""
    values = list(setting) if OmegaConf.is_list(setting) else [setting]
    return [hydra.utils.to_absolute_path(str(value)) for value in values]


def _read(source: str, encoding_errors: str) -> list[str]:
    path = source if source == "-" else hydra.utils.to_absolute_path(source)
    return read_text_lines(
        path, encoding_errors=encoding_errors, fix="fix the file or pass encoding_errors=replace"
    )


def _search_with_progress(
    cfg: DictConfig, translator: Translator, sources: list[list[int]], prefixes: list[list[int]] | None,
    *, confidence: bool, constraints: list[list[list[int]]] | None = None,
    avoid: list[list[int]] | None = None,
) -> list[list[Hypothesis]]:  # fmt: skip
    show = progress_bar_setting(cfg.progress_bar)
    use_bar = (sys.stderr.isatty() and cfg.input != "-") if show is None else show
    bar = tqdm(total=len(sources), unit="sent", desc="translate", file=sys.stderr) if use_bar else None
    try:
        return translator.search(
            sources, max_tokens=int(cfg.max_tokens), prefixes=prefixes, on_batch=bar.update if bar else None,
            confidence=confidence, constraints=constraints, avoid=avoid,
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="translate")
def main(cfg: DictConfig) -> None:
    translate(cfg)


if __name__ == "__main__":
    main()
