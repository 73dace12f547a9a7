#!/usr/bin/env bash
# Every test tandem has, in the order that fails fastest. Run `bash .ci/run` once first on a fresh
# machine: it installs what these need (Go modules, npm packages, tmux, chromium, docker-compose, podman)
# and runs this script with CI=true.
#
# No suite is skipped silently. A suite whose dependency is missing fails under CI (CI=true: CI
# installs everything, so absence is a broken setup); locally it is skipped, the skip is printed
# where it happens and again in the summary at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# The staticcheck release CI runs; bump it deliberately, with the fixes a new release asks for.
staticcheck_version=v0.8.2

skipped=()
missing() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI must install it; see .ci/run)" >&2
    exit 1
  fi
  echo "SKIPPED: $1" >&2
  skipped+=("$1")
}
summary() {
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "== not run here (CI runs them):" >&2
    printf '   %s\n' "${skipped[@]}" >&2
  fi
}
trap summary EXIT

tracked() { git ls-files "$@" 2>/dev/null || true; }

echo "== no tracked file over 1 MiB"
too_big=$(tracked -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 {print}')
if [ -n "$too_big" ]; then echo "files over 1 MiB (generate test data in tests instead):"; echo "$too_big"; exit 1; fi

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(tracked '*.go' | grep . || find . -name '*.go' -not -path '*/node_modules/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
go vet ./...

echo "== go.mod and go.sum are tidy"
go mod tidy -diff

echo "== staticcheck $staticcheck_version"
go run "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version" ./...

echo "== the Windows and macOS builds compile"
GOOS=windows go build ./...
GOOS=darwin go build ./...

echo "== the committed web UI is what its sources build"
if [ -d web/node_modules ]; then
  SKIP_NPM_CI=1 bash web/check-dist.sh
else
  missing "web/dist check: web/node_modules is missing (npm ci in web/)"
fi

echo "== fuzz the bash judge (60,000 inputs, about 15 s)"
# A count, not a duration: when a duration ends, the input a worker is running under real shells is
# cancelled and Go reports "context deadline exceeded" as a failure, with no input to blame.
go test -run '^$' -fuzz '^FuzzAnalyze$' -fuzztime 60000x ./internal/agent/shelljudge/

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

echo "== build the binary the end-to-end suites drive"
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -o bin/tandem ./cmd/tandem
export TANDEM_BIN="$PWD/bin/tandem"

echo "== the benchmark harness, every figure at a small size (no thresholds: shared machines are noisy)"
opencode_bin="test/compat/node_modules/opencode-linux-x64/bin/opencode"
if [ -x "$opencode_bin" ]; then
  go run ./test/bench -smoke -tandem "$TANDEM_BIN" -opencode "$opencode_bin"
else
  missing "OpenCode's side of the benchmark smoke: no $opencode_bin (npm ci in test/compat/)"
  go run ./test/bench -smoke -tandem "$TANDEM_BIN" -opencode off
fi

echo "== the README and docs/*.md, pasted into a shell as a newcomer would (scripts/readme-test.sh)"
if command -v jq >/dev/null && command -v curl >/dev/null; then
  bash scripts/readme-test.sh
else
  missing "the README test: jq or curl is missing (apt-get install jq curl)"
fi

echo "== the container image: built from the Dockerfile, run, and brought up with docker-compose (deploy/image-test.sh)"
if [ "$(id -u)" = 0 ] && command -v podman >/dev/null && command -v debootstrap >/dev/null; then
  bash deploy/image-test.sh
else
  missing "the container image test: it needs root, podman and debootstrap (apt-get install podman runc iptables netavark aardvark-dns debootstrap)"
fi

for suite in test/e2e test/compat; do
  echo "== $suite"
  if [ -d "$suite/node_modules" ] && command -v node >/dev/null; then
    (cd "$suite" && npm test)
  else
    missing "the $suite suite: node or $suite/node_modules is missing (npm ci in $suite/)"
  fi
done

if [ "${CI:-}" = true ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  echo "FAIL: the tests changed the checkout (write generated files to a temp dir):" >&2
  git status --porcelain >&2
  exit 1
fi
