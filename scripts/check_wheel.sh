#!/usr/bin/env bash
# Checks that seq2seq works installed from its wheel, away from the checkout: builds the wheel from a
# copy of this checkout, installs it into a new venv (the CPU build of torch first, then the wheel with
# its `sweep` extra), and from a directory outside the checkout
#   - checks that the wheel carries every file of configs/ and that the commands find that copy,
#   - runs each command's --help,
#   - composes every experiment, sweep, launcher and sweeper config (the config groups Hydra looks up),
#   - trains 3 updates on a tiny corpus, translates with the result and scores it.
#
#   bash scripts/check_wheel.sh               # PYTHON=python3.12 for another interpreter
#   KEEP=1 bash scripts/check_wheel.sh        # keep the work directory (venv, wheel, run) for a look
#   TMPDIR=/dev/shm bash scripts/check_wheel.sh   # the work directory (a venv with torch) elsewhere
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/seq2seq-wheel.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  trap 'echo "check_wheel: work directory kept: $WORK"' EXIT
else
  trap 'echo "check_wheel: removing $WORK"; rm -rf "$WORK"' EXIT
fi
START=$SECONDS
VENV=$WORK/venv
RUN=$WORK/outside   # the commands run here: no configs/ or seq2seq/ of the checkout in sight

say() { echo "check_wheel [$((SECONDS - START))s]: $*"; }
fail() {
  echo "check_wheel: FAILED: $1" >&2
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    echo "--- last lines of its output ($2) ---" >&2
    tail -n 25 "$2" >&2
  fi
  exit 1
}
# run LOG CMD...: run a command in $RUN, its output in LOG; on failure say which command and show the log.
run() {
  local log=$1
  shift
  (cd "$RUN" && "$@") >"$log" 2>&1 || fail "'$*' exited with status $? (in $RUN)" "$log"
}

say "building the wheel from a copy of $ROOT (tracked and untracked files, none that git ignores)"
mkdir -p "$WORK/src" "$WORK/dist" "$RUN"
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || fail "$ROOT is not a git checkout (the files to build are git's list)"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard \
  | (cd "$ROOT" && tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$WORK/src"
"$PYTHON" -m venv "$VENV" || fail "$PYTHON -m venv could not make a venv"
"$VENV/bin/pip" wheel -q --no-deps --wheel-dir "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 \
  || fail "pip wheel could not build the wheel" "$WORK/build.log"
WHEEL=$(ls "$WORK"/dist/seq2seq-*.whl)
say "built $(basename "$WHEEL")"

say "checking that the wheel carries every file of configs/ as seq2seq/configs/"
"$VENV/bin/python" - "$WHEEL" "$WORK/src/configs" <<'EOF' || fail "the wheel's config tree differs from configs/"
import sys, zipfile
from pathlib import Path

wheel, configs = sys.argv[1], Path(sys.argv[2])
shipped = {n.removeprefix("seq2seq/configs/") for n in zipfile.ZipFile(wheel).namelist() if n.startswith("seq2seq/configs/")}
source = {p.relative_to(configs).as_posix() for p in configs.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
for name in sorted(source - shipped):
    print(f"  missing from the wheel: configs/{name}", file=sys.stderr)
for name in sorted(shipped - source):
    print(f"  in the wheel but not in configs/: {name}", file=sys.stderr)
sys.exit(source != shipped)
EOF

say "installing torch==2.13.0 (the CPU build), then the wheel with its sweep extra, into a new venv"
"$VENV/bin/pip" install -q torch==2.13.0 >"$WORK/install.log" 2>&1 || fail "pip could not install torch==2.13.0" "$WORK/install.log"
"$VENV/bin/pip" install -q "$WHEEL[sweep]" >"$WORK/install.log" 2>&1 || fail "pip could not install the wheel" "$WORK/install.log"
"$VENV/bin/pip" check >"$WORK/install.log" 2>&1 || fail "pip check found broken requirements" "$WORK/install.log"

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
say "checking that the installed package reads its own packaged configs"
run "$WORK/where.log" "$VENV/bin/python" -c '
import sysconfig
from pathlib import Path
from seq2seq.cli.config.launch import config_dir

site = Path(sysconfig.get_paths()["purelib"]).resolve()
configs = Path(config_dir())
print(configs)
assert configs == site / "seq2seq" / "configs", f"config_dir() is {configs}, not the packaged copy in {site}"
'
CONFIGS=$(tail -n 1 "$WORK/where.log")
say "config_dir() = $CONFIGS"

for command in prepare train translate score average export serve; do
  say "seq2seq-$command --help"
  run "$WORK/help.$command.log" "$VENV/bin/seq2seq-$command" --help
  grep -q "seq2seq-$command" "$WORK/help.$command.log" || fail "seq2seq-$command --help does not name the command" "$WORK/help.$command.log"
done

say "composing every experiment=, +sweep=, hydra/launcher= and hydra/sweeper= option"
run "$WORK/compose.log" "$VENV/bin/python" -c '
from pathlib import Path
from hydra import compose, initialize_config_dir
import seq2seq.cli.train  # registers the config schemas and resolvers, as seq2seq-train does
from seq2seq.cli.config.launch import config_dir

configs = Path(config_dir())
choices = [f"experiment={p.stem}" for p in sorted((configs / "experiment").glob("*.yaml"))]
choices += [f"+sweep={p.stem}" for p in sorted((configs / "sweep").glob("*.yaml"))]
choices += [f"hydra/launcher={p.stem}" for p in sorted((configs / "hydra" / "launcher").glob("*.yaml"))]
choices += [f"hydra/sweeper={p.stem}" for p in sorted((configs / "hydra" / "sweeper").glob("*.yaml"))]
choices += ["hydra/launcher=joblib"]  # a plugin option, next to the packaged ones
assert len(choices) > 5, choices
with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
    for choice in choices:
        compose("train", overrides=[choice], return_hydra_config=True)
        print("composed", choice)
'
say "$(grep -c '^composed' "$WORK/compose.log") options composed; the same through the seq2seq-train command:"
EXPERIMENT=$(basename "$(ls "$CONFIGS"/experiment/*.yaml | head -n 1)" .yaml)
run "$WORK/cli-experiment.log" "$VENV/bin/seq2seq-train" "experiment=$EXPERIMENT" --cfg job
run "$WORK/cli-sweep.log" "$VENV/bin/seq2seq-train" +sweep=recipe_search hydra/launcher=slurm --cfg hydra
grep -q "seq2seq_sweeper.study_sweeper.StudySweeper" "$WORK/cli-sweep.log" \
  || fail "+sweep=recipe_search did not select the study sweeper" "$WORK/cli-sweep.log"
grep -q "SlurmLauncher" "$WORK/cli-sweep.log" || fail "hydra/launcher=slurm did not select the SLURM launcher" "$WORK/cli-sweep.log"
run "$WORK/cli-sweeper.log" "$VENV/bin/seq2seq-train" hydra/sweeper=study hydra/launcher=joblib --cfg hydra
run "$WORK/sweeper-import.log" "$VENV/bin/python" -c \
  "import hydra_plugins.seq2seq_sweeper.study_sweeper, seq2seq.cli.config.study_sweeper"  # the plugin Hydra builds
say "  experiment=$EXPERIMENT, +sweep=recipe_search hydra/launcher=slurm, hydra/sweeper=study hydra/launcher=joblib"

say "training 3 updates of model=tiny on a tiny corpus (data=parallel_files)"
"$VENV/bin/python" - "$WORK/corpus" <<'EOF'
import random, sys
from pathlib import Path

en = "the a man woman dog cat sees loves finds house water bread light day night king".split()
es = dict(zip(en, "el un hombre mujer perro gato ve ama encuentra casa agua pan luz dia noche rey".split()))
rng, corpus = random.Random(0), Path(sys.argv[1])
corpus.mkdir()
for split, size in (("train", 48), ("dev", 8), ("test", 8)):
    pairs = [[rng.choice(en) for _ in range(rng.randint(2, 7))] for _ in range(size)]
    (corpus / f"{split}.en").write_text("".join(" ".join(p) + "\n" for p in pairs), encoding="utf-8")
    (corpus / f"{split}.es").write_text("".join(" ".join(es[w] for w in reversed(p)) + "\n" for p in pairs), encoding="utf-8")
EOF
run "$WORK/train.log" "$VENV/bin/seq2seq-train" data=parallel_files "data.dir=$WORK/corpus" data.src_lang=en \
  data.tgt_lang=es data.tokenizer.vocab_size=60 model=tiny trainer.max_updates=3 trainer.max_tokens=400 \
  trainer.validate_every=3 trainer.save_every=3 trainer.num_threads=1 trainer.progress_bar=false \
  schedule.warmup=2 run_name=wheel-check
[ -s "$RUN/runs/wheel-check/last.pt" ] || fail "training wrote no $RUN/runs/wheel-check/last.pt" "$WORK/train.log"
"$VENV/bin/python" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["updates"] != 3)' \
  "$RUN/runs/wheel-check/summary.json" || fail "summary.json does not say 3 updates" "$RUN/runs/wheel-check/summary.json"
run "$WORK/translate.log" "$VENV/bin/seq2seq-translate" checkpoint=runs/wheel-check/last.pt \
  "input=$WORK/corpus/test.en" output=test.hyp decode=greedy progress_bar=false
[ "$(wc -l <"$RUN/test.hyp")" = 8 ] || fail "seq2seq-translate did not write 8 lines" "$WORK/translate.log"
run "$WORK/score.log" "$VENV/bin/seq2seq-score" test.hyp "$WORK/corpus/test.es" --metrics bleu,chrf
say "trained, translated and scored: $(grep -m1 -i bleu "$WORK/score.log")"

say "passed in $((SECONDS - START))s: the wheel installs and runs on its own"
