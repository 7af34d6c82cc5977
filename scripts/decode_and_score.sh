#!/usr/bin/env bash
# Translate a test set with a checkpoint, score it, and write OUT_DIR/scores.json
# (metrics with sacreBLEU signatures, decode settings, sentences/s).
#
#   scripts/decode_and_score.sh CHECKPOINT SOURCE REFERENCE OUT_DIR [seq2seq-translate overrides...]
#   scripts/decode_and_score.sh runs/quickstart/best.pt data/bible_en_es/test.en data/bible_en_es/test.es \
#       runs/quickstart/eval_beam5 decode=beam decode.beam_size=5
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
CHECKPOINT=$1 SOURCE=$2 REFERENCE=$3 OUT_DIR=$4
shift 4
BIN=${BIN:-$(dirname "$(command -v python)")}
[ -x "$BIN/seq2seq-translate" ] || BIN="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin"
mkdir -p "$OUT_DIR"

"$BIN/seq2seq-translate" checkpoint="$CHECKPOINT" input="$SOURCE" output="$OUT_DIR/hypotheses.txt" \
  report="$OUT_DIR/translate.json" "$@"
"$BIN/seq2seq-score" "$OUT_DIR/hypotheses.txt" "$REFERENCE" --json > "$OUT_DIR/metrics.json"

"$BIN/python" - "$OUT_DIR" <<'PY'
import json, sys
out = sys.argv[1]
translate = json.load(open(f"{out}/translate.json"))
metrics = json.load(open(f"{out}/metrics.json"))
scores = {
    "metrics": {name: {"score": m["score"], "signature": m["signature"]} for name, m in metrics.items()},
    "decode": translate["decode"],
    "checkpoint": translate["checkpoint"],
    "input": translate["input"],
    "sentences": translate["lines"],
    "seconds": round(translate["seconds"], 2),
    "sentences_per_second": round(translate["sentences_per_second"], 2),
    "tokens_per_second": round(translate["tokens_per_second"], 1),
    "threads": translate["threads"],
}
with open(f"{out}/scores.json", "w") as handle:
    json.dump(scores, handle, indent=2)
line = " | ".join(f"{name} {m['score']:.2f}" for name, m in scores["metrics"].items())
print(f"{line} | {scores['sentences_per_second']:.1f} sentences/s  ->  {out}/scores.json")
PY
