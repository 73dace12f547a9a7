#!/usr/bin/env bash
# The GET /session?limit=10 budget (docs/benchmarks.md, Budgets): `tandem serve` with 20 sessions
# and the harness's limit server, `wrk -t2 -c4` on each in turn for ROUNDS rounds (the first server
# alternates), each server idle while the other is measured. The limit replays tandem's own answer,
# recorded once before the runs: the same 3 KB body and the same header lines (all but Date and
# Content-Length, which it makes itself), so that the gap is tandem's work and not a longer answer.
# LIMIT=body replays the body only, with the limit's own Content-Type; LIMIT=2k sends the harness's
# fixed 2 KB instead. A line per run: the rate, the server's own CPU time per request (from
# /proc/PID/stat around the run, so wrk's share and other work on the machine are left out) and
# the load average; at the end, the median of tandem's rate as a share of the limit's.
#
# Usage: [LIMIT=answer|body|2k] bash scripts/list-rate.sh [ROUNDS] [SECONDS]
#        (default 5 rounds of 5 s; needs wrk, Linux)
set -euo pipefail
rounds=${1:-5} secs=${2:-5}
limit=${LIMIT:-answer}
case $limit in answer | body | 2k) ;; *) echo "LIMIT is answer, body or 2k, not $limit" >&2; exit 2 ;; esac
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
curl -sf -u tandem:bench -D "$work/answer.head" -o "$work/answer.json" "http://127.0.0.1:$tport/session?limit=10"
replay=()
case $limit in
answer) replay=(-limit-body "$work/answer.json" -limit-head "$work/answer.head") ;;
body) replay=(-limit-body "$work/answer.json") ;;
esac
"$work/bench" -serve-limit "127.0.0.1:$lport" "${replay[@]}" >"$work/limit.log" 2>&1 &
pids+=($!)
lpid=$!
ready "http://127.0.0.1:$lport/global/health"
auth="Authorization: Basic $(printf tandem:bench | base64)"
lines() { curl -sf -D - -o "$work/$1.json" -H "$auth" "$2" | grep -c ':'; }
echo "tandem answers $(lines t "http://127.0.0.1:$tport/session?limit=10") header lines and $(wc -c <"$work/t.json") bytes," \
	"the limit $(lines l "http://127.0.0.1:$lport/session?limit=10") and $(wc -c <"$work/l.json")"
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # name pid port; both get the same request, credentials included
	local before after out reqs
	before=$(cpu "$2")
	out=$(wrk -t2 -c4 -d"${secs}s" -H "$auth" "http://127.0.0.1:$3/session?limit=10")
	after=$(cpu "$2")
	if grep -q Non-2xx <<<"$out"; then echo "$1 answered errors" >&2; exit 1; fi
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	printf '%s %-6s %8s req/s %6.1f µs CPU/request load %s\n' "$i" "$1" "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
		"$(bc -l <<<"($after - $before) * 1000000 / $ticks / $reqs")" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$work/runs"
}
for i in $(seq "$rounds"); do
	if ((i % 2)); then
		run limit "$lpid" "$lport"
		run tandem "$tpid" "$tport"
	else
		run tandem "$tpid" "$tport"
		run limit "$lpid" "$lport"
	fi
done
# Per round: tandem's rate as a share of the limit's, and the limit's CPU per request as a share of
# tandem's; the medians over the rounds.
summary() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %% (%.0f–%.0f %%)", m, v[1], v[NR] }'; }
ratios() { awk -v f="$1" '$2 == "limit" { l[$1] = $f } $2 == "tandem" { t[$1] = $f } END { for (i in t) print (f == 3 ? 100 * t[i] / l[i] : 100 * l[i] / t[i]) }' "$work/runs"; }
echo "tandem's rate, median over $rounds rounds: $(ratios 3 | summary) of the limit's;" \
	"by CPU time per request: $(ratios 5 | summary)"
