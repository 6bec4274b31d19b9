#!/usr/bin/env bash
# The live timeline source on a real GPU: baselines, 5 unchanged runs (0 false alarms expected), the planted host
# synchronisation (must fail on the MLP's wall time / GPU idle, no kernel blamed), --perfgate-source=both, and the
# tracer's overhead against the same steps unprofiled. Run from the repository root on a machine with an NVIDIA GPU,
# torch and CuPy, with the cupti-python, nvtx and ncu_report wheels for its Python in .device/wheels (and orjson's,
# where the machine lacks orjson):
#   OUT=/some/dir bash tests/gpu/timeline_check.sh [steps...]
# Steps (default all): setup timeline sync both overhead. What comes back: $OUT/log.txt, $OUT/timeline-check.tar.gz
# (session reports, pytest output, baselines, the overhead summaries and traces).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/timeline-check}
W=${CHECK_WORK:-/tmp/perfgate-timeline-check}
BUDGET=${CHECK_BUDGET:-540}
RUNS=${CHECK_RUNS:-5}
PY=${PYTHON:-python3}
STEPS=${*:-setup timeline sync both overhead}
mkdir -p "$W" "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(printf '%4d' "$SECONDS") s] $*"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }
left() { echo $((BUDGET - SECONDS)); }
EXAMPLES=(examples --ignore=examples/cpu)

session() {  # session NAME SOURCE pytest-args...: one pytest --perfgate run, its report and output kept
  local name=$1 source=$2; shift 2
  if (( $(left) < 40 )); then say "skip $name: budget"; return 0; fi
  mkdir -p "$W/$name"
  timeout $(( $(left) - 20 )) "$PY" -m pytest "$@" -p no:cacheprovider -rA --perfgate --perfgate-source="$source" \
    --perfgate-baselines="$W/baselines" --perfgate-timeout=240 --perfgate-report="$W/$name/perfgate-report.json" \
    >"$W/$name/pytest.txt" 2>&1
  local rc=$?
  say "$name ($source): exit $rc; $(grep -E '^(perfgate |=+ .* in )' "$W/$name/pytest.txt" | tr '\n' ' ' | cut -c1-400)"
  echo "$name $source $rc" >>"$W/exits.txt"
}

if want setup; then
  say "setup"
  $PY -m pip install -q --no-index --no-deps .device/wheels/cupti_python-*.whl .device/wheels/nvtx-*.whl \
    .device/wheels/ncu_report-*.whl 2>&1 | tail -2
  # perfgate writes its session report with orjson: the wheel in .device/wheels where the machine lacks it.
  $PY -c "import orjson" 2>/dev/null || $PY -m pip install -q --no-index --no-deps .device/wheels/orjson-*.whl 2>&1 | tail -2
  $PY -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  $PY -c "import torch, cupti, orjson; print('torch', torch.__version__, '; cupti-python and orjson import')" 2>&1 | tail -1
fi

if want timeline; then
  session tl-update timeline "${EXAMPLES[@]}" --perfgate-update
  for ((i = 1; i <= RUNS; i++)); do session "tl-gate$i" timeline "${EXAMPLES[@]}"; done
fi

if want sync; then  # expected: exit 1, the MLP test failing on wall time / GPU idle with "kernels unchanged"
  PERFGATE_EXAMPLE_SYNC=1 session tl-sync timeline examples/test_torch_mlp_layers.py
  grep -E "region \`|regression|kernels unchanged" "$W/tl-sync/pytest.txt" | head -20
fi

if want both; then
  session both-update both "${EXAMPLES[@]}" --perfgate-update
  for ((i = 1; i <= RUNS; i++)); do session "both-gate$i" both "${EXAMPLES[@]}"; done
fi

if want overhead; then  # the live tracer (perfgate.plugin.tracer.CuptiTracer) against the same steps unprofiled
  for workload in mlp softmax vector_add; do
    # "perfgate --outside": the tracer started, the steps outside any region (goal <= 1.02x against none).
    for tracer in none perfgate "perfgate --outside" none perfgate "perfgate --outside"; do
      (( $(left) < 25 )) && break
      read -r -a how <<<"$tracer"
      timeout 120 "$PY" tests/gpu/capture_timeline.py "$workload" "${how[0]}" \
        "$W/overhead/$workload.${tracer// --/-}.$SECONDS" "${how[@]:1}" 2>&1 | grep -E "median step|Error" | head -3
    done
  done
fi

say "done; exits:"; cat "$W/exits.txt" 2>/dev/null
tar -C "$W" -czf "$OUT/timeline-check.tar.gz" --exclude='*.ncu-rep' . 2>/dev/null
ls -la "$OUT"
