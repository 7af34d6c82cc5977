#!/usr/bin/env python
"""Score a multilingual run on its test set, direction by direction, and print a summary.

    python scripts/score_directions.py runs/bible_both.en-es
    python scripts/score_directions.py RUN_DIR --beam 5 --checkpoint RUN_DIR/best.pt decode.length_penalty=1.2

The test sets are the run's `data.test` (from RUN_DIR/.hydra/config.yaml): a list with one
{src, tgt, src_lang, tgt_lang} per direction, as configs/data/bible_en_es_both.yaml has it; a run of one
pair (a mapping without languages) is scored as its one direction. The checkpoint is the one the run chose
to translate (summary.json), else best.pt. Each direction goes through scripts/decode_and_score.sh
(seq2seq-translate with that direction's src_lang/tgt_lang, then seq2seq-score) into RUN_DIR/test.<dir>/;
the table gives BLEU and chrF per direction, their mean and the speed, and RUN_DIR/test_directions.json
keeps it all. Paths in the config are relative to the directory training ran in: run this from there.
Any further arguments are seq2seq-translate overrides, passed on to every direction.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent


class ScoringError(Exception):
    """A problem with the run directory or its config, printed as one line."""


def test_directions(run_dir: Path) -> list[dict[str, str]]:
    """{name, src, tgt, src_lang, tgt_lang} per test direction of the run's data.test."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    config_path = run_dir / ".hydra" / "config.yaml"
    if not config_path.is_file():
        raise ScoringError(f"{config_path} does not exist; pass a run directory that seq2seq-train wrote")
    config = OmegaConf.load(config_path)
    test = OmegaConf.select(config, "data.test")
    entries = list(test) if isinstance(test, ListConfig) else [test] if isinstance(test, DictConfig) else []
    if not entries:
        raise ScoringError(f"the run's config names no data.test ({config_path}); add test files to its data config")
    directions = []
    for number, entry in enumerate(entries):
        try:
            resolved = OmegaConf.to_container(entry, resolve=True)
        except Exception as error:  # an interpolation the run resolved differently
            raise ScoringError(f"data.test[{number}] cannot be read: {' '.join(str(error).split())[:200]}") from None
        src_lang, tgt_lang = resolved.get("src_lang"), resolved.get("tgt_lang")
        if len(entries) > 1 and not (src_lang and tgt_lang):
            raise ScoringError(f"data.test[{number}] needs src_lang and tgt_lang: a list holds one test set per direction")
        name = resolved.get("name") or (f"{src_lang}-{tgt_lang}" if src_lang else "test")
        directions.append({"name": str(name), "src": str(resolved["src"]), "tgt": str(resolved["tgt"]),
                           "src_lang": src_lang, "tgt_lang": tgt_lang})  # fmt: skip
    for direction in directions:
        for side in ("src", "tgt"):
            if not Path(direction[side]).is_file():
                raise ScoringError(f"test file {direction[side]} does not exist; run this from the directory "
                                   "training ran in, or run seq2seq-prepare for the run's data config")  # fmt: skip
    return directions


def chosen_checkpoint(run_dir: Path) -> Path:
    """The checkpoint the run chose to translate (summary.json), else best.pt, else last.pt."""
    summary_path = run_dir / "summary.json"
    if summary_path.is_file():
        chosen = json.loads(summary_path.read_text()).get("checkpoint")
        if chosen and (run_dir / Path(chosen).name).is_file():
            return run_dir / Path(chosen).name
    for name in ("best.pt", "last.pt"):
        if (run_dir / name).is_file():
            return run_dir / name
    raise ScoringError(f"{run_dir} holds no checkpoint (best.pt, last.pt); train first or pass --checkpoint")


def score_direction(
    checkpoint: Path, direction: dict[str, str], out_dir: Path, overrides: list[str]
) -> dict[str, Any]:
    """decode_and_score.sh for one direction; its scores.json."""
    languages = [f"{key}={direction[key]}" for key in ("src_lang", "tgt_lang") if direction[key]]
    command = ["bash", str(SCRIPTS / "decode_and_score.sh"), str(checkpoint), direction["src"], direction["tgt"],
               str(out_dir), *languages, *overrides]  # fmt: skip
    print(f"--- {direction['name']}: {direction['src']} -> {out_dir}/hypotheses.txt", flush=True)
    result = subprocess.run(command, check=False, env={**os.environ, "BIN": str(Path(sys.executable).parent)})
    if result.returncode != 0:
        raise ScoringError(f"translating {direction['name']} failed (exit {result.returncode}); see above")
    return json.loads((out_dir / "scores.json").read_text())


def summary_rows(scores: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """Per direction BLEU / chrF / sentences per second, then the means."""
    rows = []
    for name, record in scores.items():
        metrics = record["metrics"]
        rows.append((f"test {name}", f"{metrics['bleu']['score']:.1f} BLEU / {metrics['chrf']['score']:.1f} chrF "
                                     f"({record['sentences']} sentences, {record['sentences_per_second']:.1f}/s)"))  # fmt: skip
    if len(scores) > 1:
        mean = {m: sum(r["metrics"][m]["score"] for r in scores.values()) / len(scores) for m in ("bleu", "chrf")}
        rows.append(("test mean of directions", f"{mean['bleu']:.1f} BLEU / {mean['chrf']:.1f} chrF"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run directory written by seq2seq-train")
    parser.add_argument("--checkpoint", type=Path, default=None, help="default: the run's chosen checkpoint")
    parser.add_argument("--beam", type=int, default=5, help="beam size (default 5, as the quickstart)")
    args, overrides = parser.parse_known_args(argv)
    try:
        directions = test_directions(args.run_dir)
        checkpoint = args.checkpoint or chosen_checkpoint(args.run_dir)
        decode = ["decode=beam", f"decode.beam_size={args.beam}"]
        scores = {d["name"]: score_direction(checkpoint, d, args.run_dir / f"test.{d['name']}", decode + overrides)
                  for d in directions}  # fmt: skip
    except ScoringError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rows = summary_rows(scores)
    report = {"checkpoint": str(checkpoint), "beam": args.beam, "overrides": overrides, "directions": scores}
    if len(scores) > 1:
        report["mean"] = {m: sum(r["metrics"][m]["score"] for r in scores.values()) / len(scores)
                          for m in ("bleu", "chrf")}  # fmt: skip
    (args.run_dir / "test_directions.json").write_text(json.dumps(report, indent=2))
    width = max(len(label) for label, _ in rows)
    print(f"\n{checkpoint} (beam {args.beam})")
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    print(f"  -> {args.run_dir / 'test_directions.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
