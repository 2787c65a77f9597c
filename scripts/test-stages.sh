#!/usr/bin/env bash
# Times the steps of .ci/run (make check-generated, then what `make test`
# does) one after another, each under /usr/bin/time: wall, user and system
# seconds per stage, tab-separated, in <results>; go test's -json output in
# <results>.gojson (per-test times). docs/benchmarks.md "Test suite time".
#   git clone -q . /tmp/x && scripts/test-stages.sh /tmp/x /tmp/x.times
# A failing stage is noted and the next one runs.
set -uo pipefail
dir=$1; out=$2
cd "$dir"
: > "$out"
st() { name=$1; shift
  /usr/bin/time -f "$name	%e	%U	%S" -a -o "$out" "$@" || echo "STAGE FAILED: $name" | tee -a "$out"
}
st check-generated make check-generated
st deps-test make deps-test
st build make build
st gofmt bash -c 'u=$(gofmt -l $(git ls-files "*.go")); [ -z "$u" ]'
st vet go vet ./...
st win-build env GOOS=windows go build -o /dev/null ./cmd/cairn-agent
st win-vet env GOOS=windows go vet ./agent/... ./cmd/cairn-agent/
st openapi-lint make --no-print-directory test-openapi-lint
st dpopjs make --no-print-directory api/testdata/dpopjs/node_modules
st test-go ./bin/cairn dev-postgres --dir .data/test-postgres -- go test -count=1 -timeout 20m -json ./... > "$out.gojson"
st test-wine make --no-print-directory test-wine
st test-fuzz ./bin/cairn dev-postgres --dir .data/test-postgres -- make --no-print-directory test-fuzz
st test-web make --no-print-directory test-web
st test-e2e make --no-print-directory test-e2e
