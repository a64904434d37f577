#!/usr/bin/env bash
# Builds hvd's libFuzzer targets with clang++ straight from the sources they
# test and runs each for a bounded time. Exit 0: no crash; 1: a crash, leak,
# sanitizer report or build error; 77: skipped (no clang++ with libFuzzer).
#
#   run_fuzz.sh SOURCE_DIR WORK_DIR [SECONDS_PER_TARGET]
#
# Each target starts from tests/fuzz/corpus/<target>/ (committed regression
# and seed inputs) plus seeds freshly encoded by make_seeds.cc, so a format
# change never leaves the fuzzer starting from stale bytes. New inputs the
# fuzzer finds go to WORK_DIR, never into the source tree. A crash leaves
# WORK_DIR/<target>/crash-*; copy it to tests/fuzz/corpus/<target>/ once fixed.
set -u
src=${1:?source dir}
work=${2:?work dir}
secs=${3:-20}

cxx=${HVD_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "SKIP: no clang++ found (libFuzzer needs clang; set HVD_FUZZ_CXX)"
  exit 77
fi
mkdir -p "$work"
# Probe: some distributions ship clang without the libFuzzer runtime.
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}\n' \
  >"$work/probe.cc"
if ! "$cxx" -fsanitize=fuzzer "$work/probe.cc" -o "$work/probe" >/dev/null 2>&1; then
  echo "SKIP: $cxx cannot link -fsanitize=fuzzer (libFuzzer runtime missing)"
  exit 77
fi

flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -I"$src"
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
msg_srcs=("$src/core/coordination/protocol.cc" "$src/core/coordination/message.cc" "$src/core/common/types.cc")
kv_srcs=("$src/core/rendezvous/kv_protocol.cc")
declare -A target_srcs=(
  [report]="${msg_srcs[*]}"
  [decision]="${msg_srcs[*]}"
  [kv_message]="${kv_srcs[*]}"
  [kv_frame]="${kv_srcs[*]}"
)

# Seeds: make_seeds links the same encoders (no fuzzer runtime).
if ! "$cxx" -std=c++17 -O1 -I"$src" "$src/tests/fuzz/make_seeds.cc" "${msg_srcs[@]}" \
    "${kv_srcs[@]}" -lcrypto -o "$work/make_seeds"; then
  echo "FAIL: cannot build make_seeds"; exit 1
fi
rm -rf "$work/seeds" && "$work/make_seeds" "$work/seeds" || { echo "FAIL: make_seeds"; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for t in report decision kv_message kv_frame; do
  bin="$work/fuzz_$t"
  # shellcheck disable=SC2086  # the source lists are space-separated on purpose
  if ! "$cxx" "${flags[@]}" "$src/tests/fuzz/fuzz_$t.cc" ${target_srcs[$t]} -lcrypto -o "$bin"; then
    echo "FAIL: cannot build fuzz_$t"; failed=1; continue
  fi
  corpus="$work/$t/corpus"
  rm -rf "$work/$t" && mkdir -p "$corpus"
  cp "$src/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null
  cp "$work/seeds/$t/"* "$corpus/" 2>/dev/null
  echo "== fuzz_$t: $(ls "$corpus" | wc -l) seeds, ${secs}s"
  # -rss_limit_mb bounds a decoder that trusts a length from the wire.
  if ! (cd "$work/$t" && "$bin" -max_total_time="$secs" -rss_limit_mb=1024 -max_len=4096 \
          -timeout=10 -print_final_stats=1 corpus >"$work/$t/log" 2>&1); then
    echo "FAIL: fuzz_$t crashed; input kept in $work/$t/ (crash-*, leak-*, oom-*, timeout-*)"
    tail -n 60 "$work/$t/log"
    failed=1
  else
    grep -E '^(stat::number_of_executed_units|#[0-9]+ +DONE)' "$work/$t/log" | tail -n 2
  fi
done
exit $failed
