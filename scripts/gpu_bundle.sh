#!/usr/bin/env bash
# Packs hvd's GPU test and benchmark programs, built here, with the Debian
# libraries they load (Open MPI, Gloo, ...), and Open MPI's mpirun with its
# plugins, into one folder that a GPU machine without those packages can run:
# scripts/gpu_bundle_run.sh inside it runs the GPU suite and the MPI runs. libc, libstdc++, CUDA's runtime and NCCL are the GPU
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

# Open MPI 4.1 (Debian 12's) under OUT/ompi, laid out as under /usr, so that
# OPAL_PREFIX=OUT/ompi (and PMIX_PREFIX for PMIx, a separate library with its
# own plugins) finds the MCA components, help texts and parameter files there;
# gpu_bundle_run.sh sets those. The components are dlopened at run time, so
# their libraries join OUT/lib; those for InfiniBand, UCX, OFI, PSM and
# OpenSHMEM stay behind (one host, shared memory: btl self,vader).
P=$OUT/ompi
SYS=/usr/lib/x86_64-linux-gnu
MCA=lib/x86_64-linux-gnu/openmpi/lib/openmpi3
PMIX=lib/x86_64-linux-gnu/pmix2
mkdir -p "$P/bin" "$P/$MCA" "$P/share" "$P/etc" "$P/$PMIX/lib/pmix" "$P/$PMIX/share" "$P/lib/hwloc"
cp -L /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info "$P/bin/"
cp "$P/bin/orterun" "$P/bin/mpirun"  # copies: a symbolic link may not travel
cp "$P/bin/orterun" "$P/bin/mpiexec"
cp -r /usr/share/openmpi "$P/share/"
rm -f "$P"/share/openmpi/*wrapper-data.txt
cp /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$P/etc/"
network='^(libuc[tspm]|libpsm|libinfinipath|libibverbs|librdmacm|libfabric|libefa|libmca_common_(ucx|ofi|verbs)|liboshmem|libnl-)'
for c in "$SYS/openmpi/lib/openmpi3"/*.so; do
  ldd "$c" | awk '{print $1}' | grep -Eq "$network" || cp "$c" "$P/$MCA/"
done
cp "$SYS/pmix2/lib/pmix"/*.so "$P/$PMIX/lib/pmix/"
cp -r "$SYS/pmix2/share/pmix" "$P/$PMIX/share/"
# The installed file names the plugin folder by its absolute path.
grep -v '^mca_base_component_path' "$SYS/pmix2/share/pmix-mca-params.conf" \
  >"$P/$PMIX/share/pmix-mca-params.conf"
for f in "$P"/bin/* "$P/$MCA"/*.so "$P/$PMIX/lib/pmix"/*.so; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip || -e $OUT/lib/$name ]] || cp -L "$path" "$OUT/lib/$name"
done
if ldd "$P"/bin/* "$P/$MCA"/*.so "$OUT"/lib/* | awk '/not found/ {print $1}' | grep -Ev "$skip"; then
  echo "gpu_bundle.sh: a bundled library is missing a dependency" >&2
  exit 1
fi
strip --strip-debug "$OUT"/bin/* "$OUT"/lib/* "$P"/bin/orte* "$P"/bin/ompi_info "$P/$MCA"/*.so \
  "$P/$PMIX/lib/pmix"/*.so
cp "$(dirname "$0")/gpu_bundle_run.sh" "$OUT/"
cp -r "$(dirname "$0")/../tools/hvd_bench/shapes" "$OUT/"
du -sh "$OUT"
