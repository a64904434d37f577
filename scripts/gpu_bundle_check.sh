#!/usr/bin/env bash
# Runs a bundle made by scripts/gpu_bundle.sh here, as if on a machine
# without Debian's Open MPI, PMIx, hwloc, libevent or Gloo: in a private mount
# namespace (root) where their folders are empty and each system copy of a
# library the bundle carries reads as /dev/null, so that anything loaded from
# the system instead of the bundle fails. Needs root (unshare -m).
#   scripts/gpu_bundle_check.sh OUT_DIR [gpu_bundle_run.sh arguments...]
#   scripts/gpu_bundle_check.sh OUT_DIR -- COMMAND...   (any command there)
set -euo pipefail
OUT=$(cd "$1" && pwd)
shift
exec unshare -m bash -s "$OUT" "$@" <<'EOF'
set -euo pipefail
OUT=$1
shift
SYS=/usr/lib/x86_64-linux-gnu
for d in $SYS/openmpi $SYS/pmix2 $SYS/hwloc /usr/share/openmpi /etc/openmpi; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
hide() { [[ -e $1 ]] && mount --bind /dev/null "$(readlink -f "$1")"; }
for f in orterun orted ompi_info mpirun mpiexec; do hide "/usr/bin/$f" || true; done
for lib in "$OUT"/lib/*; do
  for f in "$SYS/$(basename "$lib")"*; do hide "$f" || true; done
done
echo "hidden: $(grep -c ' /dev/null\| tmpfs ' /proc/self/mountinfo || true) mounts; mpirun on PATH: $(command -v mpirun || echo none)"
if [[ ${1:-} == -- ]]; then shift; exec "$@"; fi
bash "$OUT/gpu_bundle_run.sh" "$@"
EOF
