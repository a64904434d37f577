#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds everything
# and runs every test through ctest (GoogleTest, mpirun/hvdrun multi-process
# runs, pytest, JUnit, Julia binding checks). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${HVD_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j "$(nproc)"
cd "$BUILD_DIR"
# GoogleTest programs print only failures and their summary, so a failing
# multi-process test's message sits next to its ctest line in CI's log.
export GTEST_BRIEF=${GTEST_BRIEF:-1}
ctest --output-on-failure --timeout 900 "$@"
