#!/usr/bin/env bash
# One GPU in one call: train the jump with the gpu preset for a fixed time and keep the figures.
#
#   scripts/gpu_train.sh OUT_DIR          on a fresh GPU machine that reaches the package
#                                         registries: a virtual environment with the CUDA
#                                         build of JAX, then bcg-train --preset gpu on the
#                                         jump for BCG_TRAIN_S seconds (default 480) after
#                                         the compile
#   scripts/gpu_train.sh --cpu OUT_DIR    the same path on this machine's CPU, with the
#                                         cpu-tiny preset and the interpreter in $PYTHON
#                                         (default .venv/bin/python): the suite runs it
#
# OUT_DIR receives summary.json (compile, s/iteration, env steps/s, peak GPU memory, peak
# resident memory), metrics.csv, curves.png, config.yaml, the last checkpoint, the
# training log and, on a GPU, nvidia-smi's view of the device.
set -euo pipefail

mode=gpu
if [ "${1:-}" = "--cpu" ]; then mode=cpu; shift; fi
if [ $# -ne 1 ]; then
  echo "usage: $0 [--cpu] OUT_DIR" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
cd "$repo"

if [ "$mode" = gpu ]; then
  venv="${BCG_GPU_VENV:-$repo/.venv-gpu}"
  jax_version="$(sed -n 's/^jax==\([^ ]*\).*/\1/p' requirements/train.txt)"
  cuda="${BCG_JAX_CUDA:-cuda12}"  # jax[cuda12] brings its CUDA libraries as wheels
  python3 -m venv "$venv"
  python="$venv/bin/python"
  "$python" -m pip install -q --disable-pip-version-check -r requirements/deploy.txt -r requirements/train.txt
  "$python" -m pip install -q --disable-pip-version-check --no-deps -r requirements/no-deps.txt
  "$python" -m pip install -q --disable-pip-version-check "jax[$cuda]==$jax_version"
  "$python" -c "import jax, sys; d = jax.devices(); print('jax', jax.__version__, d); sys.exit(0 if d[0].platform == 'gpu' else 'no GPU visible to JAX')"
  preset=gpu
  train_s="${BCG_TRAIN_S:-480}"
  export JAX_PLATFORMS=cuda
  export XLA_PYTHON_CLIENT_PREALLOCATE=false  # peak memory is what the run used, not a preallocated pool
else
  python="${PYTHON:-$repo/.venv/bin/python}"
  preset=cpu-tiny
  train_s="${BCG_TRAIN_S:-600}"
  export JAX_PLATFORMS=cpu
fi

run="$out/run"
status=0
"$python" -m bcg_train.cli.train --task jump --preset "$preset" --run-dir "$run" \
  --max-train-s "$train_s" --no-progress 2>&1 | tee "$out/train.log" || status=$?

for f in summary.json metrics.csv curves.png config.yaml; do
  if [ -f "$run/$f" ]; then cp "$run/$f" "$out/"; fi
done
if command -v nvidia-smi > /dev/null; then nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true; fi
if [ "$status" -ne 0 ]; then
  echo "gpu_train: bcg-train failed (exit $status); its log is $out/train.log" >&2
  exit "$status"
fi
"$python" -c "import json, sys; s = json.load(open(sys.argv[1])); print('gpu_train:', ', '.join(f'{k} {v}' for k, v in s.items()))" "$out/summary.json"
