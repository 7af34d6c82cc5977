"""seq2seq-translate: a checkpoint plus text in, translations out, one output line per input line.

seq2seq-translate checkpoint=runs/bible.en-es/best.pt input=test.en output=test.hyp
echo "In the beginning God created the heavens." | seq2seq-translate checkpoint=... decode=greedy
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.common import config_dir, exit_on_user_error
from seq2seq.decode.attention_plot import save_attention_png
from seq2seq.decode.loading import LoadedModel, load_for_inference
from seq2seq.decode.text_input import clean_line, read_lines
from seq2seq.decode.translator import SearchOptions, pad_batch, search_ids
from seq2seq.errors import UserError

log = logging.getLogger("seq2seq.translate")
LONG_LINE_POLICIES = ("truncate", "split", "error")


def encode_sources(
    lines: list[str], loaded: LoadedModel, *, limit: int, policy: str
) -> tuple[list[list[int]], list[int]]:
    """Token ids (ending in eos) per piece to translate, and the input line each piece belongs to."""
    tokenizer = loaded.src_tokenizer
    sources: list[list[int]] = []
    owners: list[int] = []
    truncated = 0
    for number, line in enumerate(lines):
        ids = tokenizer.encode(line) if line else []
        if len(ids) > limit:
            if policy == "error":
                raise UserError(
                    f"input line {number + 1} has {len(ids)} tokens, more than the limit of {limit}; "
                    "pass long_lines=truncate or long_lines=split"
                )
            if policy == "truncate":
                ids, truncated = ids[:limit], truncated + 1
        chunks = [ids[i : i + limit] for i in range(0, len(ids), limit)] or [[]]
        for chunk in chunks:
            sources.append(chunk + [tokenizer.eos_id] if chunk else [])
            owners.append(number)
    if truncated:
        log.warning("%d line(s) longer than %d tokens were truncated (long_lines=truncate)", truncated, limit)
    return sources, owners


def format_line(nbest: list[Any], loaded: LoadedModel, *, scores: bool, alignment: str | None) -> str:
    if not nbest:
        return ""
    text = loaded.tgt_tokenizer.decode(list(nbest[0].tokens))
    if scores:
        text += f"\t{nbest[0].score:.4f}"
    if alignment is not None:
        text += f"\t{alignment}"
    return text


def alignments_and_pictures(
    cfg: DictConfig,
    loaded: LoadedModel,
    sources: list[list[int]],
    results: list[list[Any]],
    device: torch.device,
) -> list[str | None]:
    """Argmax cross-attention alignments ("src-tgt" pairs) and optional heat maps, one sentence at a time."""
    out: list[str | None] = [None] * len(sources)
    picture_dir = Path(cfg.attention_dir) if cfg.attention_dir else None
    if picture_dir is not None:
        picture_dir.mkdir(parents=True, exist_ok=True)
    stride = int(loaded.model.config.get("cross_downsample", 1))
    tokenizer = loaded.tgt_tokenizer
    for index, (source, nbest) in enumerate(zip(sources, results)):
        if not nbest:
            out[index] = ""
            continue
        hypothesis = list(nbest[0].tokens)
        src = pad_batch([source], tokenizer.pad_id).to(device)  # (1, S)
        tgt_in = pad_batch([[tokenizer.bos_id] + hypothesis], tokenizer.pad_id).to(device)  # (1, T)
        weights = loaded.model.cross_attention(src, tgt_in, layer=int(cfg.attention_layer))[0]  # (H, T, S')
        weights = (
            weights.mean(0) if cfg.attention_head is None else weights[int(cfg.attention_head)]
        )  # (T, S')
        best_source = weights[: len(hypothesis)].argmax(-1).tolist()  # per target token
        out[index] = " ".join(f"{s * stride}-{t}" for t, s in enumerate(best_source))
        if picture_dir is not None:
            src_pieces = [loaded.src_tokenizer.id_to_piece(i) for i in source]
            tgt_pieces = [tokenizer.id_to_piece(i) for i in hypothesis] + ["</s>"]
            save_attention_png(picture_dir / f"{index + 1:06d}.png", weights, src_pieces, tgt_pieces)
    return out


def write_output(target: str, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temp, path)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"device={name} but no CUDA device is available; use device=cpu")
    return torch.device(name)


@exit_on_user_error
def translate(cfg: DictConfig) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING if cfg.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    if cfg.long_lines not in LONG_LINE_POLICIES:
        raise UserError(
            f"long_lines={cfg.long_lines!r} is not supported; choose {', '.join(LONG_LINE_POLICIES)}"
        )
    decode = OmegaConf.to_container(cfg.decode)
    options = SearchOptions.from_config(decode)
    device = pick_device(str(cfg.device))
    loaded = load_for_inference(Path(hydra.utils.to_absolute_path(cfg.checkpoint)), device)
    input_path = cfg.input if cfg.input == "-" else hydra.utils.to_absolute_path(cfg.input)
    lines = [clean_line(line) for line in read_lines(input_path, encoding_errors=cfg.encoding_errors)]
    limit = int(cfg.max_input_tokens or loaded.model.config.get("max_positions", 1024) - 1)
    sources, owners = encode_sources(lines, loaded, limit=limit, policy=cfg.long_lines)
    log.info(
        "translating %d lines (%d pieces) with %s on %s", len(lines), len(sources), options.describe(), device
    )
    start = time.perf_counter()
    results = _search_with_progress(cfg, loaded, sources, options, device)
    seconds = time.perf_counter() - start
    output = cfg.output if cfg.output == "-" else hydra.utils.to_absolute_path(cfg.output)
    if options.nbest > 1:  # Moses n-best format: "line ||| translation ||| score", nbest lines per input line
        write_output(output, nbest_lines(owners, results, loaded))
    else:
        write_output(output, output_lines(cfg, loaded, lines, sources, owners, results, device))
    if cfg.report:
        write_report(
            Path(hydra.utils.to_absolute_path(cfg.report)), cfg, decode, results, len(lines), seconds
        )


def output_lines(
    cfg: DictConfig,
    loaded: LoadedModel,
    lines: list[str],
    sources: list[list[int]],
    owners: list[int],
    results: list[list[Any]],
    device: torch.device,
) -> list[str]:
    """One line per input line: pieces of a split line are joined; options append score and alignment."""
    alignments: list[str | None] = [None] * len(sources)
    if cfg.alignment or cfg.attention_dir:
        alignments = alignments_and_pictures(cfg, loaded, sources, results, device)
    pieces: list[list[str]] = [[] for _ in lines]
    for owner, nbest, alignment in zip(owners, results, alignments):
        text = format_line(
            nbest, loaded, scores=bool(cfg.scores), alignment=alignment if cfg.alignment else None
        )
        pieces[owner].append(text)
    return [" ".join(p for p in parts if p) for parts in pieces]


def write_report(
    path: Path, cfg: DictConfig, decode: dict, results: list[list[Any]], n_lines: int, seconds: float
) -> None:
    """Speed and settings of this translation, as JSON (read by scripts/decode_and_score.sh)."""
    tokens = sum(len(nbest[0].tokens) + 1 for nbest in results if nbest)
    report = {
        "checkpoint": str(cfg.checkpoint),
        "input": str(cfg.input),
        "decode": decode,
        "precision": str(cfg.precision),
        "device": str(cfg.device),
        "lines": n_lines,
        "seconds": seconds,
        "sentences_per_second": n_lines / max(seconds, 1e-9),
        "tokens_per_second": tokens / max(seconds, 1e-9),
        "threads": torch.get_num_threads(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


def nbest_lines(owners: list[int], results: list[list[Any]], loaded: LoadedModel) -> list[str]:
    """n-best lists in Moses format; a long line split into pieces lists each piece's hypotheses."""
    lines = []
    for owner, nbest in zip(owners, results):
        if not nbest:
            lines.append(f"{owner} |||  ||| 0.0000")
        for hypothesis in nbest:
            text = loaded.tgt_tokenizer.decode(list(hypothesis.tokens))
            lines.append(f"{owner} ||| {text} ||| {hypothesis.score:.4f}")
    return lines


def _search_with_progress(
    cfg: DictConfig,
    loaded: LoadedModel,
    sources: list[list[int]],
    options: SearchOptions,
    device: torch.device,
) -> list[list[Any]]:
    show = str(cfg.progress_bar).lower()
    use_bar = (sys.stderr.isatty() and cfg.input != "-") if show == "auto" else show in ("true", "1", "yes")
    bar = None
    if use_bar:
        from tqdm import tqdm

        bar = tqdm(total=len(sources), unit="sent", desc="translate", file=sys.stderr)
    tokenizer = loaded.tgt_tokenizer
    try:
        return search_ids(
            loaded.model,
            sources,
            options=options,
            bos_id=tokenizer.bos_id,
            eos_id=tokenizer.eos_id,
            pad_id=tokenizer.pad_id,
            device=device,
            max_tokens=int(cfg.max_tokens),
            precision=str(cfg.precision),
            on_batch=bar.update if bar else None,
        )
    finally:
        if bar is not None:
            bar.close()


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="translate")
def main(cfg: DictConfig) -> None:
    translate(cfg)


if __name__ == "__main__":
    main()
