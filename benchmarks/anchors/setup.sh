#!/usr/bin/env bash
# Builds the side environments that hold the anchor controllers, for side-by-side timing:
#   TSID 1.7.1 (needs Pinocchio 3.4 and these exact urdfdom/tinyxml2 wheels) and placo 0.10.2.
# Usage: bash benchmarks/anchors/setup.sh   (or `make anchors`; idempotent)
# Environments under $WBC_ANCHORS (default ~/.cache/wbc-anchors): <root>/tsid, <root>/placo.
set -euo pipefail
PYTHON=${PYTHON:-python3}
ROOT=${WBC_ANCHORS:-$HOME/.cache/wbc-anchors}
mkdir -p "$ROOT"
if ! "$ROOT/tsid/bin/python" -c "from tsid import tsid_pywrap" 2>/dev/null; then
  "$PYTHON" -m venv "$ROOT/tsid"
  "$ROOT/tsid/bin/pip" install -q --only-binary=:all: tsid==1.7.1 pin==3.4.0 \
    cmeel-urdfdom==4.0.1 cmeel-tinyxml2==10.0.0 example-robot-data==6.0.0
fi
if ! "$ROOT/placo/bin/python" -c "import placo" 2>/dev/null; then
  "$PYTHON" -m venv "$ROOT/placo"
  "$ROOT/placo/bin/pip" install -q placo==0.10.2 example-robot-data==6.0.0
fi
echo "anchors ready under $ROOT: $ROOT/tsid/bin/python, $ROOT/placo/bin/python"
