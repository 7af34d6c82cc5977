#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up, build the English-Spanish Bible corpus, train
# with a wall-clock budget, translate the test set with beam search, score it, print a summary.
# Every stage is skipped when its result already exists, so re-running continues where it stopped.
#
#   bash scripts/quickstart.sh                 # 30-minute training budget
#   MINUTES=10 bash scripts/quickstart.sh      # shorter
#   EXPERIMENT=tune_30min_best bash scripts/quickstart.sh     # another recipe from configs/experiment/
#   EXPERIMENT= bash scripts/quickstart.sh     # seq2seq-train's defaults, whatever the CPU
#   EXTRA="model=tiny trainer.max_updates=20" MINUTES=2 RUN_NAME=smoke bash scripts/quickstart.sh
#
# Without EXPERIMENT the recipe follows the CPU (seq2seq/cli/config/recipe_choice.py): seq2seq-train's
# defaults where bf16 is native, experiment=cpu_fp32_30min on an fp32 CPU with few cores.
# The run directory is runs/quickstart, or runs/quickstart-<experiment> for an experiment, so recipes
# never share one. Re-running the same command resumes its run (MINUTES may grow); EXTRA settings that
# change the model or the data need their own RUN_NAME: seq2seq-train refuses to resume a run under
# other settings and names the keys that differ.
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${MINUTES:-30}
VENV=${VENV:-.venv}
DATA_DIR=${DATA_DIR:-data/bible_en_es}
EXTRA=${EXTRA:-}
BEAM=${BEAM:-5}

stage() { printf '\n== %s ==\n' "$*"; }

stage "1/6 Python environment ($VENV)"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch, seq2seq" 2>/dev/null; then
  "$VENV/bin/pip" install torch==2.13.0          # the CPU build; pinned so nothing pulls a CUDA build
  "$VENV/bin/pip" install -e '.[dev]'
else
  echo "already installed"
fi
BIN=$VENV/bin

# recipe choice: begin
DEFAULTS="seq2seq-train defaults"
if [ -z "${EXPERIMENT+set}" ]; then  # not given: the recipe for this CPU
  TAB=$'\t'
  CHOICE=$("$BIN/python" -m seq2seq.cli.config.recipe_choice)  # EXPERIMENT<TAB>reason
  EXPERIMENT=${CHOICE%%"$TAB"*}
  REASON=${CHOICE#*"$TAB"}
  echo "recipe: ${EXPERIMENT:-$DEFAULTS} ($REASON); EXPERIMENT=<name> picks another"
else
  echo "recipe: ${EXPERIMENT:-$DEFAULTS} (EXPERIMENT given)"
fi
# recipe choice: end
RUN_NAME=${RUN_NAME:-quickstart${EXPERIMENT:+-$EXPERIMENT}}
RUN_DIR=runs/$RUN_NAME

stage "2/6 Debian packages for the Bible corpus"
if command -v diatheke >/dev/null 2>&1 && diatheke -b system -k modulelist 2>/dev/null | grep -q spaRV1909eb; then
  echo "diatheke and the SWORD modules are installed"
else
  echo "seq2seq-prepare installs them (as root) in the next stage"
fi

stage "3/6 Corpus in $DATA_DIR"
"$BIN/seq2seq-prepare" data.dir="$DATA_DIR"

stage "4/6 Training ($MINUTES minutes) in $RUN_DIR"
# shellcheck disable=SC2086  # EXTRA holds several overrides
# At the end the weights of the last 20% of the updates (snapshots every 25 updates) are averaged into
# averaged.pt; it and best.pt are scored on the whole dev set, and the higher BLEU is the checkpoint to
# translate (summary.json: final). Its length penalty (and max_len_a if it helps) is then tuned for beam
# search on 500 dev sentences and stored in it, where seq2seq-translate finds it.
"$BIN/seq2seq-train" data.dir="$DATA_DIR" run_name="$RUN_NAME" trainer.max_minutes="$MINUTES" \
  trainer.average_fraction=0.2 trainer.tune_decoding=true ${EXPERIMENT:+experiment="$EXPERIMENT"} $EXTRA

SCORED=$("$BIN/python" -c 'import json, os, sys; summary = json.load(open(sys.argv[1]))
record = summary.get("final") or summary.get("averaged") or {}
print(os.path.basename(record.get("checkpoint", "")))' "$RUN_DIR/summary.json")
CHECKPOINT=$RUN_DIR/${SCORED:-best.pt}
[ -f "$CHECKPOINT" ] || CHECKPOINT=$RUN_DIR/last.pt
HYP=$RUN_DIR/test.beam$BEAM.es
stage "5/6 Translating $DATA_DIR/test.en with beam $BEAM"
if [ -f "$HYP" ] && [ "$HYP" -nt "$CHECKPOINT" ]; then
  echo "already translated: $HYP"
else
  "$BIN/seq2seq-translate" checkpoint="$CHECKPOINT" input="$DATA_DIR/test.en" output="$HYP" \
    decode=beam decode.beam_size="$BEAM" progress_bar=true
fi

stage "6/6 Scoring"
"$BIN/seq2seq-score" "$HYP" "$DATA_DIR/test.es" --json > "$RUN_DIR/test_scores.json"
"$BIN/python" - "$RUN_DIR" "$CHECKPOINT" "$DATA_DIR" "$BIN" "$EXPERIMENT" "$EXTRA" <<'PY'
import json, os, sys
run_dir, checkpoint, data_dir, bin_dir, experiment, extra = sys.argv[1:7]
scores = json.load(open(f"{run_dir}/test_scores.json"))
summary = json.load(open(f"{run_dir}/summary.json"))
bleu, chrf = scores["bleu"]["score"], scores["chrf"]["score"]
rows = [
    ("test BLEU (beam)", f"{bleu:.1f}"),
    ("test chrF (beam)", f"{chrf:.1f}"),
    ("Apertium en->es, same test split", "12.1 BLEU / 39.1 chrF"),
    ("best dev BLEU (greedy)", "n/a" if summary["best_dev_bleu"] is None else f"{summary['best_dev_bleu']:.1f}"),
]
scored = summary.get("averaged") or {}
if "bleu" in scored:
    steps, left_out = scored["steps"], scored.get("dev_pairs_left_out", 0)
    pairs = f"{scored['dev_pairs']} of {scored['dev_pairs'] + left_out} dev pairs" if left_out else "whole dev set"
    if scored.get("averaged", True):
        rows.append((f"dev BLEU, last {len(steps)} averaged", f"{scored['bleu']:.1f} (greedy, {pairs}; updates {steps[0]}-{steps[-1]})"))
    else:
        rows.append(("dev BLEU, last checkpoint", f"{scored['bleu']:.1f} (greedy, {pairs}; update {steps[-1]}; too few to average)"))
    best = ((summary.get("final") or {}).get("candidates") or {}).get("best.pt") or {}
    if "bleu" in best:
        rows.append(("dev BLEU, best.pt", f"{best['bleu']:.1f} (greedy, {pairs}; update {best['steps'][-1]})"))
tuned = summary.get("decoding") or {}
if tuned:
    values = ", ".join(f"{key}={value}" for key, value in tuned["values"].items())
    verdict = f"{tuned['bleu']:.1f} vs {tuned['default_bleu']:.1f} dev BLEU at the defaults" if tuned["chosen"] else "the defaults kept"
    rows.append(("decoding (tuned)", f"{values} (beam {tuned['beam_size']}, {tuned['sentences']} dev sentences: {verdict}; {tuned['seconds']:.0f} s)"))
rows += [
    ("recipe", (f"experiment={experiment}" if experiment else "seq2seq-train's defaults") + (f" + {extra}" if extra else "")),
    ("training", f"{summary['minutes']:.1f} min, {summary['updates']} updates, {summary['tokens_per_second']:,.0f} tokens/s"),
    ("checkpoint", checkpoint),
    ("TensorBoard", f"tensorboard --logdir {run_dir}/tensorboard"),
]
width = max(len(k) for k, _ in rows)
print()
for key, value in rows:
    print(f"{key:<{width}}  {value}")
print(f"\nsacreBLEU: {scores['bleu']['signature']}")
relative = os.path.relpath(bin_dir)  # from the project directory, where this script runs
bin_dir = bin_dir if relative.startswith("..") else relative  # a venv elsewhere keeps its own path
print(f"Translate your own text:\n  echo 'In the beginning was the Word.' | {bin_dir}/seq2seq-translate checkpoint={checkpoint}")
PY
