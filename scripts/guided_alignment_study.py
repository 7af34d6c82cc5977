#!/usr/bin/env python
"""Guided alignment on the Bible corpus: does training one cross-attention head on word links give
alignments worth using, at what cost in BLEU? docs/studies/guided-alignment.md reports a run of it.

1. train     two runs of the quickstart (scripts/quickstart.sh: the recipe this CPU gets, --minutes of
             training each, then beam 5 on the test set and its scores): one plain, one with
             `data.alignment=true loss.alignment_weight=--weight` (eflomal's links, head 0 of the
             next-to-last decoder layer). The links are built first (seq2seq-prepare), outside the
             training time.
2. reference eflomal in both directions over the training and test pairs together, symmetrized with
             grow-diag-final-and (seq2seq.data.word_alignment), words as `words` splits them; the
             test verses' links are the reference.
3. AER       each model reads the reference translation of every test verse (teacher forcing); each
             target piece is linked to the source piece its attention weighs most, and a word pair is
             linked when any of their pieces are. AER = 1 - 2 |A & R| / (|A| + |R|) against the reference
             (every reference link counts as sure), with precision and recall. The plain model is read as
             alignment=true reads it (last layer, mean of heads) and as markup reads it (next-to-last
             layer, mean of heads); the guided model through its alignment head.
4. BLEU      the quickstart's test scores of both, and sacreBLEU's paired bootstrap.
5. markup    benchmarks/markup.py on each final checkpoint: the share of tag pairs placed where the
             reference aligner puts them.

    python scripts/guided_alignment_study.py --minutes 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
BIBLE = ROOT / "data" / "bible_en_es"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from study_support import final_checkpoint, paired_bootstrap, run, study_directory  # noqa: E402

from seq2seq import Translator  # noqa: E402
from seq2seq.data.word_alignment import align_corpus  # noqa: E402
from seq2seq.inference.alignment import most_attended  # noqa: E402
from seq2seq.inference.piece_spans import word_of_pieces  # noqa: E402

Link = tuple[int, int]


def train(args: argparse.Namespace) -> dict[str, Path]:
    """Both quickstart runs (each skipped when its test scores exist); their run directories."""
    guided = f"data.alignment=true loss.alignment_weight={args.weight}"
    run([str(args.bin / "seq2seq-prepare"), "data.alignment=true"], ROOT / "runs" / "align-prepare.log")
    runs = {}
    for label, extra in (("plain", ""), ("guided", guided)):
        name = f"{args.name}-{label}"
        if not (ROOT / "runs" / name / "test_scores.json").is_file():
            env = {"MINUTES": str(args.minutes), "RUN_NAME": name, "VENV": str(args.bin.parent), "EXTRA": extra}
            print(f"# {' '.join(f'{k}={v!r}' for k, v in env.items())}", flush=True)
            run(["bash", "scripts/quickstart.sh"], ROOT / "runs" / f"{name}.log", env)
        runs[label] = ROOT / "runs" / name
    return runs


def reference(work: Path) -> list[list[Link]]:
    """The test verses' word links (eflomal both ways over train + test, symmetrized), cached in work."""
    cached = work / "reference.json"
    if cached.is_file():
        return [[tuple(link) for link in links] for links in json.loads(cached.read_text())]
    lines = {name: (BIBLE / name).read_text(encoding="utf-8").splitlines() for name in
             ("train.en", "train.es", "test.en", "test.es")}  # fmt: skip
    links = align_corpus(lines["train.en"] + lines["test.en"], lines["train.es"] + lines["test.es"])
    test = links[len(lines["train.en"]) :]
    cached.write_text(json.dumps(test))
    return test


def model_links(translator: Translator, sources: list[str], targets: list[str], layer: int,
                head: int | None) -> list[set[Link]]:  # fmt: skip
    """Per verse, the word links of the model's attention over the reference translation."""
    src_tok, tgt_tok = translator.src_tokenizer, translator.tgt_tokenizer
    jobs, pieces = [], []
    for source, target in zip(sources, targets):
        src_ids, tgt_ids = src_tok.encode(source), tgt_tok.encode(target)
        jobs.append(([*src_ids, src_tok.eos_id], tgt_ids))
        pieces.append(([src_tok.id_to_piece(i) for i in src_ids], [tgt_tok.id_to_piece(i) for i in tgt_ids]))
    columns = most_attended(translator.model, jobs, pad_id=tgt_tok.pad_id, bos_id=tgt_tok.bos_id,
                            device=translator.device, layer=layer, head=head)  # fmt: skip
    out = []
    for source, target, (src_pieces, tgt_pieces), chosen in zip(sources, targets, pieces, columns):
        src_words, tgt_words = word_of_pieces(source, src_pieces), word_of_pieces(target, tgt_pieces)
        links = set()
        for t, s in enumerate(chosen):
            if s < len(src_words) and src_words[s] is not None and tgt_words[t] is not None:
                links.add((src_words[s], tgt_words[t]))
        out.append(links)
    return out


def error_rate(found: list[set[Link]], wanted: list[list[Link]]) -> dict[str, float]:
    both = sum(len(a & set(r)) for a, r in zip(found, wanted))
    got, expected = sum(map(len, found)), sum(map(len, wanted))
    return {"aer": 100 * (1 - 2 * both / (got + expected)), "precision": 100 * both / got,
            "recall": 100 * both / expected}  # fmt: skip


def alignments(runs: dict[str, Path], work: Path) -> dict[str, dict[str, float]]:
    wanted = reference(work)
    sources = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()
    targets = (BIBLE / "test.es").read_text(encoding="utf-8").splitlines()
    results = {}
    for label, run_dir in runs.items():
        translator = Translator.from_checkpoint(final_checkpoint(run_dir))
        config = translator.model.config
        readings = {"last layer, mean of heads": (-1, None), "next-to-last layer, mean of heads": (-2, None)}
        if config.get("alignment_layer") is not None:
            readings = {"alignment head": (int(config["alignment_layer"]), int(config["alignment_head"]))}
        for reading, (layer, head) in readings.items():
            with torch.inference_mode():
                found = model_links(translator, sources, targets, layer, head)
            results[f"{label}: {reading}"] = error_rate(found, wanted)
            print(f"{label}: {reading}: {results[f'{label}: {reading}']}", flush=True)
    return results


def markup(args: argparse.Namespace, runs: dict[str, Path], work: Path) -> dict[str, dict]:
    out = {}
    for label, run_dir in runs.items():
        report = work / f"markup.{label}.json"
        if not report.is_file():
            run([sys.executable, "benchmarks/markup.py", "--checkpoint", str(final_checkpoint(run_dir)),
                 "--rounds", "1", "--output", str(report)], work / "markup.log")  # fmt: skip
        out[label] = json.loads(report.read_text())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0, help="training time of each run")
    parser.add_argument("--weight", type=float, default=0.05, help="loss.alignment_weight of the guided run")
    parser.add_argument("--name", default="align", help="runs/<name>-plain and runs/<name>-guided")
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent, help="the venv's bin")
    args = parser.parse_args(argv)
    work = study_directory(args.name)
    runs = train(args)
    results = {
        "aer": alignments(runs, work),
        "test": {label: json.loads((d / "test_scores.json").read_text()) for label, d in runs.items()},
        "summaries": {label: {k: v for k, v in json.loads((d / "summary.json").read_text()).items()
                              if k in ("updates", "minutes", "tokens_per_second", "best_dev_bleu")}
                      for label, d in runs.items()},  # fmt: skip
        "markup": markup(args, runs, work),
    }
    hyps = {label: next(d.glob("test.beam*.es")) for label, d in runs.items()}
    results["bootstrap"] = paired_bootstrap(BIBLE / "test.es", hyps)
    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: v for k, v in results.items() if k != "markup"}, indent=2))
    print(results["bootstrap"])
    print(f"everything: {work / 'results.json'}", flush=True)
    os.sync()


if __name__ == "__main__":
    main()
