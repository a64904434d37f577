#!/usr/bin/env bash
# Installs hvd with DESTDIR into a scratch folder outside the source tree and
# uses it from there as a user would, with only PATH, PYTHONPATH, CLASSPATH
# and CMAKE_PREFIX_PATH set (no LD_LIBRARY_PATH), every program on 2 ranks
# under the installed hvdrun:
#   C via find_package(hvd), C via pkg-config, Python (numpy + torch),
#   the ctypes and cffi examples of docs/ffi.md as written, Java, and
#   examples/cpp (LibTorch) via find_package(hvd) + find_package(Torch)
#   when libtorch-dev is installed.
# Each program checks its exact results per rank.
#
#   run_consumer.sh BUILD_DIR PREFIX LIBDIR PYTHONDIR SOURCE_DIR
# PREFIX is the configured install prefix; LIBDIR and PYTHONDIR are relative
# to it; SOURCE_DIR is hvd's source tree (for this folder and docs/ffi.md).
set -euo pipefail
build=$1 prefix=$2 libdir=$3 pythondir=$4 src=$5
here=$src/tests/install/consumer

work=$(mktemp -d "${TMPDIR:-/tmp}/hvd-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$work/" in "$src"/*) echo "scratch folder $work is inside the source tree" >&2; exit 1 ;; esac

DESTDIR=$work/root cmake --install "$build" >/dev/null
P=$work/root$prefix

# A clean environment: the four variables, plus HOME and TMPDIR for the tools.
user_env=(env -i "HOME=$work" "TMPDIR=${TMPDIR:-/tmp}" "PATH=$P/bin:/usr/bin:/bin"
          "PYTHONPATH=$P/$pythondir" "CLASSPATH=$P/share/java/hvd.jar" "CMAKE_PREFIX_PATH=$P")
cp -r "$here" "$work/src"
cd "$work"

step() { echo "== $*"; }

step "C, find_package(hvd)"
"${user_env[@]}" cmake -S src/c -B c-build >/dev/null
"${user_env[@]}" cmake --build c-build >/dev/null
"${user_env[@]}" hvdrun -np 2 ./c-build/consumer
# Without DLPack's CMake package, hvdConfig.cmake falls back to dlpack/dlpack.h.
"${user_env[@]}" cmake -S src/c -B c-build-nodlpack -DCMAKE_DISABLE_FIND_PACKAGE_dlpack=ON >/dev/null
"${user_env[@]}" cmake --build c-build-nodlpack >/dev/null

step "C, pkg-config"
"${user_env[@]}" bash -c 'cc -std=c99 -Wall -Werror src/c/consumer.c \
  $(pkg-config --with-path="$CMAKE_PREFIX_PATH/'"$libdir"'/pkgconfig" --cflags --libs hvd) -o consumer_pc'
"${user_env[@]}" hvdrun -np 2 ./consumer_pc

step "Python: import hvd with numpy and torch"
"${user_env[@]}" hvdrun -np 2 /usr/bin/python3 src/consumer.py

for section in "## ctypes" "## cffi (ABI mode)"; do
  step "docs/ffi.md: $section"
  "${user_env[@]}" hvdrun -np 2 /usr/bin/python3 src/ffi_doc.py "$src/docs/ffi.md" "$section" 2
done

if [ -f "$P/share/java/hvd.jar" ]; then
  step "Java against the installed hvd.jar"
  "${user_env[@]}" bash -c 'javac -d java src/Consumer.java'
  "${user_env[@]}" bash -c 'hvdrun -np 2 java -cp "$CLASSPATH:java" Consumer'
fi

if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ] ||
   compgen -G "/usr/lib/*/cmake/Torch/TorchConfig.cmake" >/dev/null; then
  step "C++ LibTorch example: find_package(hvd) + find_package(Torch), hvd/torch.hpp"
  test -f "$P/include/hvd/torch.hpp"
  mkdir -p examples
  cp -r "$src/examples/cpp" "$src/examples/data" examples/
  "${user_env[@]}" cmake -S examples/cpp -B cpp-build -DCMAKE_BUILD_TYPE=Release >/dev/null
  "${user_env[@]}" cmake --build cpp-build >/dev/null
  "${user_env[@]}" OMP_NUM_THREADS=1 hvdrun -np 2 ./cpp-build/torch_digits --epochs 2 --target 0.8
else
  step "C++ LibTorch example skipped: libtorch-dev is not installed"
fi

step "Julia package points at the installed libhvd"
jl=$P/share/julia/Hvd
test -f "$jl/src/Hvd.jl"
test -e "$jl/$(cat "$jl/deps/libhvd_dir")/libhvd.so"
echo "share/julia/Hvd/$(cat "$jl/deps/libhvd_dir")/libhvd.so exists"
echo "installed hvd works from $P"
