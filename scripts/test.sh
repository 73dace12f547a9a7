#!/usr/bin/env bash
# Every test tandem has, in the order that fails fastest. Run `bash .ci/run` once first on a fresh
# machine: it installs what these need (Go modules, npm packages, tmux, chromium, docker-compose).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './*/node_modules/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
go vet ./...

echo "== the committed web UI is what its sources build"
if [ -x web/check-dist.sh ] && [ -d web/node_modules ]; then bash web/check-dist.sh; fi

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

echo "== build the binary the end-to-end suites drive"
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -o bin/tandem ./cmd/tandem
export TANDEM_BIN="$PWD/bin/tandem"

for suite in e2e compat; do
  if [ -f "$suite/package.json" ] && [ -d "$suite/node_modules" ]; then
    echo "== $suite"
    (cd "$suite" && npm test)
  fi
done
