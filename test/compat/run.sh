#!/usr/bin/env bash
# Runs the compatibility suites (the official @opencode-ai/sdk and OpenCode's terminal UI) against
# the tandem binary in TANDEM_BIN. It builds nothing: scripts/test.sh builds bin/tandem and sets
# TANDEM_BIN; by hand, `go build -o /tmp/tandem ./cmd/tandem && TANDEM_BIN=/tmp/tandem bash test/compat/run.sh`.
set -euo pipefail

if [ -z "${TANDEM_BIN:-}" ]; then
  echo "compat: set TANDEM_BIN to the tandem binary to test" >&2
  exit 2
fi
if [ ! -f "$TANDEM_BIN" ] || [ ! -x "$TANDEM_BIN" ]; then
  echo "compat: TANDEM_BIN=$TANDEM_BIN is not an executable file" >&2
  exit 2
fi
# Absolute before leaving the caller's directory, so a relative TANDEM_BIN works too.
TANDEM_BIN=$(cd "$(dirname "$TANDEM_BIN")" && pwd)/$(basename "$TANDEM_BIN")
export TANDEM_BIN
cd "$(dirname "$0")"
if [ ! -d node_modules/@opencode-ai/sdk ]; then
  echo "compat: the npm packages are missing; run 'npm ci' in test/compat/ (scripts are off in .npmrc)" >&2
  exit 2
fi
if ! command -v tmux >/dev/null; then
  echo "compat: tmux is missing (apt-get install tmux); the terminal UI suite needs it" >&2
  exit 2
fi
bin="node_modules/opencode-$(node -p 'process.platform')-$(node -p 'process.arch')/bin/opencode"
if [ ! -x "$bin" ]; then
  echo "compat: OpenCode's platform binary is missing at test/compat/$bin" >&2
  exit 2
fi

sdk=$(node -p 'require("./node_modules/@opencode-ai/sdk/package.json").version')
tui=$(node -p "require('./${bin%/bin/opencode}/package.json').version")
echo "compat: $("$TANDEM_BIN" --version) against @opencode-ai/sdk $sdk and OpenCode's terminal UI $tui"
exec node --test --test-concurrency=1 "$@" *.test.mjs
