# Sourced by .ci/run. `step NAME COMMAND...` runs one suite and keeps its exit status, going on
# when it fails; at exit, whatever ended the run, test/support/ci-summary.mjs prints the counts of
# every suite in the array `suites` (NAME:KIND), their sum as the very last line, and the run's
# exit status is non-zero if anything failed. Reports go to "$reports": NAME.json (vitest's JSON
# reporter) or NAME.xml (JUnit). A suite that never ran, or left no report, counts as one failure.
reports="$(mktemp -d)"

step() {
  local name=$1 status=0
  shift
  "$@" || status=$?
  echo "$status" >"$reports/$name.exit"
}

summary() {
  local status=$?
  echo
  node test/support/ci-summary.mjs "$reports" "${suites[@]}" || status=1
  rm -rf "$reports"
  exit "$status"
}
trap summary EXIT
