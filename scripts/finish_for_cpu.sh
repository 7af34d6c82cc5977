#!/usr/bin/env bash
# A trained model (a distilled student, or any checkpoint) -> the fastest artefacts we ship for CPU
# translation, each keeping the model's tuned decoding settings:
#   OUT/shortlist.pt                  the vocabulary shortlist, learned from the training pairs
#   OUT/ctranslate2-<weight format>/  a CTranslate2 model with that shortlist as its vocabulary map
# and, given a file to check, how often each artefact's translation equals the checkpoint's:
#   OUT/check/*.txt, OUT/finish.json
#
#   bash scripts/finish_for_cpu.sh CHECKPOINT TRAIN_SRC TRAIN_TGT OUT_DIR [CHECK_SRC]
#   bash scripts/finish_for_cpu.sh runs/student/averaged.pt distilled/distill.en distilled/distill.es \
#     runs/student/cpu data/bible_en_es/dev.en
#
# Then translate with either (docs/distillation.md#finishing-a-student):
#   seq2seq-translate checkpoint=CHECKPOINT quantization=int8 shortlist=OUT_DIR/shortlist.pt input=...
#   seq2seq-translate checkpoint=OUT_DIR/ctranslate2-int8 input=...
# Environment: VENV (.venv) or BIN (its bin/), WEIGHT_FORMAT (int8; float32 for exact checks),
# PER_SOURCE and FREQUENT: seq2seq-shortlist's per_source and frequent (default: its own); CHECK_SETTINGS:
# seq2seq-translate settings for the check, e.g. "decode=greedy" (default: the model's tuned beam search;
# CTranslate2 divides beam scores by len^length_penalty where ours divides by ((5+len)/6)^length_penalty,
# so with a tuned penalty the two engines may end a few hypotheses at other lengths).
set -euo pipefail

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
CHECKPOINT=$1 SRC=$2 TGT=$3 OUT=$4 CHECK=${5:-}
BIN=${BIN:-${VENV:-.venv}/bin}
WEIGHT_FORMAT=${WEIGHT_FORMAT:-int8}
SIZES=()  # seq2seq-shortlist's own defaults unless PER_SOURCE or FREQUENT is set
[ -z "${PER_SOURCE:-}" ] || SIZES+=("per_source=$PER_SOURCE")
[ -z "${FREQUENT:-}" ] || SIZES+=("frequent=$FREQUENT")
case "$WEIGHT_FORMAT" in
  int8 | int8_float32) QUANTIZATION=int8 ;;
  float32) QUANTIZATION=none ;;
  *) echo "error: WEIGHT_FORMAT=$WEIGHT_FORMAT; use int8 (the fast artefact) or float32 (exact checks)" >&2; exit 2 ;;
esac
for file in "$CHECKPOINT" "$SRC" "$TGT" ${CHECK:+"$CHECK"}; do
  [ -e "$file" ] || { echo "error: $file does not exist; pass CHECKPOINT TRAIN_SRC TRAIN_TGT OUT_DIR [CHECK_SRC]" >&2; exit 2; }
done
[ -x "$BIN/seq2seq-translate" ] || { echo "error: $BIN/seq2seq-translate not found; set VENV= or BIN=" >&2; exit 2; }
mkdir -p "$OUT"
CT2=$OUT/ctranslate2-$WEIGHT_FORMAT

echo "== 1/3 shortlist (${SIZES[*]:-default sizes}) -> $OUT/shortlist.pt"
"$BIN/seq2seq-shortlist" checkpoint="$CHECKPOINT" src_file="$SRC" tgt_file="$TGT" output="$OUT/shortlist.pt" \
  ${SIZES[@]+"${SIZES[@]}"}

echo "== 2/3 CTranslate2 export ($WEIGHT_FORMAT, the shortlist as its vocabulary map) -> $CT2"
"$BIN/seq2seq-export" checkpoint="$CHECKPOINT" output_dir="$CT2" weight_format="$WEIGHT_FORMAT" \
  shortlist="$OUT/shortlist.pt" force=true

if [ -z "$CHECK" ]; then
  echo "== 3/3 no CHECK_SRC given: nothing translated"
  exit 0
fi
echo "== 3/3 translating $CHECK with the checkpoint and with each artefact"
mkdir -p "$OUT/check"
translate() {  # name, then seq2seq-translate settings
  local name=$1
  shift
  # shellcheck disable=SC2086  # CHECK_SETTINGS holds several settings
  "$BIN/seq2seq-translate" input="$CHECK" output="$OUT/check/$name.txt" report="$OUT/check/$name.json" \
    progress_bar=false quiet=true "$@" ${CHECK_SETTINGS:-}
}
translate checkpoint checkpoint="$CHECKPOINT"
translate torch-shortlist checkpoint="$CHECKPOINT" quantization="$QUANTIZATION" shortlist="$OUT/shortlist.pt"
translate ctranslate2 checkpoint="$CT2"
"$BIN/python" - "$OUT" "$WEIGHT_FORMAT" <<'PY'
import json, sys
out, weight_format = sys.argv[1:3]
lines = {name: open(f"{out}/check/{name}.txt", encoding="utf-8").read().split("\n")[:-1]
         for name in ("checkpoint", "torch-shortlist", "ctranslate2")}
reference = lines["checkpoint"]
same = {name: sum(a == b for a, b in zip(lines[name], reference)) for name in ("torch-shortlist", "ctranslate2")}
result = {"weight_format": weight_format, "lines": len(reference), "identical": same}
with open(f"{out}/finish.json", "w", encoding="utf-8") as stream:
    json.dump(result, stream, indent=2)
    stream.write("\n")
for name, count in same.items():
    print(f"{name:>16}: {count}/{len(reference)} lines identical to the checkpoint's ({weight_format})")
PY
