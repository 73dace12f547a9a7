#!/usr/bin/env bash
# The GET /session?limit=10 budget (docs/benchmarks.md, Budgets): `tandem serve` with 20 sessions
# and the harness's limit server, `wrk -t2 -c4` on each in turn for ROUNDS rounds (the first server
# alternates), each server idle while the other is measured. The limit answers with tandem's own
# answer (the same 3 KB, read once before the runs), so that the gap is tandem's work and not a
# longer body; LIMIT_BODY=2k gives it the harness's fixed 2 KB instead. A line per run: the rate,
# the server's own CPU time per request (from /proc/PID/stat around the run, so wrk's share and
# other work on the machine are left out) and the load average.
#
# Usage: bash scripts/list-rate.sh [ROUNDS] [SECONDS]   (default 5 rounds of 5 s; needs wrk, Linux)
set -euo pipefail
rounds=${1:-5} secs=${2:-5}
case ${LIMIT_BODY:-same} in same | 2k) ;; *) echo "LIMIT_BODY is same or 2k, not $LIMIT_BODY" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/tandem" "$repo/cmd/tandem"
go build -o "$work/bench" "$repo/test/bench"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tport=$(port) lport=$(port)
HOME=$work XDG_CONFIG_HOME=$work/.config XDG_DATA_HOME=$work/.local/share XDG_STATE_HOME=$work/.local/state \
	XDG_CACHE_HOME=$work/.cache TANDEM_SERVER_PASSWORD=bench \
	"$work/tandem" serve --port "$tport" --dir "$work" >"$work/tandem.log" 2>&1 &
pids+=($!)
tpid=$!
ready() { for _ in $(seq 100); do curl -sf -u tandem:bench "$1" >/dev/null && return; sleep 0.1; done; }
ready "http://127.0.0.1:$tport/global/health"
for i in $(seq 20); do
	curl -sf -u tandem:bench -H 'Content-Type: application/json' -d "{\"title\":\"bench $i\"}" \
		"http://127.0.0.1:$tport/session" >/dev/null
done
curl -sf -u tandem:bench -o "$work/answer.json" "http://127.0.0.1:$tport/session?limit=10"
body=()
[ "${LIMIT_BODY:-same}" = 2k ] || body=(-limit-body "$work/answer.json")
"$work/bench" -serve-limit "127.0.0.1:$lport" "${body[@]}" >"$work/limit.log" 2>&1 &
pids+=($!)
lpid=$!
ready "http://127.0.0.1:$lport/global/health"
echo "tandem answers $(wc -c <"$work/answer.json") bytes, the limit $(curl -sf "http://127.0.0.1:$lport/session?limit=10" | wc -c)"
auth="Authorization: Basic $(printf tandem:bench | base64)"
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # name pid port [header]
	local before after out reqs
	before=$(cpu "$2")
	out=$(wrk -t2 -c4 -d"${secs}s" ${4:+-H "$4"} "http://127.0.0.1:$3/session?limit=10")
	after=$(cpu "$2")
	if grep -q Non-2xx <<<"$out"; then echo "$1 answered errors" >&2; exit 1; fi
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	printf '%s %-6s %8s req/s %6.1f µs CPU/request load %s\n' "$i" "$1" "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
		"$(bc -l <<<"($after - $before) * 1000000 / $ticks / $reqs")" "$(cut -d' ' -f1 /proc/loadavg)"
}
for i in $(seq "$rounds"); do
	if ((i % 2)); then
		run limit "$lpid" "$lport"
		run tandem "$tpid" "$tport" "$auth"
	else
		run tandem "$tpid" "$tport" "$auth"
		run limit "$lpid" "$lport"
	fi
done
