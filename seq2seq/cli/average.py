"""seq2seq-average: average the model weights of the last N checkpoints into one checkpoint
(seq2seq.train.averaging says what the output keeps).

Flags, not Hydra's key=value like seq2seq-train/translate/serve: its input is a list of checkpoint files
or directories, which key=value settings express badly, and it has no config tree to compose. The flags
are those of fairseq's scripts/average_checkpoints.py (--inputs ... --output), so a fairseq user's
command carries over (--last N for its --num-update-checkpoints N). --help says the same (WHY_FLAGS).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from seq2seq.checkpoint import save_checkpoint
from seq2seq.cli.config.launch import exit_on_user_error
from seq2seq.errors import UserError
from seq2seq.train.averaging import average_checkpoints, find_checkpoints

log = logging.getLogger(__name__)


WHY_FLAGS = """Why --flags and not key=value like the other seq2seq commands: the input is a list of files or
directories, and the flags are those of fairseq's average_checkpoints.py; there is no config to compose."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seq2seq-average",
        description="Average the model weights of several checkpoints into one (for translation).",
        epilog=f"example: seq2seq-average --inputs runs/en-es --last 5 --output avg5.pt\n\n{WHY_FLAGS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--inputs",
        nargs="+",
        required=True,
        type=Path,
        metavar="DIR_OR_FILE",
        help="a checkpoint directory (uses its checkpoint_{step}.pt files) or checkpoint files",
    )
    parser.add_argument(
        "--last",
        type=int,
        default=None,
        metavar="N",
        help="average only the N newest checkpoints (default: all)",
    )
    parser.add_argument("--output", required=True, type=Path, help="where to write the averaged checkpoint")
    return parser


@exit_on_user_error
def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    paths = find_checkpoints(args.inputs, args.last)
    if any(args.output.resolve() == p.resolve() for p in paths):
        raise UserError(f"--output {args.output} is one of the inputs; write the average to a new file")
    log.info("averaging %d checkpoints: %s", len(paths), ", ".join(p.name for p in paths))
    save_checkpoint(args.output, average_checkpoints(paths))


if __name__ == "__main__":
    main(sys.argv[1:])
