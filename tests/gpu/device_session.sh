#!/usr/bin/env bash
# One device session's GPU checks for issues 34, 37 and 38, in priority order, each step skipped when less than its
# need of CHECK_BUDGET is left (tests/gpu/README.md: the run() calls, what each step expects, where results go).
# Run from the repository root on a machine with an NVIDIA GPU, torch, CuPy and ncu, with the wheels its Python
# lacks in .device/wheels (cupti-python, nvtx, ncu_report, orjson; carried with carry=[".device"]):
#   OUT=/some/dir CHECK_BUDGET=530 bash tests/gpu/device_session.sh [steps...]
#   bash tests/gpu/device_session.sh --dry-run [steps...]    # here, no GPU: the steps, their needs, what fits
# Steps (default all, in this order): setup loader overhead code dram tensor load timeline roofline both triton.
# Back under $OUT: log.txt, summary.json (every step's status, seconds and figures), device-session.tar.gz
# (session reports, pytest output, traces, small ncu reports, baselines, figures/*.json).
set -uo pipefail
export PYTHONUNBUFFERED=1
DRY=${CHECK_DRY_RUN:-0}
if [[ ${1:-} == --dry-run ]]; then DRY=1; shift; fi
OUT=${OUT:-$PWD/device-session}
W=${CHECK_WORK:-/tmp/perfgate-device-session}
BUDGET=${CHECK_BUDGET:-530}
PY=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
ALL=(setup loader overhead code dram tensor load timeline roofline both triton)
# Seconds a step needs to start: its expected run time on an H200/H100 (tests/data/h200/timeline-live/log.txt:
# a pytest --perfgate session of the three examples takes 25 s under the timeline source, 55 s under both).
declare -A NEED=([setup]=40 [loader]=75 [overhead]=70 [code]=100 [dram]=30 [tensor]=45 [load]=15 [timeline]=60
                 [roofline]=80 [both]=170 [triton]=45)
declare -A WHAT=(
  [setup]="install the wheels and perfgate; probe the machine (nvidia-smi, ncu, versions); NVML idle (issue 38)"
  [loader]="issue 34: timeline baselines of the examples, then the MLP with PERFGATE_EXAMPLE_SLOW_LOADER=1: exit 1 on region step (wall time, GPU idle, host lead), no kernel blamed; traces kept"
  [overhead]="issue 34: the live tracer on softmax and vector_add, untraced / traced / traced outside regions, alternated twice: goal <= 1.10x and <= 1.02x"
  [code]="issue 38: tests/gpu/device_kernels.py under ncu in two processes (--perfgate-code-identity): one code_id per kernel across them, vector_add == vector_add_renamed; then tests/gpu/code_id_check.py (CUPTI cubin against ncu) if present"
  [dram]="issue 37: the 256 MiB copy under plain ncu: derived.dram_bytes_per_s against ncu's dram__bytes.sum.per_second"
  [tensor]="issue 37: ncu --query-metrics: which tensor-ccXY counter names exist; a bf16 matmul under ncu with this CC's names"
  [roofline]="issue 37: the MLP and vector-add examples under ncu with the default set and with +roofline: seconds and replay passes of each"
  [timeline]="issue 34: 2 gated timeline runs of unchanged code (0 regressions; the softmax cold-region improvements gone); the baselines to commit"
  [both]="issue 34: --perfgate-source=both: baselines and 2 gated runs (0 regressions)"
  [load]="issue 38: NVML throttle reasons under a 5 s bf16 matmul load"
  [triton]="issue 38: a Triton test traced by torch.profiler (cupti-python hidden) with --perfgate-code-identity: its kernel's code_id from Triton's cache equals ncu's (tests/gpu/code_id_check.py --checks triton)")
STEPS=("$@")
if (( ${#STEPS[@]} == 0 )); then STEPS=("${ALL[@]}"); fi
for step in "${STEPS[@]}"; do
  if [[ -z ${NEED[$step]:-} ]]; then echo "device_session.sh: unknown step '$step'; steps: ${ALL[*]}" >&2; exit 2; fi
done

if (( DRY )); then  # what a run with this budget would do, if every step took its need
  echo "device_session.sh dry run: CHECK_BUDGET=$BUDGET s, OUT=$OUT, work in $W"
  planned=0
  for step in "${STEPS[@]}"; do
    need=${NEED[$step]}
    if (( BUDGET - planned >= need )); then planned=$((planned + need)); fits="runs, done by ${planned} s"
    else fits="skipped: ${need} s needed, $((BUDGET - planned)) s left"; fi
    printf '%-9s needs %3d s  %s\n          %s\n' "$step" "$need" "$fits" "${WHAT[$step]}"
  done
  for file in tests/gpu/device_checks.py tests/gpu/device_kernels.py tests/gpu/capture_timeline.py \
              examples/test_torch_mlp_layers.py; do
    [[ -f $file ]] || { echo "missing: $file" >&2; exit 1; }
  done
  ls .device/wheels/*.whl >/dev/null 2>&1 || echo "note: no .device/wheels/*.whl here (tests/gpu/README.md: pip download)"
  if [[ -f tests/gpu/code_id_check.py ]]; then echo "code: runs tests/gpu/code_id_check.py"
  else echo "code: no tests/gpu/code_id_check.py here, the CUPTI code_id is not checked"; fi
  exit 0
fi

mkdir -p "$W/figures" "$OUT"
: >"$W/exits.txt"; : >"$W/sessions.txt"  # this call's (a second call on a warm machine finds the first's work)
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(printf '%4d' "$SECONDS") s] $*"; }
left() { echo $((BUDGET - SECONDS)); }
cap() {  # a command's timeout: at most $1 s, and 15 s short of the budget (at least 1 s: 0 would mean none)
  local most=$1 room=$(( $(left) - 15 ))
  (( room < 1 )) && room=1
  echo $(( room < most ? room : most ))
}
checks() { "$PY" tests/gpu/device_checks.py "$@" 2>&1 | tail -3; }
EXAMPLES=(examples --ignore=examples/cpu)

session() {  # session NAME SOURCE BASELINES pytest-args...: one pytest --perfgate run, its report and output kept
  local name=$1 source=$2 baselines=$3; shift 3
  if (( $(left) < 30 )); then say "skip $name: budget"; return 0; fi
  mkdir -p "$W/$name"
  timeout "$(cap 240)" "$PY" -m pytest "$@" -p no:cacheprovider -rA --perfgate --perfgate-source="$source" \
    --perfgate-baselines="$baselines" --perfgate-timeout=200 --perfgate-report="$W/$name/perfgate-report.json" \
    >"$W/$name/pytest.txt" 2>&1
  local rc=$?
  say "$name ($source): exit $rc; $(grep -E '^(perfgate |=+ .* in )' "$W/$name/pytest.txt" | tr '\n' ' ' | cut -c1-300)"
  echo "$name $source $rc" >>"$W/sessions.txt"
  [[ -f $W/$name/perfgate-report.json ]] && checks session "$W/figures/session-$name.json" "$W/$name/perfgate-report.json" >/dev/null
  return 0
}

step_setup() {
  # Installs into $PY's environment: only on a GPU machine with the wheels carried, never into a developer's.
  if ! command -v nvidia-smi >/dev/null || ! compgen -G '.device/wheels/*.whl' >/dev/null; then
    say "setup: no nvidia-smi or no .device/wheels/*.whl: nothing installed"; return 0
  fi
  # Every wheel in .device/wheels (cupti-python, nvtx, ncu_report; pyelftools for code_id_check.py), and orjson's
  # only where the machine lacks orjson (perfgate writes its session report with it).
  local wheels=()
  for wheel in .device/wheels/*.whl; do [[ $wheel == */orjson-* ]] || wheels+=("$wheel"); done
  $PY -m pip install -q --no-index --no-deps "${wheels[@]}" 2>&1 | tail -2
  $PY -c "import orjson" 2>/dev/null || $PY -m pip install -q --no-index --no-deps .device/wheels/orjson-*.whl 2>&1 | tail -2
  $PY -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -2
  {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
    "$NCU" --version | tail -1; $PY -V; uname -r
    $PY -c "import torch, cupy, cupti, orjson, nvtx, ncu_report; print('torch', torch.__version__, 'cupy', cupy.__version__, 'cc', '%d.%d' % torch.cuda.get_device_capability())"
  } >"$W/probe.txt" 2>&1
  cat "$W/probe.txt"
  checks nvml "$W/figures/nvml-idle.json"
}

step_loader() {  # baselines of the three examples (the `timeline` step gates against them), then the starved step
  # Its traces kept: the baselines to commit (README) can then be rebuilt from them when region metrics change.
  session tl-update timeline "$W/baselines" "${EXAMPLES[@]}" --perfgate-update --perfgate-keep-artifacts
  PERFGATE_EXAMPLE_SLOW_LOADER=1 session tl-loader timeline "$W/baselines" examples/test_torch_mlp_layers.py \
    --perfgate-keep-artifacts
  grep -E "region \`|regression|why:|kernels unchanged" "$W/tl-loader/pytest.txt" | head -12
}

step_overhead() {  # capture_timeline.py: 3 warm-up and 10 measured steps a process, the tracers alternated
  local workload tracer how
  for workload in softmax vector_add; do  # the MLP's (+0.4%) is in tests/data/h200/timeline-live
    for tracer in none perfgate "perfgate --outside" none perfgate "perfgate --outside"; do
      (( $(left) < 20 || SECONDS > STEP_END )) && break 2
      read -r -a how <<<"$tracer"
      timeout "$(cap 60)" "$PY" tests/gpu/capture_timeline.py "$workload" "${how[0]}" \
        "$W/overhead/$workload.${tracer// --/-}.$SECONDS" "${how[@]:1}" 2>&1 | grep -E "median step|Error" | head -3
    done
  done
  checks overhead "$W/figures/overhead.json" "$W/overhead"
}

step_code() {  # two processes, each its own ncu report; the second gated against the first (same-code rule)
  local flags=(--perfgate-code-identity --perfgate-metrics=+roofline --perfgate-keep-artifacts)
  session kernels-a ncu "$W/kernels-baselines" tests/gpu/device_kernels.py --perfgate-update "${flags[@]}"
  session kernels-b ncu "$W/kernels-baselines" tests/gpu/device_kernels.py "${flags[@]}"
  mapfile -t reports < <(find "$W/kernels-a" "$W/kernels-b" -name '*.ncu-rep' | sort)
  (( ${#reports[@]} )) && checks code-ids "$W/figures/code-ids.json" "${reports[@]}"
  # The code_id from the loaded module's cubin (CUPTI) against ncu's, where that check is in the tree: its
  # results.json (checks cupti_equals_ncu, two_processes_same, rename_keeps_code); exit 0 when all hold.
  if [[ -f tests/gpu/code_id_check.py ]]; then
    timeout "$(cap 120)" "$PY" tests/gpu/code_id_check.py --out "$W/code_id_check" --checks cubin 2>&1 | tail -20
    say "code_id_check.py: exit ${PIPESTATUS[0]}"
    cp "$W/code_id_check/results.json" "$W/figures/code-id-check.json" 2>/dev/null
  else
    say "no tests/gpu/code_id_check.py in this tree: the CUPTI code_id is not checked"
  fi
}

step_dram() {  # ncu's own DRAM rate beside the counts perfgate derives its rate from, one launch after the warm-up
  mkdir -p "$W/dram"
  timeout "$(cap 90)" "$NCU" --config-file off --clock-control base --cache-control all --kernel-name copy_float4 \
    --launch-skip 1 --launch-count 1 --export "$W/dram/copy" --force-overwrite --log-file "$W/dram/ncu.log" \
    --metrics dram__bytes.sum.per_second,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$PY" -m pytest -q -p no:cacheprovider tests/gpu/device_kernels.py::test_copy >"$W/dram/pytest.txt" 2>&1
  say "dram: ncu exit $?"; tail -3 "$W/dram/ncu.log"
  mapfile -t reports < <(find "$W/dram" "$W/kernels-b" -name '*.ncu-rep' 2>/dev/null | sort)
  (( ${#reports[@]} )) && checks dram "$W/figures/dram.json" "${reports[@]}"
}

step_tensor() {  # the names ncu lists on this device, then this CC's names asked for on a tensor-core kernel
  mkdir -p "$W/tensor"
  timeout "$(cap 60)" "$NCU" --query-metrics >"$W/tensor/query.txt" 2>&1
  say "tensor: query exit $?; $(grep -c sm__ops_path_tensor "$W/tensor/query.txt") tensor lines"
  local cc names
  cc=$($PY -c "import torch; print('%d.%d' % torch.cuda.get_device_capability())")
  names=$($PY tests/gpu/device_checks.py tensor-names "$cc")
  timeout "$(cap 90)" "$NCU" --config-file off --kernel-name 'regex:gemm|nvjet|sm90|cutlass' --launch-count 1 \
    --export "$W/tensor/matmul" --force-overwrite --log-file "$W/tensor/ncu.log" \
    --metrics "gpu__time_duration.sum,${names}" "$PY" -c \
    "import torch; a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); (a @ a).sum().item()" \
    >"$W/tensor/run.txt" 2>&1
  say "tensor: ncu exit $? on cc $cc with perfgate's names"; tail -4 "$W/tensor/ncu.log"
  local report=() listed
  listed=$($PY tests/gpu/device_checks.py tensor-names "$cc" --listed "$W/tensor/query.txt")
  if [[ ! -f $W/tensor/matmul.ncu-rep && -n $listed ]]; then  # again with the names this ncu lists
    timeout "$(cap 90)" "$NCU" --config-file off --kernel-name 'regex:gemm|nvjet|sm90|cutlass' --launch-count 1 \
      --export "$W/tensor/matmul-listed" --force-overwrite --log-file "$W/tensor/ncu-listed.log" \
      --metrics "gpu__time_duration.sum,${listed}" "$PY" -c \
      "import torch; a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); (a @ a).sum().item()" \
      >>"$W/tensor/run.txt" 2>&1
    say "tensor: ncu exit $? with the names it lists"; tail -4 "$W/tensor/ncu-listed.log"
  fi
  for found in "$W/tensor/matmul.ncu-rep" "$W/tensor/matmul-listed.ncu-rep"; do
    [[ -f $found ]] && report=("$found")
  done
  checks tensor "$W/figures/tensor.json" "$W/tensor/query.txt" "${report[@]}"
}

step_roofline() {  # the same two tests with the default set and with +roofline, each writing fresh baselines
  local started
  for metrics in default roofline; do
    local extra=()
    [[ $metrics == roofline ]] && extra=(--perfgate-metrics=+roofline)
    started=$SECONDS
    session "rf-$metrics" ncu "$W/rf-$metrics-baselines" examples/test_torch_mlp_layers.py \
      examples/test_cupy_raw_kernel.py --perfgate-update --perfgate-keep-artifacts "${extra[@]}"
    echo "{\"seconds\": $((SECONDS - started))}" >"$W/figures/roofline-$metrics-seconds.json"
    checks passes "$W/figures/roofline-$metrics-passes.json" "$W/rf-$metrics"
  done
}

step_timeline() {  # unchanged code against the loader step's baselines (written again here when that step did not run)
  [[ -d $W/baselines ]] || session tl-update timeline "$W/baselines" "${EXAMPLES[@]}" --perfgate-update \
    --perfgate-keep-artifacts
  session tl-gate1 timeline "$W/baselines" "${EXAMPLES[@]}"
  session tl-gate2 timeline "$W/baselines" "${EXAMPLES[@]}" --perfgate-keep-artifacts
}

step_both() {
  session both-update both "$W/both-baselines" "${EXAMPLES[@]}" --perfgate-update
  session both-gate1 both "$W/both-baselines" "${EXAMPLES[@]}"
  session both-gate2 both "$W/both-baselines" "${EXAMPLES[@]}"
}

step_load() { checks nvml "$W/figures/nvml-busy.json" --load 5; }

step_triton() {  # the torch.profiler tracer's codes from Triton's cache, live (results.json: torch_triton_equals_ncu)
  timeout "$(cap 60)" "$PY" tests/gpu/code_id_check.py --out "$W/code_id_triton" --checks triton 2>&1 | tail -8
  say "code_id_check.py --checks triton: exit ${PIPESTATUS[0]}"
  cp "$W/code_id_triton/results.json" "$W/figures/code-id-triton.json" 2>/dev/null
}

for step in "${STEPS[@]}"; do
  need=${NEED[$step]}
  if (( $(left) < need )); then
    say "skip $step: needs $need s, $(left) s left"; echo "$step skipped 0" >>"$W/exits.txt"; continue
  fi
  say "step $step (needs $need s): ${WHAT[$step]}"
  started=$SECONDS
  STEP_END=$((SECONDS + need + 15))  # a step with a loop of its own stops there
  "step_$step"
  echo "$step done $((SECONDS - started))" >>"$W/exits.txt"
done

say "done; steps:"; cat "$W/exits.txt"; cat "$W/sessions.txt" 2>/dev/null
skipped=$(awk '$2 == "skipped" {printf " %s", $1}' "$W/exits.txt")
[[ -n $skipped ]] && say "skipped:$skipped; the next call: bash tests/gpu/device_session.sh setup$skipped"
"$PY" tests/gpu/device_checks.py summary "$W" "$OUT/summary.json" >/dev/null 2>&1 || say "summary failed"
# Examples' ncu reports stay behind (the roofline and both runs': megabytes each, their figures are in summary.json).
tar -C "$W" -czf "$OUT/device-session.tar.gz" --exclude='./rf-*/*.ncu-rep' --exclude='./both-*/*.ncu-rep' . 2>/dev/null
if (( $(stat -c %s "$OUT/device-session.tar.gz") > 15000000 )); then
  say "archive over 15 MB: again without any ncu report"
  tar -C "$W" -czf "$OUT/device-session.tar.gz" --exclude='*.ncu-rep' . 2>/dev/null
fi
ls -la "$OUT"
