#!/usr/bin/env bash
# Schema-driven testing of the API: Schemathesis (from PyPI, installed once into a cached venv)
# runs every check it has, with examples, coverage, fuzzing and stateful phases, against a real
# server started here from api/openapi.yaml, authenticated as an admin. Exits non-zero on any
# failure. ST_MAX_TIME (seconds, default 90) bounds the fuzzing and stateful phases; ST_JUNIT_PATH,
# if set, is where a JUnit XML report of the run goes (CI counts its test cases).
set -euo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
cache="${SLIPWAY_CACHE:-$HOME/.cache/slipway}"
venv="$cache/schemathesis-$SCHEMATHESIS_VERSION"
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi

data="$(mktemp -d)"
port="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
key="schemathesis-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
# Apps and front door stop with the server: the run leaves nothing behind.
SVC_DATA_DIR="$data/data" SVC_LISTEN="127.0.0.1:$port" SVC_AUTH_API_KEY="$key" SVC_LOG_LEVEL=warn \
  SVC_RESTART_CONTINUITY=false SVC_DATA_PATH=node \
  node --import tsx src/main.ts >"$data/server.log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
for _ in $(seq 1 300); do
  curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done

report=()
if [ -n "${ST_JUNIT_PATH:-}" ]; then
  report=(--report junit --report-junit-path "$ST_JUNIT_PATH")
fi
status=0
"$venv/bin/st" --config-file test/contract/schemathesis.toml run api/openapi.yaml \
  --url "http://127.0.0.1:$port" \
  -H "Authorization: Bearer $key" \
  --phases examples,coverage,fuzzing,stateful \
  --max-time "${ST_MAX_TIME:-90}" \
  --workers 2 \
  --seed "${ST_SEED:-20261126}" \
  --no-color "${report[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "schemathesis: failures above; the server's log follows" >&2
  tail -n 50 "$data/server.log" >&2
fi
exit "$status"
