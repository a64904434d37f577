#!/bin/bash
# Runs Horovod 0.28.1's own PyTorch tests (test/parallel/test_torch.py and
# test_adasum_pytorch.py, unchanged) against hvd through the horovod
# compatibility package, each test in its own launch, and prints a table
# test x launcher x np (P pass, F fail, S skip) with totals.
#
#   tools/compat/run_horovod_suite.sh [options] HOROVOD_CHECKOUT
#
# HOROVOD_CHECKOUT holds Horovod's source (at least its test/ folder), e.g.
#   git -C horovod.git archive v0.28.1 test | tar -x -C DIR
# Options:
#   --build DIR       hvd build tree (default: build/ of this checkout); its
#                     python/ folder goes first on PYTHONPATH
#   --np "1 2 3 4"    numbers of ranks (default "1 2 3 4")
#   --launchers "mpirun hvdrun"   (default both; hvdrun runs Gloo)
#   --tests REGEX     only the test ids matching REGEX (grep -E)
#   --skip REGEX      leave out the test ids matching REGEX
#   --timeout S       seconds per launch (default 300)
#   --out DIR         logs, results.tsv, table.txt and table.md (Markdown)
#                     (default horovod-suite/)
#   --reference DIR   run the tests against Horovod itself instead (DIR: an
#                     install of Horovod 0.28.1, e.g. what
#                     bench/horovod/build_horovod.sh makes; hvdrun becomes
#                     its `horovodrun --gloo`), to tell a test that fails on
#                     Horovod too from an incompatibility of hvd
#   --jobs N          launches at a time (default 1: every rank imports
#                     torch; raise it on machines with cores to spare)
# Rerunning with the same --out keeps earlier results and replaces those it
# runs again.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)/build
nps="1 2 3 4"
launchers="mpirun hvdrun"
filter=""
skip=""
timeout_s=300
out=horovod-suite
python=/usr/bin/python3
jobs=1
reference=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --launchers) launchers=$2; shift 2 ;;
    --tests) filter=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --reference) reference=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "run_horovod_suite.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: run_horovod_suite.sh [options] HOROVOD_CHECKOUT" >&2; exit 2; }
tests_dir=$(cd "$1/test/parallel" 2>/dev/null && pwd) ||
  { echo "run_horovod_suite.sh: $1/test/parallel not found" >&2; exit 2; }
if [ -n "$reference" ]; then
  pythonpath=$reference
  [ -x "$reference/bin/horovodrun" ] ||
    { echo "run_horovod_suite.sh: $reference/bin/horovodrun missing" >&2; exit 2; }
else
  build=$(cd "$build" && pwd)
  pythonpath=$build/python
  [ -d "$build/python/horovod" ] ||
    { echo "run_horovod_suite.sh: $build/python/horovod missing (build hvd_python)" >&2; exit 2; }
fi
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

export PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
pytest_args=(-m pytest -q -rs -p no:cacheprovider --color=no)

cd "$tests_dir"
# A file that does not collect (a missing module such as cloudpickle) must
# stop the run, not leave it to the other file's tests.
collected=$("$python" "${pytest_args[@]}" --collect-only test_torch.py test_adasum_pytorch.py 2>&1) || {
  printf '%s\n' "$collected" | tail -15 >&2
  echo "run_horovod_suite.sh: collecting Horovod's tests failed (see above)" >&2
  exit 1
}
ids=$(printf '%s\n' "$collected" |
      grep '::' | { if [ -n "$filter" ]; then grep -E -- "$filter"; else cat; fi } |
      { if [ -n "$skip" ]; then grep -vE -- "$skip"; else cat; fi })
[ -n "$ids" ] || { echo "run_horovod_suite.sh: no tests collected (filter '$filter')" >&2; exit 1; }

launch() {  # launcher np id log
  case "$1" in
    mpirun) timeout -k 10 "$timeout_s" mpirun --allow-run-as-root --oversubscribe -np "$2" \
              -x PYTHONPATH -x OMP_NUM_THREADS -x PYTHONDONTWRITEBYTECODE \
              "$python" "${pytest_args[@]}" "$3" >"$4" 2>&1 ;;
    hvdrun) if [ -n "$reference" ]; then
              # Horovod's own launcher; its interface probe needs `lo` here.
              timeout -k 10 "$timeout_s" "$python" "$reference/bin/horovodrun" --gloo \
                --network-interface lo -np "$2" "$python" "${pytest_args[@]}" "$3" >"$4" 2>&1
            else
              timeout -k 10 "$timeout_s" "$build/bin/hvdrun" -np "$2" \
                "$python" "${pytest_args[@]}" "$3" >"$4" 2>&1
            fi ;;
  esac
}

# pass: the launch succeeded and every rank's pytest said "1 passed";
# skip: it succeeded and a rank skipped; anything else fails (a timeout too).
classify() {  # rc np log
  if [ "$1" -ne 0 ] || grep -qE '[0-9]+ (failed|error)' "$3"; then echo F
  elif grep -qE '[0-9]+ skipped' "$3"; then echo S
  # Count occurrences, not lines: the ranks' summaries can share a line.
  elif [ "$(grep -oE '[0-9]+ passed' "$3" | wc -l)" -ge "$2" ]; then echo P
  else echo F; fi
}

run_one() {  # launcher np id: one launch, its line in $out/res/
  local launcher=$1 np=$2 id=$3 log r reason start rc
  log=$out/logs/$launcher.np$np.${id##*::}.log
  start=$(date +%s)
  launch "$launcher" "$np" "$id" "$log"
  rc=$?
  r=$(classify "$rc" "$np" "$log")
  reason=""
  [ "$r" = S ] && reason=$(grep -m1 -oE 'SKIPPED \[[0-9]+\] [^ ]+: .*' "$log" | sed 's/^[^:]*:[0-9]*: //')
  [ "$r" = F ] && [ "$rc" -eq 124 ] && reason="timeout ${timeout_s}s"
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$launcher" "$np" "$r" "$reason" \
    >"$out/res/$launcher.np$np.${id##*::}.tsv"
  printf '%-75s %-6s np=%s %s %3ss %s\n' "${id#*::}" "$launcher" "$np" "$r" \
    $(($(date +%s) - start)) "$reason"
}

mkdir -p "$out/res"
for np in $nps; do
  for launcher in $launchers; do
    for id in $ids; do echo "$launcher $np $id"; done
  done
done >"$out/todo"
export -f launch classify run_one
export out timeout_s python build reference
export PYTEST_ARGS="${pytest_args[*]}"
xargs -P "$jobs" -L 1 bash -c 'pytest_args=($PYTEST_ARGS); run_one "$@"' _ <"$out/todo"

# Merge: this run's lines replace earlier ones for the same test/launcher/np.
results=$out/results.tsv
touch "$results"
cat "$out"/res/*.tsv | "$python" -c '
import sys
new = [l for l in sys.stdin if l.strip()]
keys = {tuple(l.split("\t")[:3]) for l in new}
old = [l for l in open(sys.argv[1]) if l.strip() and tuple(l.split("\t")[:3]) not in keys]
open(sys.argv[1], "w").writelines(old + new)' "$results"
rm -rf "$out/res" "$out/todo"

# The table over everything results.tsv holds (this run and earlier ones).
"$python" "$here/suite_table.py" "$results" >"$out/table.txt"
"$python" "$here/suite_table.py" --markdown "$results" >"$out/table.md"
cat "$out/table.txt"
