#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds everything
# and runs every test through ctest (GoogleTest, mpirun/hvdrun multi-process
# runs, pytest, JUnit, Julia binding checks). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/progress.sh
bash scripts/setup.sh
BUILD_DIR=${HVD_BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
stage "configuring (cmake, $BUILD_DIR)"
run_logged "$BUILD_DIR/configure.log" cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# What cmake found or skipped (optional parts), without the rest of its log.
grep -E '^-- hvd' "$BUILD_DIR/configure.log" || true
stage "building everything ($(nproc) jobs)"
run_build building "$BUILD_DIR/build.log" cmake --build "$BUILD_DIR" -j "$(nproc)"
stage "running the tests (ctest)"
cd "$BUILD_DIR"
# GoogleTest programs print only failures and their summary, so a failing
# multi-process test's message sits next to its ctest line in CI's log.
export GTEST_BRIEF=${GTEST_BRIEF:-1}
ctest --output-on-failure --timeout 900 "$@"
