#!/usr/bin/env bash
# Installs every Debian package hvd needs to build, test and run its examples.
# Idempotent and quiet when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git clang clang-format libclang-rt-dev
  libgtest-dev googletest
  libopenmpi-dev openmpi-bin
  libgloo-dev libssl-dev libeigen3-dev libdlpack-dev
  swig
  python3 python3-dev python3-numpy python3-mpi4py python3-torch python3-cffi
  python3-pytest python3-sklearn python3-matplotlib python3-setuptools python3-pip
  python3-wheel python3-venv dpkg-dev file
  default-jdk-headless junit5
  iproute2 procps
  python3-sphinx python3-myst-parser python3-breathe python3-sphinx-rtd-theme doxygen
  chromium fonts-liberation
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
