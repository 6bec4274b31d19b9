#!/usr/bin/env bash
# Record the timeline fixtures in tests/data/h200/timeline (see its README) on a machine with an NVIDIA GPU.
# Run from the repository root: OUT=/some/dir bash tests/gpu/capture_timeline.sh
# Needs torch and CuPy; the cupti-python wheel for the machine's Python in .whl/ (see tests/data/h200/timeline/README.md).
# On the device tool: run(command="bash tests/gpu/capture_timeline.sh", carry=[".whl"]).
# What comes back: $OUT/timeline.tar.gz (traces, summaries, probe) and $OUT/log.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/timeline-capture}
W=${CAPTURE_WORK:-/tmp/perfgate-timeline}
BUDGET=${CAPTURE_BUDGET:-300}
PY=${PYTHON:-python3}
mkdir -p "$W" "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(printf '%4d' "$SECONDS") s] $*"; }

if ls .whl/cupti_python-*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/cupti_python-*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  $PY -V; uname -r
  $PY -m pip show torch cupy-cuda13x cuda-bindings nvidia-cuda-cupti 2>/dev/null | grep -E '^(Name|Version)'
  $PY -c "from cupti import cupti; print('cupti-python ok, CUPTI API version', cupti.get_version())"
  find / -xdev -name 'libcupti.so*' 2>/dev/null | head -5
} >"$W/probe.txt" 2>&1
cat "$W/probe.txt"
LIBCUPTI=$($PY - <<'EOF' 2>/dev/null
import glob, os, site
paths = [p for d in site.getsitepackages() + ["/tmp/site"] for p in glob.glob(os.path.join(d, "nvidia", "**", "libcupti.so*"), recursive=True)]
print(sorted(paths)[0] if paths else "")
EOF
)
say "libcupti for NVTX injection: ${LIBCUPTI:-none}"

run() {  # run NAME [ENV=VALUE...] -- WORKLOAD TRACER
  local name=$1; shift
  if (( SECONDS > BUDGET )); then say "skip $name: budget spent"; return; fi
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  say "$name"
  env "${envs[@]}" timeout 120 "$PY" tests/gpu/capture_timeline.py "$@" "$W/$name" || say "$name failed: rc=$?"
}

run mlp.none.a -- mlp none
run mlp.torch.a -- mlp torch
run mlp.cupti.a -- mlp cupti
run mlp.torch.b -- mlp torch
run mlp.cupti.b -- mlp cupti
run mlp.sync.none PERFGATE_EXAMPLE_SYNC=1 -- mlp none
run mlp.sync.torch PERFGATE_EXAMPLE_SYNC=1 -- mlp torch
run mlp.sync.cupti PERFGATE_EXAMPLE_SYNC=1 -- mlp cupti
if [[ -n $LIBCUPTI ]]; then run mlp.cupti-nvtx NVTX_INJECTION64_PATH="$LIBCUPTI" -- mlp cupti; fi
run softmax.none -- softmax none
run softmax.torch -- softmax torch
run softmax.cupti.a -- softmax cupti
run softmax.cupti.b -- softmax cupti
run vector_add.none -- vector_add none
run vector_add.torch -- vector_add torch
run vector_add.cupti.a -- vector_add cupti
run vector_add.cupti.b -- vector_add cupti
run vector_add.regressed.cupti PERFGATE_EXAMPLE_REGRESSION=1 -- vector_add cupti
run mlp.none.b -- mlp none
run mlp.cupti.c -- mlp cupti
run mlp.sync.cupti.b PERFGATE_EXAMPLE_SYNC=1 -- mlp cupti

say "done"
cp "$OUT/log.txt" "$W/log.txt" 2>/dev/null
tar -C "$W" -czf "$OUT/timeline.tar.gz" .
ls -la "$W" "$OUT"
