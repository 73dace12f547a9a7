#!/usr/bin/env bash
# Rebuilds the UI from its sources and fails when the result differs from the
# committed web/dist, so the embedded UI is always what the sources say.
# Set SKIP_NPM_CI=1 to reuse an existing node_modules.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${SKIP_NPM_CI:-}" != 1 ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npx vite build --outDir "$tmp/dist" --emptyOutDir --logLevel warn
if ! diff -r dist "$tmp/dist"; then
  echo "web/dist is stale: run 'npm ci && npm run build' in web/ and commit web/dist" >&2
  exit 1
fi
echo "web/dist matches its sources"
