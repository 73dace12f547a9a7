#!/bin/sh
# tandem-healthcheck: exits 0 when the tandem server in this container answers
# GET /global/health. It sends the server's credentials (the container has
# them in its environment) so it keeps working if health is ever protected,
# as it is in OpenCode. Written for BusyBox (Alpine) and GNU tools alike: sh,
# printf, base64, tr, wget.
# No wget -T: Debian's BusyBox 1.35 wget crashes with it, and Docker's
# healthcheck timeout already bounds the run.
set -eu
url="${TANDEM_HEALTH_URL:-http://127.0.0.1:4096/global/health}"
credentials=$(printf '%s:%s' "${TANDEM_SERVER_USERNAME:-tandem}" "${TANDEM_SERVER_PASSWORD:-}" | base64 | tr -d '\n')
exec wget -q -O /dev/null --header "Authorization: Basic $credentials" "$url"
