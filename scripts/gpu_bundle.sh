#!/usr/bin/env bash
# Packs hvd's GPU test and benchmark programs, built here, with the Debian
# libraries they load (Open MPI, Gloo, ...), into one folder that a GPU
# machine without those packages can run: scripts/gpu_bundle_run.sh inside
# it runs the GPU suite. libc, libstdc++, CUDA's runtime and NCCL are the GPU
# machine's own (libnccl is 200+ MB; its ABI is stable across 2.x).
#   scripts/gpu_bundle.sh BUILD_DIR OUT_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
OUT=$2
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
progs=(tests/gpu/hvd_gpu_collectives_test bin/hvdrun bin/hvd_bench bin/hvd_gpu_bench)
for p in "${progs[@]}"; do
  [[ -x $BUILD/$p ]] && cp "$BUILD/$p" "$OUT/bin/"
done
cp -L "$BUILD/capi/libhvd.so.1" "$OUT/lib/"
# Every library the programs load, except the ones the GPU machine has.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libdl\.so|libpthread|librt\.so|libcudart|libnccl|libcuda\.so)'
for f in "$OUT"/bin/* "$OUT/lib/libhvd.so.1"; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip || $name == libhvd.so.1 ]] || cp -L "$path" "$OUT/lib/$name"
done
strip --strip-debug "$OUT"/bin/* "$OUT"/lib/*
cp "$(dirname "$0")/gpu_bundle_run.sh" "$OUT/"
cp -r "$(dirname "$0")/../tools/hvd_bench/shapes" "$OUT/"
du -sh "$OUT"
