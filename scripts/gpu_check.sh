#!/usr/bin/env bash
# GPU check for the encoder backends: throughput (items/s) and peak GPU memory per backend.
# Real checkpoints when the hub (or a local cache) has them, tiny random models otherwise.
# Usage: scripts/gpu_check.sh [extra args for scripts/gpu_check.py, e.g. --tiny-only --out results.json]
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
exec python scripts/gpu_check.py --device "${BINDLAB_DEVICE:-auto}" "$@"
