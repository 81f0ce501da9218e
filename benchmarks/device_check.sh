#!/usr/bin/env bash
# Issue 26's checks on a GPU, as one short command (expected to take a few minutes on one GPU: not yet run on one): the certified networks
# trained on CUDA (tests/lipschitz/test_every_device.py), every training experiment's tiny unit or small run on
# CUDA, the CLI's run and resume (tests/experiments/test_device_fields.py), a killed fit resumed on CUDA
# (tests/training/test_fit_checkpoint.py; the suite runs all of these on a pretend CUDA device everywhere,
# tests/pretend_cuda.py), `lipschitz-mnist-conv --quick --device cuda`, and two epochs
# of its full preset on CUDA (seconds per epoch: the full preset's 60 epochs extrapolate from them).
#
# The data sets do not travel with the repository: before sending it to a GPU machine, from the repository root,
#   mkdir -p .device && cp -r ../shared/data .device/ && echo /.device/ >> .git/info/exclude
# and carry `.device`. There, from the repository root:
#   bash benchmarks/device_check.sh        (python3 with torch, numpy, scipy, pandas, scikit-learn, matplotlib,
#                                           tqdm, jinja2, pytest; results in $OUT, else ./device-check)
# DEVICE=cpu runs the same script on the CPU (a dry run of the script itself; the CUDA tests are then skipped).
set -uo pipefail
out=${OUT:-device-check}
device=${DEVICE:-cuda}
python=${PYTHON:-python3}
work=$(mktemp -d)
mkdir -p "$out"
export PYTHONPATH="$PWD/src" PYTHONUNBUFFERED=1 STRUCTNETS_DATA=${STRUCTNETS_DATA:-$PWD/.device/data}
status=0
exec > >(tee "$out/device_check.txt") 2>&1
"$python" -c "import torch, numpy; print('torch', torch.__version__, 'CUDA', torch.version.cuda,
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device', 'numpy', numpy.__version__)"
echo "== tests on every device ($device)"
"$python" -m pytest -q -p no:cacheprovider -W default \
    tests/lipschitz/test_every_device.py tests/experiments/test_device_fields.py tests/training/test_fit_checkpoint.py \
    -k "(every_device or cuda) and not pretend" || status=1
echo "== lipschitz-mnist-conv --quick --device $device"
start=$(date +%s)
"$python" -m structnets run lipschitz-mnist-conv --quick --device "$device" --out "$work/quick" || status=1
echo "quick preset: $(( $(date +%s) - start )) s"
cp "$work/quick/table.md" "$out/quick_table.md" 2>/dev/null
echo "== lipschitz-mnist-conv full preset, seed 0, 2 epochs, --device $device"
start=$(date +%s)
"$python" -m structnets run lipschitz-mnist-conv --device "$device" --set epochs=2 --out "$work/full2" || status=1
echo "full preset, 2 epochs: $(( $(date +%s) - start )) s"
cp "$work/full2/table.md" "$out/full2_table.md" 2>/dev/null
cp "$work/full2/results.csv" "$out/full2_results.csv" 2>/dev/null
echo "device check exit status: $status"
rm -rf "$work"
exit "$status"
