#!/usr/bin/env bash
# Installs every Debian package hvd needs to build, test and run its examples.
# Idempotent and quiet when everything is already there.
set -euo pipefail
source "$(dirname "$0")/progress.sh"

PACKAGES=(
  build-essential cmake pkg-config git clang clang-format libclang-rt-dev
  libgtest-dev googletest
  libopenmpi-dev openmpi-bin
  libgloo-dev libssl-dev libeigen3-dev libdlpack-dev
  swig
  python3 python3-dev python3-numpy python3-mpi4py python3-torch python3-cffi
  python3-torchvision  # bench/: the training benchmarks' models (ResNet-50, ...)
  libtorch-dev  # LibTorch (C++): examples/cpp, hvd/torch.hpp
  python3-pytest python3-sklearn python3-matplotlib python3-setuptools python3-pip
  python3-wheel python3-venv dpkg-dev file
  default-jdk-headless junit5
  iproute2 procps
  python3-sphinx python3-myst-parser python3-breathe python3-sphinx-rtd-theme doxygen
  chromium fonts-liberation
  slurm-wlm munge  # tests/slurm: slurmctld, slurmd, srun; mpi_pmix in slurm-wlm-basic-plugins
)

# One dpkg-query for all of them (one per package takes seconds on a busy machine).
# dpkg-query exits 1 when any package is unknown to dpkg: not an error here.
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true; } |
  awk '/ install ok installed$/ {printf "%s ", $1}')"
missing=()
for p in "${PACKAGES[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp /tmp/hvd-setup.XXXXXX.log)
  stage "setup: updating the package lists (apt-get update)"
  run_logged "$log" $SUDO apt-get update -qq
  stage "setup: installing ${#missing[@]} packages: ${missing[*]}"
  start=$SECONDS
  run_logged "$log" $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  stage "setup: installed in $((SECONDS - start)) s"
  rm -f "$log"
else
  stage "setup: all ${#PACKAGES[@]} packages already installed"
fi
