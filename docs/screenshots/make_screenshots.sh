#!/usr/bin/env bash
# Issue 18's before/after screenshots: the language profile page and an OWL run page, built from the
# same stored runs by two versions of the code, rendered in headless Chromium (Debian: apt-get install
# chromium). Also rewrites docs/report-owl.png (README) from the current code.
#
#   babelprobe demo --out /tmp/demo                          # the runs, once
#   git archive 4adbec1 src | tar -x -C /tmp/before          # the code before
#   PYTHON=.venv/bin/python docs/screenshots/make_screenshots.sh /tmp/demo /tmp/before/src
set -euo pipefail
DEMO=${1:?the folder of a babelprobe demo}
BEFORE_SRC=${2:?the src folder of the code before}
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d)

shot() {  # shot HTML PNG WIDTHxHEIGHT
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=3000 \
        --window-size="$3" --screenshot="$2" "file://$1" 2>/dev/null
}

for side in before after; do
    if [ "$side" = before ]; then src=$BEFORE_SRC; else src=$ROOT/src; fi
    PYTHONPATH=$src "$PY" - "$DEMO" "$WORK/$side" <<'PY'
import sys
from pathlib import Path

from babelprobe.report.html import profile_report, run_report

demo, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True)
runs = sorted(d for d in demo.iterdir() if (d / "manifest.json").is_file())
profile_report(runs, out / "profile.html")
run_report(demo / "owl", out / "owl.html")
PY
    shot "$WORK/$side/profile.html" "$HERE/profile-$side.png" 1280,1800
    shot "$WORK/$side/owl.html" "$HERE/owl-$side.png" 1280,4400
done
shot "$WORK/after/owl.html" "$ROOT/docs/report-owl.png" 1000,1100
echo "written: $HERE/{profile,owl}-{before,after}.png, $ROOT/docs/report-owl.png"
