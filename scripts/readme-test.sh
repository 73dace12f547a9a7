#!/usr/bin/env bash
# Runs README.md the way a newcomer would: every ```sh block, in order, in one bash session
# (`set -euo pipefail`), against the built binary, which is on PATH as `tandem`. A block is skipped
# only when the line before its fence (blank lines aside) is `<!-- not run: REASON -->`; the skips
# and their reasons are printed. The session gets a throwaway HOME and working directory, no
# provider keys (so the offline demo model answers), and a time limit; every process it starts is
# killed at the end.
#
# Usage: bash scripts/readme-test.sh [README]     (TANDEM_BIN names the binary; default bin/tandem)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
readme=$(realpath "${1:-$repo/README.md}")
bin=$(realpath "${TANDEM_BIN:-$repo/bin/tandem}")
limit=${README_TEST_SECONDS:-120}

[ -x "$bin" ] || { echo "readme-test: no tandem binary at $bin (go build -o bin/tandem ./cmd/tandem)" >&2; exit 2; }
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "readme-test: $tool is missing (the README lists it as a requirement)" >&2; exit 2; }
done

sandbox=$(mktemp -d)
mkdir -p "$sandbox/bin" "$sandbox/home" "$sandbox/work"
ln -s "$bin" "$sandbox/bin/tandem"
script="$sandbox/readme.sh"

# The blocks, each announced with its line, so a failure names the place in the README.
awk -v name="$(basename "$readme")" '
  function reset() { marked = 0; reason = "" }
  !inblock && /^<!-- not run: .*-->[[:space:]]*$/ { marked = 1; reason = $0; sub(/^<!-- not run: */, "", reason); sub(/ *-->[[:space:]]*$/, "", reason); next }
  !inblock && /^```sh[[:space:]]*$/ {
    inblock = 1; run = !marked
    if (run) printf "printf %s >&2\n", "\"\\n== " name ":" NR "\\n\""
    else printf "skipped %s:%d: %s\n", name, NR, reason > "/dev/stderr"
    reset(); next
  }
  inblock && /^```[[:space:]]*$/ { inblock = 0; next }
  inblock { if (run) print; next }
  /^[[:space:]]*$/ { next }
  { reset() }
' "$readme" > "$script"

cleanup() {
  if [ -n "${leader:-}" ]; then
    kill -TERM -- "-$leader" 2>/dev/null || true
    sleep 0.5
    kill -KILL -- "-$leader" 2>/dev/null || true
  fi
  [ -z "${watchdog:-}" ] || kill "$watchdog" 2>/dev/null || true
  rm -rf "$sandbox"
}
trap cleanup EXIT

# A process group of its own, so the servers and streams the README starts in the background end
# with it.
cd "$sandbox/work"
env -u TANDEM_SERVER_PASSWORD -u TANDEM_SERVER_USERNAME -u TANDEM_MODEL -u TANDEM_DATA_DIR \
    -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
    -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME -u XDG_CACHE_HOME \
    HOME="$sandbox/home" PATH="$sandbox/bin:$PATH" \
    setsid bash -euo pipefail "$script" &
leader=$!
( sleep "$limit"; echo "readme-test: still running after $limit s; stopping it" >&2; kill -TERM -- "-$leader" 2>/dev/null ) &
watchdog=$!
if wait "$leader"; then
  echo "readme-test: every runnable block of $(basename "$readme") passed"
else
  rc=$?
  echo "readme-test: FAILED (exit $rc) in the block announced last above" >&2
  exit "$rc"
fi
