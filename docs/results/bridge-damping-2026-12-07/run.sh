#!/usr/bin/env bash
# The protocol's six runs, interleaved. Run alone, from the repository root.
set -u
here=docs/results/bridge-damping-2026-12-07
for d in 0.5 0.0; do
  sed "s/^joint_damping: .*/joint_damping: $d/" config/sim_bridge.yaml > "/tmp/bridge-damping-$d.yaml"
done
for rep in 1 2 3; do
  for d in 0.5 0.0; do
    out="$here/damping-$d/run$rep"
    start=$(date +%s)
    PYTHONPATH=. .venv/bin/python -m bcg_sim_bridge.cli.sim2sim --policy all --interface ros2 --fault push \
      --attempts 3 --no-video --bridge-config "/tmp/bridge-damping-$d.yaml" --out "$out" > "$out.log" 2>&1
    echo "damping $d run $rep exit $? $(( $(date +%s) - start )) s $(tail -1 "$out.log")"
  done
done
