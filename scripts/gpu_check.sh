#!/usr/bin/env bash
# The GPU half of tabflow's verification, in one command, from the project root:
#
#   bash scripts/gpu_check.sh
#
# 1. preflight: the GPU, the versions, and whether the cuDF engine can run at all (if not,
#    the reason, the import error itself included, and exit status 3);
# 2. the whole `pytest -m gpu` selection (tests and doctests), CPU/GPU parity tests apart;
# 3. the CPU/GPU parity tests (tests/test_engine_parity.py);
# 4. `benchmarks/etl.py --gpu --check` on both workflows: the GPU engine's output compared
#    with the CPU engine's, row for row;
# 5. a one-screen summary (also $OUT/gpu_check_summary.txt); the exit status is 0 only when
#    every step passed.
#
# TABFLOW_REQUIRE_GPU=1 is set, so a GPU test that cannot run fails instead of skipping.
# Logs go to $OUT (default /tmp/out). The whole run fits CHECK_S seconds (default 420, the
# GPU kit's limit for its `check` verb): each step gets what is left of it, minus the time
# the summary needs. Settings: PYTHON (default python3), ETL_ROWS (default 1000000),
# PYTEST_WORKERS (pytest-xdist processes where it is installed, default 8),
# TEST_TIMEOUT (per test, default 120 s).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
export TABFLOW_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
PYTHON=${PYTHON:-python3}
CHECK_S=${CHECK_S:-420}
ETL_ROWS=${ETL_ROWS:-1000000}
PYTEST_WORKERS=${PYTEST_WORKERS:-8}
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
WORKDIR=${WORKDIR:-/tmp/tabflow-gpu-check}
mkdir -p "$OUT" "$WORKDIR"
started=$SECONDS
deadline=$((started + CHECK_S - 15))   # 15 s kept for the summary
summary="$OUT/gpu_check_summary.txt"
: > "$summary"
status=0

left() {  # seconds left before the deadline, at least 1
  local rest=$((deadline - SECONDS))
  ((rest > 0)) && echo "$rest" || echo 1
}

record() {  # record NAME EXIT SECONDS DETAIL
  local verdict="passed"
  [[ $2 -ne 0 ]] && verdict="FAILED (exit $2)" && status=1
  [[ $2 -eq 124 || $2 -eq 137 ]] && verdict="TIMED OUT (exit $2)"
  printf '%-32s %-20s %5ss  %s\n' "$1" "$verdict" "$3" "$4" >> "$summary"
}

# ------------------------------------------------------------------------------ preflight
{
  echo "tabflow GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -4
  else
    echo "nvidia-smi: not found"
  fi
} > "$OUT/gpu_check_versions.txt"
"$PYTHON" - >> "$OUT/gpu_check_versions.txt" 2>&1 <<'EOF'
import importlib
versions = []
for name in ("numpy", "pandas", "pyarrow", "dask", "numba", "numba_cuda", "cupy", "cudf", "rmm", "torch"):
    try:
        module = importlib.import_module(name)
        versions.append(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as err:  # noqa: BLE001 - the line says what failed
        versions.append(f"{name}: {type(err).__name__}")
print(", ".join(versions))
EOF
reason=$("$PYTHON" -c "from tabflow.backends import gpu_unavailable_reason; print(gpu_unavailable_reason() or '')" 2>&1)
if [[ -n $reason ]]; then
  cat "$OUT/gpu_check_versions.txt"
  echo "gpu_check: no usable GPU engine here, nothing was checked."
  echo "reason: $reason"
  exit 3
fi

# ------------------------------------------------------------------------------ the suites
pytest_args=(-q -p no:cacheprovider -rfE --tb=short --timeout "$TEST_TIMEOUT")
"$PYTHON" -c "import instafail" 2> /dev/null && pytest_args+=(-p instafail)
if "$PYTHON" -c "import xdist" 2> /dev/null && ((PYTEST_WORKERS > 1)); then
  pytest_args+=(-n "$PYTEST_WORKERS" --dist loadfile)
fi

run_pytest() {  # run_pytest NAME LOG ARGS...
  local name=$1 log=$2 begun=$SECONDS
  shift 2
  timeout "$(left)" "$PYTHON" -m pytest "${pytest_args[@]}" "$@" > "$log" 2>&1
  local code=$?
  local counts
  counts=$(grep -E "^(=+ )?[0-9]+ (passed|failed|error)|[0-9]+ (passed|failed|errors?|skipped)" "$log" | tail -1 | sed -e 's/=//g' -e 's/^ *//')
  record "$name" "$code" "$((SECONDS - begun))" "${counts:-no result line} ($(basename "$log"))"
}

run_pytest "pytest -m gpu" "$OUT/gpu_suite.txt" -m gpu tests tabflow --deselect tests/test_engine_parity.py
run_pytest "CPU/GPU parity" "$OUT/gpu_parity.txt" tests/test_engine_parity.py

# ------------------------------------------------------------------ the ETL on both engines
for workflow in categorify features; do
  begun=$SECONDS
  log="$OUT/etl_gpu_check_$workflow.txt"
  timeout "$(left)" "$PYTHON" benchmarks/etl.py --gpu --check --workflow "$workflow" --rows "$ETL_ROWS" --files 4 \
    --baselines '' --workdir "$WORKDIR" > "$log" 2>&1
  code=$?
  detail=$(grep -E "^check: tabflow on the GPU" "$log" | tail -1)
  rate=$(grep -E "^tabflow total:" "$log" | tail -1 | awk '{print $(NF-4), $(NF-3)}')
  [[ -z $detail ]] && detail=$(grep -E "Error|error" "$log" | tail -1 | cut -c1-160)
  record "etl.py --gpu --check $workflow" "$code" "$((SECONDS - begun))" "${detail:-no check line}${rate:+; GPU $rate}"
done

# ------------------------------------------------------------------------------ summary
{
  echo
  echo "failures (first 25; whole logs in $OUT):"
  grep -hE "^(FAILED|ERROR) " "$OUT"/gpu_suite.txt "$OUT"/gpu_parity.txt 2> /dev/null | cut -c1-200 | head -25
  grep -hE "AssertionError|Traceback|failed" "$OUT"/etl_gpu_check_*.txt 2> /dev/null | cut -c1-200 | head -5
  echo
  echo "total $((SECONDS - started)) s of CHECK_S=$CHECK_S; overall: $([[ $status -eq 0 ]] && echo PASSED || echo FAILED)"
} >> "$summary"
cat "$OUT/gpu_check_versions.txt" "$summary"
exit "$status"
