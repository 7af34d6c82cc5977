#!/usr/bin/env python
"""The Transformer families side by side on the Bible corpus: encoder-decoder against decoder-only.

    python benchmarks/families.py                        # all three, 30 minutes each (about 1 h 45 min)
    python benchmarks/families.py --minutes 5 --families decoder_only prefix_lm
    python benchmarks/families.py --report runs/families # the table again, from the runs' results

Each family trains, one after the other on this machine, for the same wall-clock budget, exactly as
scripts/quickstart.sh trains the default model: the recipe the quickstart picks for this CPU
(seq2seq.cli.config.recipe_choice), averaging of the last 20% of updates, the better of the average and
best.pt by whole-dev-set BLEU, and decoding settings tuned on dev. The checkpoint the quickstart would
translate then translates the test set with beam 5 and its tuned settings in a fresh process, timed
(sentences/s, model loading excluded), and is scored with sacreBLEU.

Families (model overrides on top of the recipe):
    encoder_decoder  the default model (model=small): 3 encoder + 3 decoder layers, d_model 256
    decoder_only     model=decoder_only: 7 causal layers, d_model 256 (about the same parameters)
    prefix_lm        model=decoder_only model.prefix_lm=true: the source attends bidirectionally

Each family trains in a new run directory under --out; one that exists stops the script (a rerun would
resume it). Peak RSS is the training process's (getrusage of the finished child), and separately the
translating process's. Run it on a quiet machine: another process on the cores changes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FAMILIES = {
    "encoder_decoder": [],
    "decoder_only": ["model=decoder_only"],
    "prefix_lm": ["model=decoder_only", "model.prefix_lm=true"],
}
HEADER = ("family", "parameters", "train tokens/s", "updates", "test BLEU", "test chrF", "decode sent/s",
          "train peak RSS", "decode peak RSS", "padding")  # fmt: skip


def run_child(command: list[str], log_path: Path) -> tuple[float, int]:
    """Run `command` to completion with its output in `log_path`: (seconds, peak RSS in bytes)."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command[:2])} failed; see {log_path}")
    return time.perf_counter() - start, usage.ru_maxrss * 1024


def recipe() -> list[str]:
    """The quickstart's recipe for this CPU, as overrides."""
    sys.path.insert(0, str(ROOT))
    from seq2seq.cli.config.recipe_choice import detected_choice

    choice = detected_choice()
    print(f"recipe: {choice.experiment or 'the defaults'} ({choice.reason})")
    return [f"experiment={choice.experiment}"] if choice.experiment else []


def train(family: str, minutes: float, out_dir: Path, extra: list[str]) -> dict:
    run_dir = out_dir / family
    if run_dir.exists():  # seq2seq-train would resume it: a finished run would report no training at all
        sys.exit(
            f"{run_dir} exists from an earlier comparison; pass a new --out (or --report to print its table)"
        )
    command = [str(BIN / "seq2seq-train"), f"hydra.run.dir={run_dir}", f"run_name=families-{family}",
               f"trainer.max_minutes={minutes}", "trainer.average_fraction=0.2", "trainer.tune_decoding=true",
               "trainer.progress_bar=false", *recipe(), *FAMILIES[family], *extra]  # fmt: skip
    print(f"[{family}] training {minutes} minutes: {' '.join(command[1:])}", flush=True)
    _, peak = run_child(command, out_dir / f"{family}.train.log")
    summary = json.loads((run_dir / "summary.json").read_text())
    final = (summary.get("final") or summary.get("averaged") or {}).get("checkpoint") or str(
        run_dir / "best.pt"
    )
    return {"summary": summary, "checkpoint": final, "train_peak_rss": peak}


def decode_worker(checkpoint: str, source: Path, output: Path, beam: int) -> None:
    """In a fresh process: load the checkpoint, translate `source`, print seconds and peak RSS as JSON.

    The Translator searches as seq2seq-translate does: beam `beam` with the model's own tuned
    length_penalty and max_len_a."""
    import resource

    sys.path.insert(0, str(ROOT))
    from seq2seq import Translator

    translator = Translator.from_checkpoint(checkpoint)
    lines = source.read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()
    outputs = [str(t) for t in translator.translate(lines, beam_size=beam)]
    seconds = time.perf_counter() - start
    output.write_text("".join(line + "\n" for line in outputs), encoding="utf-8")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "sentences": len(lines), "peak_rss": peak}))


def translate(family: str, checkpoint: str, data_dir: Path, out_dir: Path, beam: int) -> dict:
    hypotheses = out_dir / f"{family}.test.beam{beam}.es"
    source = str(data_dir / "test.en")
    command = [sys.executable, __file__, "--decode-worker", checkpoint, source, str(hypotheses),
               "--beam", str(beam)]  # fmt: skip
    print(f"[{family}] translating the test set with beam {beam}", flush=True)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"[{family}] translation failed: {result.stderr[-2000:]}")
    measured = json.loads(result.stdout.splitlines()[-1])
    return {"hypotheses": str(hypotheses), "decode_seconds": measured["seconds"],
            "sentences": measured["sentences"],
            "decode_peak_rss": measured["peak_rss"]}  # fmt: skip


def score(hypotheses: str, references: Path) -> dict:
    import sacrebleu

    hyps = Path(hypotheses).read_text(encoding="utf-8").splitlines()
    refs = references.read_text(encoding="utf-8").splitlines()
    return {
        "bleu": sacrebleu.corpus_bleu(hyps, [refs]).score,
        "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score,
    }


def padding_share(family: str, data_dir: Path, max_tokens: int) -> float:
    """Padding in the training batches as this family forms them (the run's token budget, epoch 0)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from seq2seq.data.batching import TokenBatchSampler, padding_waste

    cache = sorted(
        (data_dir / "cache").glob("train.*/src.lengths.npy"), key=lambda path: path.stat().st_mtime
    )
    if not cache:
        return float("nan")
    src = np.load(
        cache[-1]
    )  # the encoded training pairs (before the length filter: a few more than trained on)
    tgt = np.load(cache[-1].with_name("tgt.lengths.npy"))
    sampler = TokenBatchSampler(src, tgt, max_tokens, seed=1, joint_sequence=family != "encoder_decoder")
    return padding_waste(sampler.batches(0), src, tgt)


def run_max_tokens(run_dir: Path) -> int:
    """trainer.max_tokens of a finished run, from the config Hydra saved in its directory."""
    from omegaconf import OmegaConf

    return int(OmegaConf.load(run_dir / ".hydra" / "config.yaml").trainer.max_tokens)


def one_family(family: str, args: argparse.Namespace) -> dict:
    trained = train(family, args.minutes, args.out, args.extra)
    decoded = translate(family, trained["checkpoint"], args.data, args.out, args.beam)
    summary = trained["summary"]
    result = {
        "family": family,
        "parameters": summary.get("parameters"),
        "tokens_per_second": summary.get("tokens_per_second"),
        "updates": summary.get("updates"),
        "checkpoint": trained["checkpoint"],
        "decoding": (summary.get("decoding") or {}).get("values"),
        **score(decoded["hypotheses"], args.data / "test.es"),
        "sentences_per_second": decoded["sentences"] / decoded["decode_seconds"],
        "train_peak_rss": trained["train_peak_rss"],
        "decode_peak_rss": decoded["decode_peak_rss"],
        "padding": padding_share(family, args.data, run_max_tokens(args.out / family)),
        "minutes": args.minutes,
    }
    (args.out / f"{family}.json").write_text(json.dumps(result, indent=2))
    return result


def table(results: list[dict]) -> str:
    rows = [HEADER, tuple("---" for _ in HEADER)]
    for r in results:
        rows.append((r["family"], f"{r['parameters']:,}", f"{r['tokens_per_second']:,.0f}",
                     f"{r['updates']:,}",
                     f"{r['bleu']:.1f}", f"{r['chrf']:.1f}", f"{r['sentences_per_second']:.1f}",
                     f"{r['train_peak_rss'] / 2**20:,.0f} MiB", f"{r['decode_peak_rss'] / 2**20:,.0f} MiB",
                     f"{100 * r['padding']:.1f}%"))  # fmt: skip
    return "\n".join("| " + " | ".join(map(str, row)) + " |" for row in rows)


def print_ratios(results: list[dict]) -> None:
    """Each decoder-only row against the encoder-decoder row, when both were measured."""
    peer = next((r for r in results if r["family"] == "encoder_decoder"), None)
    for r in results:
        if peer is None or r is peer:
            continue
        print(f"{r['family']} / encoder_decoder: test BLEU {r['bleu'] - peer['bleu']:+.1f} points, "
              f"decoding {r['sentences_per_second'] / peer['sentences_per_second']:.2f}x, "
              f"training target tokens/s {r['tokens_per_second'] / peer['tokens_per_second']:.2f}x, "
              f"train peak RSS {r['train_peak_rss'] / peer['train_peak_rss']:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--minutes", type=float, default=30.0, help="training budget per family (default 30)")
    parser.add_argument("--beam", type=int, default=5, help="beam size for the test translation (default 5)")
    parser.add_argument(
        "--data", type=Path, default=ROOT / "data" / "bible_en_es", help="the prepared corpus"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "runs" / "families", help="run directories, results"
    )
    parser.add_argument("--report", action="store_true", help="print the table from earlier results only")
    parser.add_argument(
        "--decode-worker", nargs=3, metavar=("CHECKPOINT", "SOURCE", "OUTPUT"), help=argparse.SUPPRESS
    )
    parser.add_argument("extra", nargs="*", help="more seq2seq-train overrides for every family")
    args = parser.parse_args()
    if args.decode_worker:
        checkpoint, source, output = args.decode_worker
        decode_worker(checkpoint, Path(source), Path(output), args.beam)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report:
        if not (args.data / "test.en").is_file():
            sys.exit(
                f"no prepared corpus in {args.data}; run seq2seq-prepare (or scripts/quickstart.sh) first"
            )
        for family in args.families:
            result = one_family(family, args)
            print(f"[{family}] test BLEU {result['bleu']:.1f}, chrF {result['chrf']:.1f}", flush=True)
    results = [
        json.loads((args.out / f"{f}.json").read_text())
        for f in args.families
        if (args.out / f"{f}.json").is_file()
    ]
    print(table(results))
    print_ratios(results)


if __name__ == "__main__":
    main()
