#!/usr/bin/env bash
# GPU check for the encoder backends: throughput (items/s) and peak GPU memory per backend.
# Real checkpoints when the hub (or a local cache) has them, tiny random models otherwise.
# Then, on a CUDA machine, the multi-GPU section: sharded embedding under torchrun on 1 and N = all visible GPUs,
# items/s per process count, and `eval mcq` outputs on N processes checked against N = 1.
# Then bindlab vs the libraries' own loops (`bench --only vs_library`): full sizes on a GPU (1,080 image MCQs with
# ViT-B-32 and ViT-L-14, 13,500 text MCQs with MiniLM-L6, random weights, about 4 minutes on one H200), the small CPU
# sizes elsewhere; written to $VS_LIBRARY_OUT (default vs_library.json) and printed as a table.
# Usage: scripts/gpu_check.sh [extra args for scripts/gpu_check.py, e.g. --tiny-only --out results.json]
#   SCALE_MODEL (default minilm), SCALE_PER_SIZE (default 200), SKIP_MULTI=1 to skip the multi-GPU section,
#   SKIP_VS_LIBRARY=1 to skip the comparison, VS_LIBRARY_ONLY=1 to run the comparison alone.
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
if [ "${VS_LIBRARY_ONLY:-0}" = "0" ]; then
  python scripts/gpu_check.py --device "${BINDLAB_DEVICE:-auto}" "$@"
fi

if [ "${SKIP_VS_LIBRARY:-0}" = "0" ]; then
  echo "=== bindlab vs the libraries' own loops (bench --only vs_library) ==="
  python scripts/gpu_check.py --vs-library "${VS_LIBRARY_OUT:-vs_library.json}"
fi
[ "${VS_LIBRARY_ONLY:-0}" != "0" ] && exit 0

NGPU="$(python -c 'import torch; print(torch.cuda.device_count())')"
if [ "${SKIP_MULTI:-0}" != "0" ] || [ "$NGPU" -lt 1 ]; then
  echo "multi-GPU section skipped (visible GPUs: $NGPU)"
  exit 0
fi
echo "=== multi-GPU: sharded embedding on 1 and $NGPU GPU(s) ==="
MODEL="${SCALE_MODEL:-minilm}"
PER_SIZE="${SCALE_PER_SIZE:-200}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export BINDLAB_DATA_ROOTS="$WORK${BINDLAB_DATA_ROOTS:+:$BINDLAB_DATA_ROOTS}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BINDLAB_HOME="$WORK/gen" python -m bindlab generate saber --out "$WORK/saber" --per-size "$PER_SIZE" --sizes 2-10 \
  --seed 0 >/dev/null
COUNTS="1"
[ "$NGPU" -gt 1 ] && COUNTS="1 $NGPU"
for N in $COUNTS; do
  # items/s: the benchmark's unique captions on a cold cache, sharded over N processes (one per GPU)
  BINDLAB_HOME="$WORK/bench$N" torchrun --standalone --nproc_per_node "$N" -m bindlab.speed.bench scale-worker "$MODEL" \
    "$PER_SIZE" "$WORK/bench$N.json"
  python -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"N={r['processes']}: {r['items']} captions, \
{r['items_per_s']} items/s, per rank {r['items_per_rank']}, overhead ratio {r['overhead_ratio']}\")" "$WORK/bench$N.json"
  # the same eval as a user runs it, on a cold cache
  BINDLAB_HOME="$WORK/eval$N" BINDLAB_DIST_VERBOSE=1 torchrun --standalone --nproc_per_node "$N" -m bindlab eval mcq \
    --data "$WORK/saber/mcq.jsonl" --model "$MODEL" --out "$WORK/mcq$N.json" >/dev/null
done
if [ "$NGPU" -gt 1 ]; then
  python - "$WORK/mcq1.json" "$WORK/mcq$NGPU.json" <<'EOF'
import json, math, sys
TIMING = {"created", "seconds"}
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in TIMING}
    return [strip(v) for v in o] if isinstance(o, list) else o
def diff(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        return max([diff(a[k], b[k], f"{where}/{k}") for k in a] or [0.0])
    if isinstance(a, list):
        assert len(a) == len(b), where
        return max([diff(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b))] or [0.0])
    if isinstance(a, float):
        return 0.0 if (math.isnan(a) and math.isnan(b)) else abs(a - b)
    assert a == b, f"{where}: {a!r} != {b!r}"
    return 0.0
worst = diff(strip(json.load(open(sys.argv[1]))), strip(json.load(open(sys.argv[2]))))
print(f"eval mcq on N GPUs vs 1: outputs match, largest number difference {worst:.2e}")
sys.exit(0 if worst <= 1e-4 else 1)
EOF
fi
