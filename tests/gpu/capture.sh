#!/usr/bin/env bash
# Capture perfgate's own real-GPU fixtures and measurements on a machine with an NVIDIA GPU and ncu.
# Run from the repository root: OUT=/some/dir bash tests/gpu/capture.sh [steps...]
# Steps (default: all, in this order): setup probe update gate1 regression grouped byhand rules csv nvtx metricpasses nested
#   sections gates passes gputests; optional (not in the default list): replay
# What comes back: $OUT/capture-text.tar.gz (logs, session reports, CSV pages, baselines, timings),
# $OUT/capture-reps-SESSION.tar.gz (the .ncu-rep files of the update, gate1, regression and replay sessions, one archive
# each: the device tool brings back at most 16 MiB per file, and the four together took 24 MB on the H200) and
# $OUT/log.txt.
# On the device tool: run(command="CAPTURE_BUDGET=540 bash tests/gpu/capture.sh", carry=[".device"]) with
# .device/wheels holding the nvtx and ncu-report wheels for the machine's Python (see tests/data/h100/README.md).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/gpu-capture}
WORK=${CAPTURE_WORK:-/tmp/perfgate-capture}
W=$WORK/w   # outside $OUT: only the archives and the log come back
mkdir -p "$W" "$OUT"
BUDGET=${CAPTURE_BUDGET:-540}   # seconds; optional steps are skipped when too little is left
PY=${PYTHON:-python3}
STEPS=${*:-setup probe update gate1 regression grouped byhand rules csv nvtx metricpasses nested sections gates passes gputests}
CLOCK=${CLOCK:-}
exec > >(tee -a "$OUT/log.txt") 2>&1

say() { echo "[$(printf '%4d' "$SECONDS") s] $*"; }
left() { echo $((BUDGET - SECONDS)); }
want() { [[ " $STEPS " == *" $1 "* ]]; }
now() { date +%s.%N; }
timed() {  # timed NAME command...: wall seconds appended to $W/times.tsv
  local name=$1; shift
  local t0; t0=$(now)
  "$@"; local rc=$?
  echo -e "$name\t$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')\t$rc" >>"$W/times.tsv"
  return $rc
}

if want setup; then
  say "setup"
  $PY -m pip install -q --no-index --no-deps .device/wheels/nvtx-*.whl .device/wheels/ncu_report-*.whl 2>&1 | tail -2
  $PY -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2 \
    || $PY -m pip install -q --no-index --no-deps .device/wheels/perfgate-*.whl 2>&1 | tail -2
fi

if ! $PY -c "from perfgate.collect.ncu_rep import find_ncu_report_module as f; f()" 2>/dev/null; then
  found=$(find / -xdev -name ncu_report.py -path '*extras/python*' 2>/dev/null | head -1)
  say "perfgate did not find ncu_report; found: ${found:-nothing}"
  if [[ -n "$found" ]]; then PERFGATE_NCU_PYTHON=$(dirname "$found"); export PERFGATE_NCU_PYTHON; fi
fi

if want probe; then
  say "probe"
  { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
    which ncu; readlink -f "$(which ncu)"; ncu --version; uname -r; $PY -V
    $PY -c "import torch, cupy, pandas, jinja2, pytest, pytest_benchmark, nvtx, perfgate; \
print('torch', torch.__version__, 'cupy', cupy.__version__, 'pandas', pandas.__version__, 'pytest', pytest.__version__, \
'nvtx', getattr(nvtx, '__version__', '?'), 'perfgate', perfgate.__file__)"
    $PY -c "from perfgate.plugin.preflight import gather_facts, check_preflight as c; f = gather_facts('ncu'); print(f); print('preflight:', c(f))"
    $PY -c "from perfgate.collect.ncu_rep import find_ncu_report_module as f; m = f(); print('ncu_report', m.__file__)"
    ls -d "$(dirname "$(readlink -f "$(which ncu)")")"/../nsight-compute*/extras/python /opt/nvidia/nsight-compute/*/extras/python
    file "$(readlink -f "$(which ncu)")"; head -c 400 "$(readlink -f "$(which ncu)")" | strings | head -12
  } >"$W/probe.txt" 2>&1
  cat "$W/probe.txt"
  # Does ncu lock the clocks here? (perfgate's default is base)
  ncu --clock-control base --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
    "$PY" -c "import cupy; x = cupy.arange(1 << 20); x.sum(); cupy.cuda.Device().synchronize()" >"$W/clock-base.log" 2>&1
  echo "rc=$?" >>"$W/clock-base.log"
  ncu --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
    "$PY" -c "import cupy; x = cupy.arange(1 << 20); x.sum(); cupy.cuda.Device().synchronize()" >"$W/clock-none.log" 2>&1
  echo "rc=$?" >>"$W/clock-none.log"
  tail -n 25 "$W/clock-base.log"; tail -n 8 "$W/clock-none.log"
  if [[ -z "$CLOCK" ]]; then
    if grep -q "==ERROR==" "$W/clock-base.log" || ! grep -q "rc=0" "$W/clock-base.log"; then CLOCK=none; else CLOCK=base; fi
  fi
fi
CLOCK=${CLOCK:-base}
echo "$CLOCK" >"$W/clock-control.txt"
say "clock control: $CLOCK"
if ! $PY -c "from perfgate.plugin.preflight import gather_facts, check_preflight as c; raise SystemExit(c(gather_facts('ncu')) is not None)"; then
  export PERFGATE_ASSUME_GPU=1; say "preflight saw no GPU: PERFGATE_ASSUME_GPU=1"; echo assume-gpu >>"$W/clock-control.txt"
fi

pack() {
find "$W" -name basetemp -type d -prune -exec rm -rf {} + ; find "$W" -name cache -type d -prune -exec rm -rf {} +
cat "$W/times.tsv"
du -ah "$W" | sort -h | tail -n 15
# Text (logs, reports, CSV pages, baselines) in one archive; the fixture reports in another; others stay.
(cd "$WORK" && find w -type f ! -name '*.ncu-rep' -size -4M -print0 | tar -czf "$OUT/capture-text.tar.gz" --null -T -)
local name
for name in update gate1 regression replay; do
  [[ -d "$W/$name" ]] || continue
  (cd "$WORK" && find "w/$name" -path '*perfgate-artifacts*' -name '*.ncu-rep' -print0 \
     | tar -czf "$OUT/capture-reps-$name.tar.gz" --null -T -)
done
(cd "$WORK" && find w -maxdepth 1 -name '*.ncu-rep' -print0 | tar -czf "$OUT/capture-reps-other.tar.gz" --null -T -)
}

session() {  # session NAME pytest-args...
  local name=$1; shift
  mkdir -p "$W/$name"
  timed "session-$name" timeout 500 "$PY" -m pytest "$@" -p no:cacheprovider -rA --durations=0 \
    --perfgate-clock-control="$CLOCK" --perfgate-keep-artifacts --perfgate-timeout=240 \
    --perfgate-report="$W/$name/perfgate-report.json" --junitxml="$W/$name/junit.xml" >"$W/$name/pytest.txt" 2>&1
  local rc=$?
  pack >/dev/null 2>&1
  say "session $name: exit $rc; $(grep -E '^(perfgate |=+ .* in )' "$W/$name/pytest.txt" | tr '\n' ' ' | cut -c1-300)"
  return 0
}

if want update; then
  rm -rf baselines
  session update examples --ignore=examples/cpu --perfgate-update
  cp -r baselines "$W/baselines"
  tail -n 40 "$W/update/pytest.txt"
fi

gates() {  # gates FIRST LAST: the unchanged examples gated against the baselines
  for ((i = $1; i <= $2; i++)); do
    if (( $(left) < 75 )); then say "skip gate run $i: budget"; continue; fi
    session "gate$i" examples --ignore=examples/cpu --perfgate
  done
}

if want gate1; then gates 1 1; tail -n 30 "$W/gate1/pytest.txt"; fi

if want regression && (( $(left) > 40 )); then  # the deliberate regression: must fail, naming kernel and metrics
  PERFGATE_EXAMPLE_REGRESSION=1 session regression examples/test_cupy_raw_kernel.py --perfgate
  tail -n 40 "$W/regression/pytest.txt"
fi
# The same ncu command perfgate ran, by hand (no pytest parent, no comparison), and the test without ncu.
byhand() {  # byhand ARTIFACT-DIR NAME [sed-expression]
  local art=$1 name=$2 edit=${3:-}
  local dir=$W/byhand/$name; mkdir -p "$dir"
  local cmd; cmd=$(cat "$art/ncu-command.txt")
  local old; old=$(echo "$cmd" | grep -o -- '--export [^ ]*' | head -1 | sed 's/--export //; s#/profile.ncu-rep##')
  cmd=${cmd//$old/$dir}
  [[ -n "$edit" ]] && cmd=$(echo "$cmd" | sed "$edit")
  echo "$cmd" >"$dir/command.txt"
  timed "byhand-$name" timeout 300 bash -c "$cmd" >"$dir/output.txt" 2>&1
  say "by hand $name: exit $? $(grep -c 'Profiling' "$dir/ncu.log" 2>/dev/null) launches"
}

ART=$W/gate1/perfgate-artifacts
[[ -d "$ART" ]] || ART=$W/update/perfgate-artifacts

if want byhand && (( $(left) > 60 )); then
  for art in "$ART"/*/; do
    name=$(basename "$art")
    byhand "$art" "$name"
    node=$(grep -o 'pytest [^ ]*::[^ ]*' "$art/ncu-command.txt" | head -1 | cut -d' ' -f2)
    timed "plain-$name" env PERFGATE_CHILD=1 timeout 300 "$PY" -m pytest "$node" -q -p no:cacheprovider >"$W/byhand/$name/plain.txt" 2>&1
  done
fi

if want rules && (( $(left) > 60 )); then  # ncu's rules run only for the sections collected
  say "rules: the CuPy test with ncu's detailed set added, unchanged and regressed"
  cupy=$(find "$ART" -mindepth 1 -maxdepth 1 -type d -name '*cupy*' | head -1)
  if [[ -n "$cupy" ]]; then
    byhand "$cupy" vector_add-rules 's/ --metrics / --set detailed --metrics /'
    PERFGATE_EXAMPLE_REGRESSION=1 byhand "$cupy" vector_add-rules-regression 's/ --metrics / --set detailed --metrics /'
    cp "$W/byhand/vector_add-rules/profile.ncu-rep" "$W/vector_add.rules.ncu-rep"
    cp "$W/byhand/vector_add-rules-regression/profile.ncu-rep" "$W/vector_add.rules.regression.ncu-rep"
  fi
fi

if want csv; then
  say "csv exports"
  mkdir -p "$W/csv"
  for rep in "$ART"/*/profile.ncu-rep; do
    name=$(basename "$(dirname "$rep")")
    ncu -i "$rep" --csv --page details >"$W/csv/$name.details.csv" 2>"$W/csv/$name.details.err"
    ncu -i "$rep" --csv --page raw >"$W/csv/$name.raw.csv" 2>"$W/csv/$name.raw.err"
    ncu -i "$rep" --csv --page details --print-units base >"$W/csv/$name.details-base.csv" 2>&1
    ncu -i "$rep" --csv --page raw --print-units base >"$W/csv/$name.raw-base.csv" 2>&1
    ncu -i "$rep" --page details >"$W/csv/$name.details.txt" 2>&1
    ncu -i "$rep" --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size \
      >"$W/csv/$name.raw-some.csv" 2>&1
  done
  ls -la "$W/csv"
  # ncu's stdout with no --log-file: ==PROF== lines, the test's output and the CSV raw page, mixed.
  cupy=$(find "$ART" -mindepth 1 -maxdepth 1 -type d -name '*cupy*' | head -1)
  if [[ -n "$cupy" ]]; then
    byhand "$cupy" cupy-stdout-raw 's/ --log-file [^ ]*//; s/ --export [^ ]* --force-overwrite/ --csv --page raw/'
  fi
fi

if want nvtx && (( $(left) > 60 )); then
  say "nvtx: the MLP test with no NVTX filter, and torch.profiler's count"
  mlp=$(find "$ART" -mindepth 1 -maxdepth 1 -type d -name '*mlp*' | head -1)
  [[ -n "$mlp" ]] && byhand "$mlp" mlp-unfiltered 's/ --nvtx-include [^ ]*//g'
  [[ -n "$mlp" ]] && byhand "$mlp" mlp-thread-scope 's/ --nvtx-push-pop-scope process/ --nvtx-push-pop-scope thread/'
  timeout 300 "$PY" tests/gpu/mlp_kernel_counts.py >"$W/mlp-kernel-counts.json" 2>"$W/mlp-kernel-counts.err"
  $PY -c "import json; d = json.load(open('$W/mlp-kernel-counts.json')); print({k: len(v) for k, v in d.items()})"
fi

if want metricpasses && (( $(left) > 100 )); then
  say "replay passes per metric (first launch of a CuPy program)"
  prog="import cupy; a = cupy.ones(1 << 22, dtype=cupy.float32); b = a + a; cupy.cuda.Device().synchronize()"
  metrics=$($PY -c "from perfgate.plugin.ncu_run import profiling_metrics as p; from perfgate.compare import CompareOptions as C; print(','.join(p(C().wanted_metrics())))")
  for m in launch__grid_size $(echo "$metrics" | tr ',' ' ') lts__t_sectors.sum "$metrics"; do
    ncu --clock-control base --cache-control all --launch-count 1 --metrics "$m" "$PY" -c "$prog" >"$W/pass.log" 2>&1
    echo -e "$(grep -o '[0-9]* pass[es]*' "$W/pass.log" | head -1)\t$m" | tee -a "$W/passes-per-metric.tsv"
  done
fi

if want grouped && (( $(left) > 60 )); then  # several perf tests in one profiled child, split per test
  say "grouped: tests/gpu test_tests_sharing_ncu_options_share_one_child_on_real_ncu, keeping the reports"
  PERFGATE_TEST_CLOCK_CONTROL=$CLOCK timed grouped timeout 300 "$PY" -m pytest -p no:cacheprovider -rA \
    "tests/gpu/test_real_gpu.py::test_tests_sharing_ncu_options_share_one_child_on_real_ncu" >"$W/grouped.txt" 2>&1
  tail -n 15 "$W/grouped.txt"
fi

if want nested && (( $(left) > 40 )); then
  say "nested regions: perfgate's NVTX filter and reader on outer > inner"
  cat >"$W/nested.py" <<'PY'
import cupy
import nvtx

a = cupy.ones(1 << 20, dtype=cupy.float32)
b = a + a  # outside every region: excluded
nvtx.push_range("outer", domain="perfgate")
c = a * 2  # outer
nvtx.push_range("inner", domain="perfgate")
d = a - 1  # outer > inner
nvtx.pop_range(domain="perfgate")
e = a / 2  # outer again
nvtx.pop_range(domain="perfgate")
cupy.cuda.Device().synchronize()
PY
  ncu --config-file off --clock-control base --nvtx --nvtx-push-pop-scope process --nvtx-include 'regex:perfgate@.+/' \
    --metrics gpu__time_duration.sum,device__attribute_display_name --export "$W/nested.ncu-rep" --force-overwrite \
    "$PY" "$W/nested.py" >"$W/nested.log" 2>&1
  $PY -c "from perfgate.collect.ncu_rep import read_ncu_rep as r; t = r('$W/nested.ncu-rep').table; print(t[['kernel', 'region']].drop_duplicates().to_string())" 2>&1 | tee "$W/nested.txt"
  cheap=$($PY -c "from perfgate.plugin.ncu_run import profiling_metrics as p; from perfgate.compare import CompareOptions as C; print(','.join(m for m in p(C().wanted_metrics()) if 'throughput' not in m))")
  prog="import cupy; a = cupy.ones(1 << 22, dtype=cupy.float32); b = a + a; cupy.cuda.Device().synchronize()"
  ncu --clock-control base --launch-count 1 --metrics "$cheap" "$PY" -c "$prog" >"$W/pass.log" 2>&1
  echo -e "$(grep -o '[0-9]* pass[es]*' "$W/pass.log" | head -1)\t$cheap" | tee -a "$W/passes-per-metric.tsv"
fi

if want sections && (( $(left) > 120 )); then  # which ncu section's rules name the regression, at what cost
  say "sections: each of ncu's sections alone on the regressed vector add (passes, findings)"
  mkdir -p "$W/sections"
  ncu --list-sections >"$W/sections/list.txt" 2>&1
  metrics=$($PY -c "from perfgate.plugin.ncu_run import profiling_metrics as p; from perfgate.compare import CompareOptions as C; print(','.join(p(C().wanted_metrics())))")
  cat >"$W/sections/va.py" <<'PY'
import os
import cupy
from examples.test_cupy_raw_kernel import VECTOR_ADD
kernel = cupy.RawKernel(VECTOR_ADD, "vector_add")
n, stride = 1 << 24, int(os.environ.get("STRIDE", "32"))
a, b = cupy.random.rand(n, dtype=cupy.float32), cupy.random.rand(n, dtype=cupy.float32)
out = cupy.empty_like(a)
kernel(((n + 255) // 256,), (256,), (a, b, out, cupy.int32(n), cupy.int32(stride)))
cupy.cuda.Device().synchronize()
PY
  for id in $(awk '$NF ~ /\.section$/ {print $1}' "$W/sections/list.txt") NoSuchSection; do
    if (( $(left) < 60 )); then say "skip section $id: budget"; continue; fi
    PYTHONPATH=$PWD timeout 120 ncu --config-file off --clock-control "$CLOCK" --cache-control all -k vector_add -c 1 \
      --section "$id" --metrics "$metrics" --export "$W/sections/$id.ncu-rep" --force-overwrite \
      "$PY" "$W/sections/va.py" >"$W/sections/$id.log" 2>&1
    echo -e "$id\t$?\t$(grep -o '[0-9]* pass[es]*' "$W/sections/$id.log" | head -1)" | tee -a "$W/sections/passes.tsv"
  done
  (cd "$W" && tar -czf "$OUT/sections.tar.gz" sections)
fi

if want gates; then gates 2 "${GATE_RUNS:-5}"; fi

if want replay && (( $(left) > 90 )); then  # unchanged code, several replay passes, against the 1-pass baselines
  session replay examples --ignore=examples/cpu --perfgate --perfgate-sections=SpeedOfLight,SourceCounters
  tail -n 30 "$W/replay/pytest.txt"
fi

if want passes && (( $(left) > 60 )); then
  say "replay passes: default metric set vs --set full"
  for art in "$ART"/*cupy*/ "$ART"/*softmax*/; do
    name=$(basename "$art")
    byhand "$art" "$name-full" 's/ --metrics [^ ]*/ --set full/'
  done
  grep -h "passes\|pass\b" "$W"/byhand/*/ncu.log | head -40
fi

if want gputests && (( $(left) > 150 )); then
  say "tests/gpu"
  PERFGATE_TEST_CLOCK_CONTROL=$CLOCK timed gputests timeout $(( $(left) - 30 )) "$PY" -m pytest tests/gpu -p no:cacheprovider -rA -x \
    >"$W/gputests.txt" 2>&1
  tail -n 30 "$W/gputests.txt"
fi

pack
ls -la "$OUT"
say "done"
