#!/usr/bin/env bash
# Runs the documentation the way a newcomer would: README.md, then every docs/*.md, each in a fresh
# throwaway HOME and working directory of its own. A page under docs/ continues the README's
# walkthrough (its text says so), so it runs after the README's blocks, in the same bash session:
# the walkthrough's server and variables, then the page's blocks, and nothing any other page did.
# Every ```sh block runs, in order, in one bash session (`set -euo pipefail`), against the built
# binary, which is on PATH as `tandem`. A block is skipped only when the line before its fence
# (blank lines aside) is `<!-- not run: REASON -->`; the skips and their reasons are printed. Each
# file's session gets no provider keys (so the offline demo model answers) and a time limit; every
# process it starts is killed before the next file runs. A page with no runnable block is not run,
# and a page the README's map does not link fails the test.
#
# Usage: bash scripts/readme-test.sh [FILE.md ...]   (default: README.md and docs/*.md;
#        TANDEM_BIN names the binary, default bin/tandem; README_TEST_SECONDS the limit per file, 120)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
readme="$repo/README.md"
bin=$(realpath "${TANDEM_BIN:-$repo/bin/tandem}")
limit=${README_TEST_SECONDS:-120}

[ -x "$bin" ] || { echo "readme-test: no tandem binary at $bin (go build -o bin/tandem ./cmd/tandem)" >&2; exit 2; }
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "readme-test: $tool is missing (the README lists it as a requirement)" >&2; exit 2; }
done

if [ "$#" -gt 0 ]; then
  files=()
  for f in "$@"; do files+=("$(realpath "$f")"); done
else
  files=("$readme" "$repo"/docs/*.md)
fi

# blocks FILE NAME QUIET prints FILE's runnable ```sh blocks as one script, each announced with its
# place (NAME:LINE), so a failure names it; QUIET=1 leaves out the list of skipped blocks.
blocks() {
  awk -v name="$2" -v quiet="$3" '
    function reset() { marked = 0; reason = "" }
    !inblock && /^<!-- not run: .*-->[[:space:]]*$/ { marked = 1; reason = $0; sub(/^<!-- not run: */, "", reason); sub(/ *-->[[:space:]]*$/, "", reason); next }
    !inblock && /^```sh[[:space:]]*$/ {
      inblock = 1; run = !marked
      if (run) printf "printf %s >&2\n", "\"\\n== " name ":" NR "\\n\""
      else if (!quiet) printf "skipped %s:%d: %s\n", name, NR, reason > "/dev/stderr"
      reset(); next
    }
    inblock && /^```[[:space:]]*$/ { inblock = 0; next }
    inblock { if (run) print; next }
    /^[[:space:]]*$/ { next }
    { reset() }
  ' "$1"
}

# run FILE runs FILE's blocks (after the README's, for a page under docs/) in a sandbox of its own,
# and kills everything they started.
run() {
  local file=$1 name sandbox own watchdog rc=0
  name=$(realpath --relative-to="$repo" "$file")
  sandbox=$(mktemp -d)
  mkdir -p "$sandbox/bin" "$sandbox/home" "$sandbox/work"
  ln -s "$bin" "$sandbox/bin/tandem"
  own=$(blocks "$file" "$name" 0)
  if [ -z "$own" ]; then
    echo "readme-test: $name has no runnable block"
    rm -rf "$sandbox"
    return 0
  fi
  {
    if [ "$file" != "$readme" ]; then blocks "$readme" README.md 1; fi
    printf '%s\n' "$own"
  } > "$sandbox/script.sh"
  # A process group of its own, so the servers and streams the blocks start in the background end
  # with it.
  (
    cd "$sandbox/work"
    exec env -u TANDEM_SERVER_PASSWORD -u TANDEM_SERVER_USERNAME -u TANDEM_MODEL -u TANDEM_DATA_DIR \
      -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
      -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME -u XDG_CACHE_HOME \
      HOME="$sandbox/home" PATH="$sandbox/bin:$PATH" \
      setsid bash -euo pipefail "$sandbox/script.sh"
  ) &
  leader=$!
  # The watchdog's sleep ends with it, so that nothing holds the script's output open.
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "$limit" & nap=$!
    wait "$nap"
    echo "readme-test: $name still running after $limit s; stopping it" >&2
    kill -TERM -- "-$leader" 2>/dev/null
  ) &
  watchdog=$!
  wait "$leader" || rc=$?
  kill -TERM -- "-$leader" 2>/dev/null || true
  sleep 0.5
  kill -KILL -- "-$leader" 2>/dev/null || true
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  leader=
  rm -rf "$sandbox"
  if [ "$rc" = 0 ]; then
    echo "readme-test: every runnable block of $name passed"
  else
    echo "readme-test: $name FAILED (exit $rc) in the block announced last above" >&2
  fi
  return "$rc"
}

# Every page is reachable from the README's map, so a reader who starts there finds it.
for f in "$repo"/docs/*.md; do
  grep -q "(docs/$(basename "$f")[)#]" "$readme" || { echo "readme-test: docs/$(basename "$f") is not linked from README.md's map (Where to read on)" >&2; exit 1; }
done

leader=
trap '[ -z "$leader" ] || kill -KILL -- "-$leader" 2>/dev/null || true' EXIT
failed=()
for f in "${files[@]}"; do
  run "$f" || failed+=("$(realpath --relative-to="$repo" "$f")")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "readme-test: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "readme-test: ${#files[@]} files passed"
