"""seq2seq-score: corpus BLEU / chrF / TER of a hypothesis file against one or more reference files.

Flags, not Hydra's key=value like seq2seq-train/translate/serve: its input is a list of files (the
hypotheses, then any number of references, - for stdin), which key=value settings express badly
(`refs=[a.es,b.es]`, quoting), and it has no config tree to compose. The usage is sacrebleu's and
fairseq-score's: files as arguments, options as --flags. --help says the same (WHY_FLAGS).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from seq2seq.cli.config.launch import exit_on_user_error
from seq2seq.errors import UserError
from seq2seq.inference.text_input import read_text_lines
from seq2seq.metrics import DEFAULT_METRICS, METRICS, format_scores, score_corpus

WHY_FLAGS = """Why --flags and not key=value like the other seq2seq commands: the input is a list of files
(any number of references), as sacrebleu and fairseq-score take them, and there is no config to compose."""
EXAMPLES = f"""examples:
  seq2seq-score hyp.es ref.es
  seq2seq-score hyp.es ref1.es ref2.es --metrics bleu,chrf++ --json
  seq2seq-translate ... | seq2seq-score - ref.es

{WHY_FLAGS}
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seq2seq-score",
        description="Score detokenized translations with sacreBLEU (corpus level).\n"
        "Files are UTF-8, one sentence per line, line-aligned with each reference file.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("hypotheses", metavar="HYP", help="system output, or - for stdin")
    parser.add_argument(
        "references",
        metavar="REF",
        nargs="+",
        help="one or more reference files (multiple references per sentence); - for stdin",
    )
    parser.add_argument(
        "--metrics",
        default=",".join(DEFAULT_METRICS),
        help=f"comma-separated, from {', '.join(METRICS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--tokenize",
        default="13a",
        help="BLEU tokenizer, e.g. 13a, intl, zh, char, none (default: %(default)s)",
    )
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


@exit_on_user_error
def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    paths = [args.hypotheses, *args.references]
    if paths.count("-") > 1:
        raise UserError("only one of HYP and REF can be - (stdin); pass the others as files")
    metrics = [name.strip().lower() for name in args.metrics.split(",") if name.strip()]
    if not metrics:
        raise UserError("--metrics is empty; pass e.g. --metrics bleu,chrf,ter")
    hypotheses = read_text_lines(args.hypotheses)
    references = [read_text_lines(path) for path in args.references]
    results = score_corpus(
        hypotheses,
        references,
        metrics=metrics,
        tokenize=args.tokenize,
        lowercase=args.lowercase,
        hypothesis_name=_name(args.hypotheses),
        reference_names=[_name(p) for p in args.references],
    )
    print(json.dumps(results, indent=2) if args.json else format_scores(results))


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


if __name__ == "__main__":
    main(sys.argv[1:])
