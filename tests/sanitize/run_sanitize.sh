#!/usr/bin/env bash
# Builds hvd with sanitizers in its own build folder and runs the unit and
# multi-process tests under them; any sanitizer report fails the run.
#
#   run_sanitize.sh asan SOURCE_DIR WORK_DIR [MPIRUN_FLAGS...]
#       -DHVD_SANITIZE=address,undefined; runs hvd_core_unit_test, then
#       hvd_collectives_test under mpirun -np 2 (MPI backend) and under
#       hvdrun -np 2 (Gloo backend).
#   run_sanitize.sh tsan SOURCE_DIR WORK_DIR
#       -DHVD_SANITIZE=thread; runs hvd_collectives_test under hvdrun -np 2.
#       Open MPI is not TSan-instrumented and its progress threads and
#       shared-memory transport produce reports TSan cannot attribute, so
#       the MPI path is left to the ASan run.
#
# Leak checking: on for the unit tests and the Gloo runs; off under mpirun,
# where Open MPI's own allocations at exit would be reported (they are not
# hvd's; lsan.supp lists what is suppressed and why).
set -u
kind=${1:?asan|tsan}
src=${2:?source dir}
work=${3:?work dir}
shift 3
mpirun_flags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
jobs=${HVD_SANITIZE_JOBS:-2}
build="$work/build-$kind"
mkdir -p "$work"

case $kind in
  asan) sanitize="address,undefined"; targets=(hvd_core_unit_test hvd_collectives_test hvdrun) ;;
  tsan) sanitize="thread"; targets=(hvd_collectives_test hvdrun) ;;
  *) echo "unknown kind $kind"; exit 2 ;;
esac

step() { echo "== $*"; }
t0=$(date +%s)
step "configure $build (HVD_SANITIZE=$sanitize)"
# -O1: sanitized code at -O0 runs the collectives test several times slower.
cmake -S "$src" -B "$build" -DHVD_SANITIZE="$sanitize" -DHVD_BUILD_PYTHON=OFF \
  -DHVD_BUILD_JAVA=OFF -DHVD_WITH_CUDA=OFF -DHVD_WITH_NCCL=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g" >"$work/configure-$kind.log" 2>&1 ||
  { tail -n 30 "$work/configure-$kind.log"; exit 1; }
step "build ${targets[*]}"
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$work/build-$kind.log" 2>&1 ||
  { grep -E "error|Error" "$work/build-$kind.log" | head -n 30; exit 1; }
echo "   built in $(($(date +%s) - t0))s"

bin() { find "$build" -type f -name "$1" -perm -u+x | head -n 1; }
hvdrun=$(bin hvdrun)
coll=$(bin hvd_collectives_test)
# Any report ends the process with a failing exit code (halt_on_error).
common="halt_on_error=1:abort_on_error=0:exitcode=66:print_stacktrace=1"
export UBSAN_OPTIONS="$common:suppressions=$here/ubsan.supp"
failed=0
run() {  # run NAME CMD...
  local t=$(date +%s)
  step "$1"
  shift
  if ! timeout -k 10 400 "$@" >"$work/last.log" 2>&1; then
    tail -n 80 "$work/last.log"
    echo "FAIL ($(($(date +%s) - t))s)"
    failed=1
  elif grep -E "ERROR: (Address|Leak|Thread|Undefined)Sanitizer|WARNING: ThreadSanitizer|runtime error:" \
      "$work/last.log" >/dev/null; then
    grep -E -A 30 "Sanitizer|runtime error:" "$work/last.log" | head -n 80
    echo "FAIL: sanitizer report ($(($(date +%s) - t))s)"
    failed=1
  else
    echo "   ok ($(($(date +%s) - t))s)"
  fi
}

if [ "$kind" = asan ]; then
  export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS="$common:detect_leaks=1"
  run "unit tests" "$(bin hvd_core_unit_test)"
  run "collectives, hvdrun -np 2 (Gloo)" env HVD_CONTROLLER=gloo HVD_CPU_OPERATIONS=gloo \
    "$hvdrun" -np 2 "$coll"
  if command -v mpirun >/dev/null 2>&1 && [ -n "$(bin hvd_collectives_test)" ]; then
    run "collectives, mpirun -np 2 (MPI)" env ASAN_OPTIONS="$common:detect_leaks=0" \
      HVD_CONTROLLER=mpi HVD_CPU_OPERATIONS=mpi mpirun "${mpirun_flags[@]}" -np 2 "$coll"
  fi
else
  export TSAN_OPTIONS="$common:second_deadlock_stack=1:suppressions=$here/tsan.supp"
  run "collectives, hvdrun -np 2 (Gloo)" env HVD_CONTROLLER=gloo HVD_CPU_OPERATIONS=gloo \
    "$hvdrun" -np 2 "$coll"
fi
echo "== total $(($(date +%s) - t0))s"
exit $failed
