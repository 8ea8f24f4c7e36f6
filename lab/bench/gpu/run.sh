#!/usr/bin/env bash
# Runs the dawn-webgpu benchmark on a Linux x64 GPU machine from what lab/bench/gpu/pack.sh put in .devbench/:
# no Node, apt, dpkg or network needed there, only bash, coreutils and xz or python3 (to unpack). Run from the
# repository root. Writes one JSON file per case, summary.json and the adapter into $OUT (default
# lab/bench/results/tmp/gpu/); prints a table last.
#
# Environment: CASES (default: the standard case 2048x3 first, then the rest, as far as BUDGET_S allows; every
# case must be in the packed request), BUDGET_S (default 420: seconds for all cases, inside the remote tool's
# 8 minutes), REPS (timed repetitions per path, replacing the packed 7 / 5 / 3 by size), ALLOW_ANY_ADAPTER=1 (run even when the adapter is not NVIDIA's, e.g. a software one),
# VK_DRIVER_FILES (default: the NVIDIA ICD json found, or one written for libGLX_nvidia.so.0),
# EDGEARMOR_DAWN_OPTIONS (Dawn toggles, comma-separated, e.g. backend=vulkan).
#
# Model: public/models/edgearmor-proxy/onnx/model.onnx (tracked, trained fp32) with .bench-model's config
# (max_position_embeddings 4,608). Its graph is .bench-model's: same ops and shapes, RoPE from position ids;
# only the weights differ (trained, not random), which no kernel's time depends on.
set -euo pipefail
cd "$(dirname "$0")/../../.."
start=$(date +%s)

D=.devbench
R=$D/run
OUT=${OUT:-$PWD/bench/results/tmp/gpu}
CASES=${CASES:-2048x3,512x1,512x3,512x8,2048x1,2048x8,4096x1,4096x3,4096x8}
BUDGET_S=${BUDGET_S:-420}
MIN_CASE_S=20
[ -f "$D/MANIFEST" ] || { echo "no $D/MANIFEST: run lab/bench/gpu/pack.sh on a machine with Node first" >&2; exit 2; }
mkdir -p "$OUT" "$R/dist/linux-x64" "$R/lib" "$R/bench-model/onnx"

unxz_to() { # unxz_to FILE.xz DEST
  if xz --version >/dev/null 2>&1; then xz -dc "$1" > "$2"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}
unxz_to "$D/node.xz" "$R/node" && chmod +x "$R/node"
unxz_to "$D/dawn-bench.mjs.xz" "$R/dawn-bench.mjs"
unxz_to "$D/dawn.node.xz" "$R/dist/linux-x64/dawn.node"
unxz_to "$D/ort-wasm-simd-threaded.asyncify.wasm.xz" "$R/ort-wasm-simd-threaded.asyncify.wasm"
unxz_to "$D/libvulkan.so.1.xz" "$R/lib/libvulkan.so.1"
unxz_to "$D/request.json.xz" "$R/request.json"
unxz_to "$D/matmul.onnx.xz" "$R/bench-model/onnx/matmul.onnx"
cp "$D/bench-model-config.json" "$R/bench-model/config.json"
cp public/models/edgearmor-proxy/onnx/model.onnx "$R/bench-model/onnx/model.onnx"
cp "$D/MANIFEST" "$OUT/MANIFEST"

# The packed Vulkan loader, without touching the system's libraries (a system one, if any, comes after it).
export LD_LIBRARY_PATH=$PWD/$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
           /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$f" ] && { export VK_DRIVER_FILES=$f; break; }
  done
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  # No ICD json (containers often mount the driver's libraries but not its json): NVIDIA's Vulkan ICD is libGLX_nvidia.
  glx=$( (ldconfig -p 2>/dev/null | awk '/libGLX_nvidia\.so\.0 .*x86-64/ { print $NF; exit }') || true)
  for f in /usr/local/nvidia/lib64/libGLX_nvidia.so.0 /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0; do
    [ -z "$glx" ] && [ -f "$f" ] && glx=$f
  done
  if [ -n "$glx" ]; then
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' "$glx" > "$R/nvidia_icd.json"
    export VK_DRIVER_FILES=$PWD/$R/nvidia_icd.json
  fi
fi
export VK_ICD_FILENAMES=${VK_DRIVER_FILES:-}   # the older name, for loaders before 1.3.207

{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(awk '/MemTotal/ { printf "%d GiB", $2 / 2^20 }' /proc/meminfo)"
  # dawn.node (webgpu 0.6.2) needs glibc >= 2.34 and libstdc++ with GLIBCXX_3.4.30 (GCC 12); Node 20 glibc >= 2.28.
  echo "libc: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  echo "VK_DRIVER_FILES: ${VK_DRIVER_FILES:-(none found: the loader searches its default places)}"
  [ -n "${VK_DRIVER_FILES:-}" ] && sed -e 's/^/  /' -e '$a\' "$VK_DRIVER_FILES"
  true   # a missing nvidia-smi or ICD json is reported, not fatal (set -e with pipefail)
} | tee "$OUT/machine.txt"

node=(env "EDGEARMOR_BENCH_MODEL_DIR=$PWD/$R/bench-model" "EDGEARMOR_ORT_WASM_DIR=$PWD/$R" "$R/node" --expose-gc "$R/dawn-bench.mjs")
if ! "${node[@]}" --adapter > "$OUT/adapter.json" 2> "$OUT/adapter.log"; then
  cat "$OUT/adapter.log" >&2; echo "Dawn found no WebGPU adapter (see the Vulkan lines above)" >&2; exit 3
fi
echo "adapter: $(cat "$OUT/adapter.json")"
if ! grep -qi nvidia "$OUT/adapter.json" && [ "${ALLOW_ANY_ADAPTER:-}" != 1 ]; then
  echo "the adapter is not NVIDIA's (a software or GL one?): not timing it; ALLOW_ANY_ADAPTER=1 runs anyway" >&2; exit 4
fi

# GPU memory: the whole device's used memory, every 200 ms (dawn.node's buffers are not process RSS).
gpumem=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/gpu-memory-used-mib.log" 2>/dev/null &
  gpumem=$!
  sleep 0.5
fi

for c in ${CASES//,/ }; do
  left=$(( BUDGET_S - ($(date +%s) - start) ))
  if [ "$left" -lt "$MIN_CASE_S" ]; then echo "skipping $c: ${left}s of BUDGET_S left" >&2; continue; fi
  echo "case $c (${left}s left)" >&2
  if timeout "$left" "${node[@]}" "$R/request.json" --cases "$c" ${REPS:+--reps "$REPS"} > "$OUT/dawn-webgpu-$c.stdout" 2> "$OUT/dawn-webgpu-$c.log"; then
    tail -n1 "$OUT/dawn-webgpu-$c.stdout" > "$OUT/dawn-webgpu-$c.json"
  else
    echo "case $c failed or ran out of time (status $?): $OUT/dawn-webgpu-$c.log" >&2; tail -n5 "$OUT/dawn-webgpu-$c.log" >&2
  fi
done
[ -n "$gpumem" ] && kill "$gpumem" 2>/dev/null || true

"$R/node" -e '
  const fs = require("fs");
  const out = process.argv[1];
  const runs = fs.readdirSync(out).filter((f) => /^dawn-webgpu-.*\.json$/.test(f)).map((f) => JSON.parse(fs.readFileSync(`${out}/${f}`, "utf8")));
  const results = runs.flatMap((r) => r.results).sort((a, b) => a.tokens - b.tokens || a.spans - b.spans);
  let gpu = null;
  try {
    const mib = fs.readFileSync(`${out}/gpu-memory-used-mib.log`, "utf8").trim().split("\n").map(Number).filter(Number.isFinite);
    if (mib.length) gpu = { before_mib: mib[0], peak_mib: Math.max(...mib), peak_above_before_mib: Math.max(...mib) - mib[0], samples: mib.length };
  } catch {}
  const summary = { machine: fs.readFileSync(`${out}/machine.txt`, "utf8").trim(), adapter: runs[0]?.adapter ?? null, runtime: runs[0]?.runtime ?? null,
    model: "public/models/edgearmor-proxy/onnx/model.onnx (trained fp32; .bench-model graph and shapes) with .bench-model config (4,608 positions)",
    gpu_memory_used: gpu, results };
  fs.writeFileSync(`${out}/summary.json`, JSON.stringify(summary, null, 2) + "\n");
  const f = (x) => x.toFixed(0);
  console.log("\n| ctx tokens | spans | p50 ms ours / naive / tjs | p95 ms ours / naive / tjs | vs naive | vs tjs | RSS Δ MiB ours / tjs | GFLOP/s / matmul peak | max |Δ logp| |");
  console.log("|" + "---|".repeat(9));
  for (const r of results) console.log(`| ${r.context_tokens} | ${r.spans} | ${f(r.p50_ms.prefix)} / ${f(r.p50_ms.naive)} / ${f(r.p50_ms.transformersjs)} | ${f(r.p95_ms.prefix)} / ${f(r.p95_ms.naive)} / ${f(r.p95_ms.transformersjs)} | ${r.p50_speedup_vs_naive} | ${r.p50_speedup_vs_transformersjs} | ${f(r.rss_delta_mib.prefix)} / ${f(r.rss_delta_mib.transformersjs)} | ${r.gflops_achieved.toFixed(1)} / ${r.matmul_peak_gflops.toFixed(1)} | ${r.max_abs_logprob_diff_vs_naive.toExponential(1)} |`);
  const a = summary.adapter;
  console.log(`\nadapter: ${a ? [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(" / ") : "unknown"}; GPU memory used (whole device, 200 ms samples): ${gpu ? `${gpu.before_mib} MiB before, peak ${gpu.peak_mib} MiB` : "not measured (no nvidia-smi)"}; ${results.length} case(s); ${out}/summary.json`);
' "$OUT"
