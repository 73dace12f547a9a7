#!/usr/bin/env bash
# Builds the container image from the repository's own Dockerfile with Podman, runs it, and checks what a
# user relies on: health through the published port with the password from the environment, the image's
# HEALTHCHECK, a demo-model prompt running `git status` in the mounted workspace as uid 10001, sessions
# surviving a restart on the data volume, a clean stop on SIGTERM, no capabilities, and what the server
# says about its sandbox. Then it brings docker-compose.yml up for real through Podman's Docker-compatible
# socket (volume and healthcheck included) with the Ollama settings, prompts, and takes it down.
#
# No registry is reachable in CI, so the bases are made locally and passed as the Dockerfile's build
# arguments: a debootstrap'd Debian (the runtime base; the Dockerfile's Debian branch) and that Debian set
# up as the golang image is, with this machine's Go toolchain mounted in (the build stage). Both are kept
# for the next run.
#
# Run by scripts/test.sh. Under CI=true a missing tool fails; elsewhere the script says so and skips.
# Everything it starts (containers, volumes, networks, the podman service) is removed when it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

missing() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI must install it; see .ci/run)" >&2
    exit 1
  fi
  echo "SKIPPED: $1" >&2
  exit 0
}
for tool in go podman runc iptables debootstrap docker-compose curl jq git python3; do
  command -v "$tool" >/dev/null || missing "the container image test: $tool is missing (see .ci/run's apt-get line)"
done
[ "$(id -u)" = 0 ] || missing "the container image test: it runs Podman as root"

started=$(date +%s)
run_id="tandemci$$"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tandem-image.XXXXXX")
image=localhost/tandem:ci
containers=()
volumes=()
service_pid=""
ollama_pid=""
compose_up=""

say() { echo "== image: $*"; }

# logs prints what a failure needs to be understood: each container's state and log, the service's log.
logs() {
  for c in "${containers[@]}" $(compose ps -q 2>/dev/null || true); do
    echo "---- podman logs $c" >&2
    podman inspect --format 'state={{.State.Status}} exit={{.State.ExitCode}} health={{.State.Health.Status}}' "$c" >&2 || true
    podman logs --tail 80 "$c" >&2 || true
  done
  if [ -s "$tmp/service.log" ]; then
    echo "---- podman system service" >&2
    tail -n 40 "$tmp/service.log" >&2
  fi
}
fail() {
  echo "FAIL: $*" >&2
  logs
  exit 1
}

cleanup() {
  status=$?
  set +e
  if [ -n "$compose_up" ]; then
    compose down -v --remove-orphans >/dev/null 2>&1
  fi
  for c in "${containers[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1; done
  for v in "${volumes[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1; done
  if [ -n "$ollama_pid" ]; then
    kill "$ollama_pid" 2>/dev/null
    wait "$ollama_pid" 2>/dev/null
  fi
  if [ -n "$service_pid" ]; then
    kill "$service_pid" 2>/dev/null
    wait "$service_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
  if [ $status -eq 0 ]; then
    say "passed in $(($(date +%s) - started)) s"
  fi
  exit $status
}
trap cleanup EXIT

# Podman's default limits (nofile and nproc at 1048576) are above what CI machines let root raise them to,
# and crun fails there at any limit. runc works with nofile at the machine's hard limit and nproc at
# 32768 (on the project's machines nproc fails even at its own hard limit). CONTAINERS_CONF keeps this
# to the script (and the podman service it starts); nothing under /etc is changed.
at_most() { local v; v=$(ulimit -H "$1"); if [ "$v" = unlimited ] || [ "$v" -gt "$2" ]; then v=$2; fi; echo "$v"; }
nofile=$(at_most -n 1048576) nproc=$(at_most -u 32768)
ulimits=("nofile=$nofile:$nofile" "nproc=$nproc:$nproc")
cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["${ulimits[0]}", "${ulimits[1]}"]
[engine]
runtime = "runc"
[network]
network_backend = "netavark"
EOF
export CONTAINERS_CONF="$tmp/containers.conf"
# podman build's RUN steps do not read default_ulimits.
build_limits=(--ulimit "${ulimits[0]}" --ulimit "${ulimits[1]}")

# ---------------------------------------------------------------------------------------------------
say "local base images"
t0=$(date +%s)
debian=localhost/tandem-ci/debian:bookworm-slim
if podman image exists "$debian"; then
  echo "reusing $debian"
else
  # A minimal Debian, slimmed the way the official slim images are: no documentation, manual pages or
  # locales, now or from the packages the Dockerfile installs later, and apt keeps no downloaded package.
  rootfs="$tmp/rootfs"
  if ! debootstrap --variant=minbase bookworm "$rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$tmp/debootstrap.log" 2>&1; then
    tail -n 40 "$tmp/debootstrap.log" >&2
    fail "debootstrap bookworm"
  fi
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
  find "$rootfs/usr/share/doc" -mindepth 2 -not -name copyright -not -type d -delete
  rm -rf "$rootfs"/usr/share/{man,info,locale,lintian}/* "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*
  echo "debootstrap took $(($(date +%s) - t0)) s"
  tar -C "$rootfs" -c . | podman import -q --change 'CMD ["bash"]' - "$debian" >/dev/null
  rm -rf "$rootfs"
fi
goroot=$(go env GOROOT)
golang=localhost/tandem-ci/golang-mounted:1
if podman image exists "$golang"; then
  echo "reusing $golang"
else
  # The official golang image's layout (the toolchain in /usr/local/go, GOPATH=/go) and the CA
  # certificates to fetch modules with: this machine's, which trust what its egress trusts. The
  # toolchain itself is this machine's, mounted at /usr/local/go by the build below: copying its
  # quarter of a gigabyte into an image would cost CI a minute.
  mkdir "$tmp/golang-context"
  cat >"$tmp/golang-context/Containerfile" <<EOF
FROM $debian
RUN mkdir -p /etc/ssl/certs && cp /run/host-ca.crt /etc/ssl/certs/ca-certificates.crt
ENV GOPATH=/go GOTOOLCHAIN=local PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
EOF
  podman build -q --pull=never "${build_limits[@]}" -v "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}:/run/host-ca.crt:ro" \
    -t "$golang" "$tmp/golang-context" >/dev/null || fail "build $golang"
fi
echo "base images ready in $(($(date +%s) - t0)) s"

# ---------------------------------------------------------------------------------------------------
say "podman build from ./Dockerfile (RUNTIME_IMAGE=$debian)"
# --format docker keeps HEALTHCHECK (OCI images have no field for it). The host's Go toolchain, module
# cache and build cache are mounted into the build stage, so CI does not download or compile twice.
build_start=$(date +%s)
podman build --pull=never --format docker "${build_limits[@]}" \
  --build-arg GOLANG_IMAGE="$golang" --build-arg RUNTIME_IMAGE="$debian" \
  -v "$goroot:/usr/local/go:ro" -v "$(go env GOMODCACHE):/go/pkg/mod" -v "$(go env GOCACHE):/root/.cache/go-build" \
  -t "$image" . >"$tmp/build.log" 2>&1 || { tail -n 60 "$tmp/build.log" >&2; fail "podman build"; }
echo "built in $(($(date +%s) - build_start)) s"
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1000000 }'; }
size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$debian")
echo "runtime image size: $(mb "$size") (the Debian base $(mb "$base_size"), tandem and its tools $(mb $((size - base_size))))"

# ---------------------------------------------------------------------------------------------------
password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
# wait_healthy PORT: GET /global/health with the password answers within 60 s.
wait_healthy() {
  for _ in $(seq 120); do
    if curl -fsS -m 2 -o /dev/null -u "tandem:$password" "http://127.0.0.1:$1/global/health" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  fail "GET /global/health on port $1 did not answer within 60 s"
}
# api PORT METHOD PATH [BODY]: the JSON answer, failing loudly on an HTTP error.
api() {
  local out
  out=$(curl -sS -m 60 --fail-with-body -u "tandem:$password" -X "$2" "http://127.0.0.1:$1$3" \
    -H 'Content-Type: application/json' ${4:+-d "$4"}) || fail "$2 $3: $out"
  printf '%s' "$out"
}
# prompt_git_status PORT: a session whose demo-model prompt runs `git status` in /workspace, approved
# once as a person would; prints the session's ID.
prompt_git_status() {
  local sid body perm out
  sid=$(api "$1" POST /session '{}' | jq -r .id)
  body='{"model": {"providerID": "demo", "modelID": "demo"}, "parts": [{"type": "text", "text": "run: git status && id -u"}]}'
  api "$1" POST "/session/$sid/prompt_async" "$body" >/dev/null
  for _ in $(seq 150); do
    perm=$(api "$1" GET /permission | jq -r --arg s "$sid" '[.[] | select(.sessionID == $s)][0].id // empty')
    [ -n "$perm" ] && break
    sleep 0.2
  done
  [ -n "$perm" ] || fail "the demo model's bash call did not ask for permission within 30 s"
  api "$1" POST "/permission/$perm/reply" '{"reply": "once"}' >/dev/null
  for _ in $(seq 150); do
    api "$1" GET /session/status | jq -e --arg s "$sid" '.[$s] == null' >/dev/null && break
    sleep 0.2
  done
  out=$(api "$1" GET "/session/$sid/message" |
    jq -r '[.[].parts[] | select(.type == "tool" and .tool == "bash")][0].state | "\(.status)\n\(.output)"')
  if ! grep -q '^completed$' <<<"$out" || ! grep -q 'modified: *README.md' <<<"$out" || ! grep -qx 10001 <<<"$out"; then
    fail "the demo prompt's git status did not run as uid 10001 in the workspace; the bash tool's state:
$out"
  fi
  echo "$sid"
}

# The workspace: a git repository with one modified file, owned by the image's user.
workspace="$tmp/workspace"
mkdir -p "$workspace"
git -C "$workspace" init -q
echo hello >"$workspace/README.md"
git -C "$workspace" add README.md
git -C "$workspace" -c user.name=ci -c user.email=ci@example.invalid commit -qm init
echo changed >>"$workspace/README.md"
chown -R 10001:10001 "$workspace"

say "podman run"
name="$run_id-run"
volume="$run_id-data"
podman volume create "$volume" >/dev/null
volumes+=("$volume")
containers+=("$name")
# (Podman schedules healthchecks with systemd timers and says so on stderr where systemd is not running;
# the checks below run the healthcheck themselves.)
podman run -d --name "$name" -p 127.0.0.1::4096 -e TANDEM_SERVER_PASSWORD="$password" \
  -v "$volume:/data" -v "$workspace:/workspace" "$image" >/dev/null 2>"$tmp/run.log" || { cat "$tmp/run.log" >&2; fail "podman run"; }
port=$(podman port "$name" 4096/tcp | sed 's/.*://')
wait_healthy "$port"
echo "GET /global/health answers on 127.0.0.1:$port with the password"
code=$(curl -s -o /dev/null -w '%{http_code}' -u "tandem:wrong" "http://127.0.0.1:$port/session")
[ "$code" = 401 ] || fail "a wrong password got $code, want 401"
echo "a wrong password gets 401"

podman healthcheck run "$name" >/dev/null || fail "podman healthcheck run: unhealthy"
echo "the image's HEALTHCHECK passes"

status=$(podman exec "$name" cat /proc/1/status)
grep -Eq '^Uid:\s+10001\s+10001\s+10001\s+10001$' <<<"$status" || fail "the server is not uid 10001:
$(grep -E '^(Uid|Gid)' <<<"$status")"
for cap in CapInh CapPrm CapEff CapAmb; do
  grep -Eq "^$cap:\s+0+$" <<<"$status" || fail "the server has capabilities: $(grep "^$cap" <<<"$status")"
done
[ "$(podman inspect --format '{{.HostConfig.CapAdd}}' "$name")" = "[]" ] || fail "capabilities added"
echo "the server runs as uid 10001 with no capabilities (inheritable, permitted, effective, ambient all 0)"

session=$(prompt_git_status "$port")
echo "a demo-model prompt ran git status in the mounted workspace as uid 10001"

# Whether Landlock works in the image under Podman's default seccomp profile, as tandem itself finds
# at start: either answer is one the sandbox handles, but it must be reported.
sandbox=$(api "$port" GET /config | jq -c '.sandbox_status')
[ "$sandbox" != null ] || fail "GET /config does not report the sandbox"
echo "the sandbox in the container, as GET /config reports it: $sandbox"

podman restart "$name" >/dev/null 2>>"$tmp/run.log" || { cat "$tmp/run.log" >&2; fail "podman restart"; }
wait_healthy "$port"
api "$port" GET /session | jq -e --arg id "$session" 'any(.[]; .id == $id)' >/dev/null ||
  fail "session $session is gone after podman restart"
[ "$(api "$port" GET "/session/$session/message" | jq length)" -ge 2 ] || fail "session $session lost its messages"
echo "the session and its messages survive podman restart (data volume)"

grace=20
podman stop -t "$grace" "$name" >/dev/null 2>>"$tmp/run.log" || { cat "$tmp/run.log" >&2; fail "podman stop"; }
exit_code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$exit_code" = 0 ] || fail "on SIGTERM the server exited $exit_code (137 means it was killed after the ${grace} s grace period)"
echo "SIGTERM stops the server cleanly (exit 0) within its ${grace} s grace period"

# ---------------------------------------------------------------------------------------------------
say "docker-compose up through podman's Docker-compatible socket"
socket="$tmp/podman.sock"
podman system service --time=0 "unix://$socket" >"$tmp/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 100); do
  curl -fsS -m 1 --unix-socket "$socket" http://d/_ping >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS -m 1 --unix-socket "$socket" http://d/_ping >/dev/null 2>&1 || fail "podman system service did not answer on $socket"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
compose_port=$(free_port)
ollama_port=$(free_port)
: >"$tmp/empty.env"
# compose runs docker-compose on the repository's compose file with only the variables the README's
# recipe sets, Ollama being a stand-in the script serves on the host (deploy/testdata/fake-ollama.py):
# nothing from the caller's environment or a developer's .env leaks in.
compose() {
  env -i PATH="$PATH" HOME="$tmp" DOCKER_HOST="unix://$socket" \
    TANDEM_SERVER_PASSWORD="$password" TANDEM_WORKSPACE="$workspace" TANDEM_PORT="$compose_port" TANDEM_IMAGE="$image" \
    OPENAI_BASE_URL="http://host.containers.internal:$ollama_port/v1" OPENAI_API_KEY=ollama TANDEM_MODEL=openai/qwen2.5-coder:7b \
    docker-compose --project-directory . -f docker-compose.yml --env-file "$tmp/empty.env" -p "$run_id" "$@"
}
# TANDEM_IMAGE: compose runs the image just built from the same Dockerfile (through the socket the
# build could not mount the Go caches).

compose_up=1
compose up -d --no-build >"$tmp/compose.log" 2>&1 || { cat "$tmp/compose.log" >&2; fail "docker-compose up"; }
cid=$(compose ps -q tandem)
[ -n "$cid" ] || fail "docker-compose up started no tandem container"
wait_healthy "$compose_port"
echo "GET /global/health answers on 127.0.0.1:$compose_port"
podman healthcheck run "$cid" >/dev/null || fail "the compose service's healthcheck: unhealthy"
echo "the compose healthcheck passes"
podman volume exists "${run_id}_tandem-data" || fail "no volume ${run_id}_tandem-data"
podman inspect --format '{{range .Mounts}}{{.Name}}:{{.Destination}} {{end}}' "$cid" | grep -q "${run_id}_tandem-data:/data" ||
  fail "the data volume is not mounted at /data: $(podman inspect --format '{{json .Mounts}}' "$cid")"
echo "the named volume ${run_id}_tandem-data holds /data"
default=$(api "$compose_port" GET /config/providers | jq -r '.default.openai')
[ "$default" = qwen2.5-coder:7b ] || fail "TANDEM_MODEL did not reach the container: the openai default is $default"
echo "TANDEM_MODEL from the environment is the default model (openai/$default at OPENAI_BASE_URL)"
# The stand-in Ollama listens where host.containers.internal leads from the compose network: its gateway.
gateway=$(podman network inspect "${run_id}_default" --format '{{range .Subnets}}{{.Gateway}}{{end}}')
python3 deploy/testdata/fake-ollama.py "$gateway" "$ollama_port" "$tmp/ollama.log" 2>"$tmp/ollama.err" &
ollama_pid=$!
for _ in $(seq 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$gateway:$ollama_port/")" = 501 ] && break
  sleep 0.1
done
sid=$(api "$compose_port" POST /session '{}' | jq -r .id)
api "$compose_port" POST "/session/$sid/message" '{"parts": [{"type": "text", "text": "hello"}]}' >/dev/null
answer=$(api "$compose_port" GET "/session/$sid/message" | jq -r '.[-1].parts[] | select(.type == "text") | .text')
if [ "$answer" != "Ollama's qwen2.5-coder:7b says hello." ] || ! grep -qx 'qwen2.5-coder:7b' "$tmp/ollama.log" 2>/dev/null; then
  cat "$tmp/ollama.err" >&2
  fail "the prompt did not reach Ollama's qwen2.5-coder:7b; the answer: $answer; Ollama was asked for: $(cat "$tmp/ollama.log" 2>/dev/null)"
fi
echo "a prompt went to the model TANDEM_MODEL names, at OPENAI_BASE_URL (a stand-in Ollama)"
prompt_git_status "$compose_port" >/dev/null
echo "a demo-model prompt ran git status through compose"
compose down -v >"$tmp/compose.log" 2>&1 || { cat "$tmp/compose.log" >&2; fail "docker-compose down -v"; }
compose_up=""
! podman volume exists "${run_id}_tandem-data" || fail "docker-compose down -v left the volume"
echo "docker-compose down -v removed the container and the volume"
