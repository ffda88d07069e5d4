# Sourced by build.sh and images.sh: their cache of built parts under $CACHE, each part kept
# while the stamp of its inputs holds, and how long a step took.

# fresh NAME STAMP OUTPUT... → 0 when the stamp matches and every output exists.
fresh() {
  local name=$1 stamp=$2
  shift 2
  [[ -f "$CACHE/stamps/$name" && "$(cat "$CACHE/stamps/$name")" == "$stamp" ]] || return 1
  local out
  for out in "$@"; do [[ -e "$out" ]] || return 1; done
}
stamp() { printf '%s' "$2" >"$CACHE/stamps/$1"; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
