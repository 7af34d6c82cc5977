#!/usr/bin/env python
"""An imported Hugging Face model: `transformers`' generate() against our engine on the same weights.

    python benchmarks/huggingface.py                 # 100 Bible test sentences, greedy and beam 5, 3 rounds
    python benchmarks/huggingface.py --quick         # 16 sentences, 1 round (a smoke run)
    python benchmarks/huggingface.py --sentences 200 --rounds 5 --threads 1

The model has the shape of Helsinki-NLP/opus-mt-en-es (MarianMT: d_model 512, 8 heads, FFN 2048, 6 + 6
post-norm layers, SiLU, scaled embeddings shared by both sides and the output, final_logits_bias, a
65,001-piece vocabulary) with random weights, and sentencepiece models trained on the Bible training text
(`data/bible_en_es`, built by `bash scripts/quickstart.sh` or `seq2seq-prepare`), padded with filler
pieces to the real model's vocabulary size. It is written as the hub stores it (config.json,
model.safetensors, source.spm, target.spm, vocab.json, tokenizer_config.json), then imported with
`seq2seq-import` as a user would import a downloaded model.

Rows: `transformers` (MarianTokenizer + MarianMTModel.generate, fp32, batches of --batch sentences
sorted by length), ours fp32 and ours int8 (`Translator.from_checkpoint(quantization=...)`, batches of
--max-tokens source tokens). A random model does not know when to stop, so every engine runs exactly
--steps decoder steps per sentence (transformers: min_new_tokens = max_new_tokens = steps; ours:
min_len = max_len_b = steps - 1 plus the forced eos): this compares the cost per step and leaves out
what early stopping saves on a trained model. Each (engine, search) runs in a fresh process (so its
peak RSS is its own), one after another in rotating order, --rounds times; the best round is reported,
with the spread of the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import _status_kib, describe_machine, format_table, load_average, mib, print_headline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "bible_en_es"
# Helsinki-NLP/opus-mt-en-es's config.json, the values that set its size and computation.
OPUS_MT_EN_ES = {
    "d_model": 512,
    "encoder_layers": 6,
    "decoder_layers": 6,
    "encoder_attention_heads": 8,
    "decoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "decoder_ffn_dim": 2048,
    "vocab_size": 65001,
    "decoder_vocab_size": 65001,
    "max_position_embeddings": 512,
    "activation_function": "swish",
    "scale_embedding": True,
    "share_encoder_decoder_embeddings": True,
    "static_position_embeddings": True,
}
ENGINES = ("transformers", "ours fp32", "ours int8")
SEARCHES = {"greedy": 1, "beam 5": 5}


def _train_spm(text: Path, prefix: Path, vocab_size: int) -> None:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(prefix),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        unk_id=1,
        eos_id=0,
        bos_id=-1,
        pad_id=-1,
        minloglevel=2,
        input_sentence_size=50_000,
        shuffle_input_sentence=True,
    )


def _vocabulary(source: Path, target: Path, size: int) -> dict[str, int]:
    """vocab.json as OPUS-MT's conversion writes it: </s>, <unk>, the pieces of both models, then filler
    pieces up to the real model's size, <pad> last."""
    import sentencepiece as spm

    vocab = {"</s>": 0, "<unk>": 1}
    for model in (source, target):
        processor = spm.SentencePieceProcessor(model_file=str(model))
        for index in range(processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(index), len(vocab))
    while len(vocab) < size - 1:
        vocab[f"<filler_{len(vocab)}>"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def build_hub_directory(directory: Path, vocab_pieces: int) -> None:
    """A MarianMT directory shaped like opus-mt-en-es, random weights, as the hub stores it."""
    import torch
    from transformers import MarianConfig, MarianMTModel

    _train_spm(DATA / "train.en", directory / "source", vocab_pieces)
    _train_spm(DATA / "train.es", directory / "target", vocab_pieces)
    (directory / "source.model").rename(directory / "source.spm")
    (directory / "target.model").rename(directory / "target.spm")
    vocab = _vocabulary(directory / "source.spm", directory / "target.spm", OPUS_MT_EN_ES["vocab_size"])
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer_config = {
        "tokenizer_class": "MarianTokenizer",
        "source_lang": "en",
        "target_lang": "es",
        "model_max_length": 512,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
    pad = vocab["<pad>"]
    config = MarianConfig(
        **OPUS_MT_EN_ES,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
    )
    torch.manual_seed(0)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_(0.0, 0.1)  # a real model's bias is not zero; ours must add it
    model.save_pretrained(directory)


def worker(args: argparse.Namespace) -> dict:
    """In a fresh process: load, translate, report seconds (loading excluded) and peak RSS."""
    import torch

    torch.set_num_threads(args.threads)
    lines = args.source.read_text(encoding="utf-8").splitlines()
    if args.worker == "transformers":
        seconds = _run_transformers(args, lines)
    else:
        seconds = _run_ours(args, lines)
    # VmHWM: this process image's own peak (ru_maxrss would carry the parent's peak across exec)
    peak = _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "peak_rss": peak * 1024}


def _run_transformers(args: argparse.Namespace, lines: list[str]) -> float:
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(args.hub_dir)
    model = MarianMTModel.from_pretrained(args.hub_dir).eval()
    order = sorted(range(len(lines)), key=lambda i: len(lines[i]))
    start = time.perf_counter()
    with torch.inference_mode():
        for first in range(0, len(order), args.batch):
            batch = [lines[i] for i in order[first : first + args.batch]]
            inputs = tokenizer(batch, return_tensors="pt", padding=True)
            outputs = model.generate(
                **inputs,
                num_beams=args.beam,
                do_sample=False,
                min_new_tokens=args.steps,
                max_new_tokens=args.steps,
                length_penalty=1.0,
                early_stopping=False,
            )
            assert outputs.shape[1] == args.steps + 1, outputs.shape  # start token + steps
            tokenizer.batch_decode(outputs, skip_special_tokens=True)
    return time.perf_counter() - start


def _run_ours(args: argparse.Namespace, lines: list[str]) -> float:
    from seq2seq import Translator

    quantization = "int8" if args.worker.endswith("int8") else "none"
    translator = Translator.from_checkpoint(args.checkpoint, quantization=quantization)
    options = translator.options.replace(
        beam_size=args.beam, min_len=args.steps - 1, max_len_a=0.0, max_len_b=args.steps - 1
    )
    start = time.perf_counter()
    translator.translate(lines, options=options, max_tokens=args.max_tokens)
    seconds = time.perf_counter() - start
    checked = translator.translate(lines[:2], options=options, confidence=True)  # untimed
    assert all(len(t.tokens) == args.steps for t in checked), "not every output ran all steps"  # eos included
    return seconds


def run_worker(engine: str, beam: int, args: argparse.Namespace, paths: dict[str, Path]) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        engine,
        "--beam",
        str(beam),
        "--threads",
        str(args.threads),
    ]
    command += ["--hub-dir", str(paths["hub"]), "--checkpoint", str(paths["checkpoint"])]
    command += ["--source", str(paths["source"]), "--steps", str(args.steps), "--batch", str(args.batch)]
    command += ["--max-tokens", str(args.max_tokens)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(args.threads)}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{engine} ({beam} beams) failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def prepare(args: argparse.Namespace, workdir: Path) -> dict[str, Path]:
    """The hub-like directory, its import, and the source sentences."""
    if not (DATA / "train.en").is_file():
        raise SystemExit(
            f"{DATA}/train.en is missing: run `bash scripts/quickstart.sh` or seq2seq-prepare first"
        )
    hub = workdir / "opus-mt-en-es-shaped"
    hub.mkdir()
    started = time.perf_counter()
    build_hub_directory(hub, args.vocab_pieces)
    checkpoint = workdir / "imported.pt"
    command = [sys.executable, "-m", "seq2seq.cli.import_model", f"input_dir={hub}", f"output={checkpoint}"]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(f"built and imported the model in {time.perf_counter() - started:.0f} s")
    source = workdir / "source.en"
    lines = (DATA / "test.en").read_text(encoding="utf-8").splitlines()[: args.sentences]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"hub": hub, "checkpoint": checkpoint, "source": source}


def measure(args: argparse.Namespace, paths: dict[str, Path]) -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = {(e, s): [] for s in SEARCHES for e in ENGINES}
    for round_index in range(args.rounds):
        order = list(runs)
        shift = round_index % len(order)
        for engine, search in order[shift:] + order[:shift]:
            runs[engine, search].append(run_worker(engine, SEARCHES[search], args, paths))
        print(f"round {round_index + 1}/{args.rounds} done; load average {load_average()}", flush=True)
    return runs


def report(args: argparse.Namespace, runs: dict[tuple[str, str], list[dict]]) -> None:
    rows = []
    for search in SEARCHES:
        baseline = min(r["seconds"] for r in runs["transformers", search])
        for engine in ENGINES:
            seconds = [r["seconds"] for r in runs[engine, search]]
            best = min(seconds)
            spread = (max(seconds) - best) / best if len(seconds) > 1 else 0.0
            ratio = baseline / best
            rss = max(r["peak_rss"] for r in runs[engine, search])
            rows.append(
                [
                    search,
                    engine,
                    f"{best:.2f}",
                    f"{args.sentences / best:.2f}",
                    f"{ratio:.2f}x",
                    mib(rss),
                    f"{spread:.0%}",
                ]
            )
            if engine != "transformers":
                target = ">= 2x" if (search, engine) == ("beam 5", "ours fp32") else ""
                print_headline(
                    f"opus-mt-en-es shape, {search}, {engine}, sentences/s",
                    "transformers generate",
                    f"{ratio:.2f}x",
                    target,
                )
    header = ["search", "engine", "best s", "sentences/s", "vs transformers", "peak RSS MiB", "spread"]
    print(format_table(header, rows, csv=args.csv))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sentences", type=int, default=100, help="Bible test sentences to translate")
    parser.add_argument("--steps", type=int, default=40, help="decoder steps per sentence, on every engine")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best is reported)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=32, help="transformers: sentences per generate() call")
    parser.add_argument("--max-tokens", type=int, default=1024, help="ours: source tokens per batch")
    parser.add_argument("--vocab-pieces", type=int, default=8000, help="pieces of each sentencepiece model")
    parser.add_argument("--quick", action="store_true", help="16 sentences, 10 steps, 1 round")
    parser.add_argument("--csv", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--hub-dir", "--checkpoint", "--source"):
        parser.add_argument(hidden, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return
    if args.quick:
        args.sentences, args.steps, args.rounds = 16, 10, 1
    print(describe_machine(args.threads))
    print(f"{args.sentences} sentences, {args.steps} decoder steps each, {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="hf-bench-") as scratch:
        paths = prepare(args, Path(scratch))
        report(args, measure(args, paths))
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
