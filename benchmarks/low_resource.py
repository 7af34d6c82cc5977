"""A low-resource pair simulated on the Bible corpus: 25% of the training pairs stay parallel, and the
Spanish side of the other 75% becomes monolingual text (its English is withheld).

    python benchmarks/low_resource.py split     # writes data/low_resource/{train,mono,dev,test}.*
    python benchmarks/low_resource.py table --run a=runs/low_resource/a_parallel_only ...
                                                # scores each run's final checkpoint on the test set

The experiment itself (docs/back-translation.md has the table and every command) trains (a) en->es on
the 25% alone, (b) es->en on the 25%, back-translates the monolingual Spanish with it and trains en->es
on the 25% plus the tagged back-translations, (b') the same with the real pairs upsampled 3x
(data.train.weight=3), and compares them with (c), the full corpus.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path


def split(corpus: Path, out: Path, *, parallel_share: float, seed: int) -> None:
    """Line indices drawn with a fixed seed: train.{en,es} keep the share, mono.es holds the rest."""
    english = (corpus / "train.en").read_text(encoding="utf-8").splitlines()
    spanish = (corpus / "train.es").read_text(encoding="utf-8").splitlines()
    order = list(range(len(english)))
    random.Random(seed).shuffle(order)
    parallel = sorted(order[: round(parallel_share * len(order))])
    monolingual = sorted(order[len(parallel) :])
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "train.en", [english[i] for i in parallel])
    _write(out / "train.es", [spanish[i] for i in parallel])
    _write(out / "mono.es", [spanish[i] for i in monolingual])
    for name in ("dev.en", "dev.es", "test.en", "test.es"):
        shutil.copyfile(corpus / name, out / name)
    print(f"{out}: {len(parallel)} parallel pairs, {len(monolingual)} monolingual Spanish sentences")


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def score_run(name: str, run_dir: Path, corpus: Path, *, beam: int, reverse: bool = False) -> dict:
    """Test BLEU/chrF of the run's final checkpoint (summary.json's choice), beam `beam` with the decoding
    settings the run tuned, as seq2seq-translate uses them; plus the run's updates and minutes."""
    import sacrebleu

    from seq2seq import Translator

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    checkpoint = summary["final"]["checkpoint"] if summary.get("final") else summary["checkpoint"]
    src, tgt = ("es", "en") if reverse else ("en", "es")
    sources = (corpus / f"test.{src}").read_text(encoding="utf-8").splitlines()
    references = (corpus / f"test.{tgt}").read_text(encoding="utf-8").splitlines()
    translator = Translator.from_checkpoint(checkpoint)
    start = time.perf_counter()
    hypotheses = [str(t) for t in translator.translate(sources, beam_size=beam)]
    seconds = time.perf_counter() - start
    (run_dir / f"test.beam{beam}.{tgt}").write_text("".join(h + "\n" for h in hypotheses), encoding="utf-8")
    return {
        "run": name, "checkpoint": checkpoint, "updates": summary["updates"], "minutes": summary["minutes"],
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "test_sentences_per_second": len(sources) / seconds,
    }  # fmt: skip


def table(results: list[dict]) -> str:
    rows = ["| run | updates | training minutes | test BLEU | test chrF |", "|---|---:|---:|---:|---:|"]
    for r in results:
        rows.append(
            f"| {r['run']} | {r['updates']} | {r['minutes']:.1f} | {r['bleu']:.2f} | {r['chrf']:.2f} |"
        )
    by_name = {r["run"]: r for r in results}
    if {"a", "b", "c"} <= by_name.keys():
        gap = by_name["c"]["bleu"] - by_name["a"]["bleu"]
        closed = (by_name["b"]["bleu"] - by_name["a"]["bleu"]) / gap if gap else float("nan")
        rows.append(f"\n(b) closes {closed:.0%} of the BLEU gap between (a) and (c)")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stage", choices=["split", "table"])
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="NAME=RUN_DIR",
        help="table: a run to score (names a, b, c give the share of the gap closed)",
    )
    parser.add_argument(
        "--reverse-run",
        action="append",
        default=[],
        metavar="NAME=RUN_DIR",
        help="table: an es->en run to score on the reversed test set",
    )
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--json", type=Path, default=Path("runs/low_resource/results.json"))
    parser.add_argument("--corpus", type=Path, default=Path("data/bible_en_es"))
    parser.add_argument("--out", type=Path, default=Path("data/low_resource"))
    parser.add_argument("--parallel-share", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.stage == "split":
        split(args.corpus, args.out, parallel_share=args.parallel_share, seed=args.seed)
        return
    results = []
    for spec, reverse in [*((r, False) for r in args.run), *((r, True) for r in args.reverse_run)]:
        name, run_dir = spec.split("=", 1)
        results.append(score_run(name, Path(run_dir), args.out, beam=args.beam, reverse=reverse))
        print(json.dumps(results[-1]), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))


if __name__ == "__main__":
    main()
