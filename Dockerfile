# tandem in a container: the static binary on a small image that has what the
# agent's tools call (a shell, git, ripgrep). Build: docker build -t tandem .
# Run it with docker-compose (docker-compose.yml) or see the README.
#
# The runtime base is Alpine, for the people who run the image: tandem is one
# static binary, so musl costs it nothing, and the image stays small. Alpine's
# base is under 10 MB and its git pulls in few libraries; the same image on
# Debian slim measures about 200 MB (deploy/image-test.sh prints it). Agents
# that run glibc-only toolchains can have Debian:
#   docker build --build-arg RUNTIME_IMAGE=debian:bookworm-slim -t tandem .
# Both bases are build arguments so that a machine with no registry can build
# this same file from local images (deploy/image-test.sh does, in CI).
ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22
ARG GOLANG_IMAGE=golang:${GO_VERSION}
ARG RUNTIME_IMAGE=alpine:${ALPINE_VERSION}

FROM ${GOLANG_IMAGE} AS build
WORKDIR /src
# Modules first, so source edits reuse the downloaded-modules layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same build line as the README's; deploy/dockerfile_test.go runs it.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tandem ./cmd/tandem

FROM ${RUNTIME_IMAGE}
COPY deploy/healthcheck.sh /usr/local/bin/tandem-healthcheck
# The tools first and the binary last, so a rebuild after a code change
# reuses the packages layer.
# /data and /home/tandem are world-writable (sticky, like /tmp) so that
# docker-compose can run the server as the uid that owns the mounted project.
# Every directory counts as safe for git, for the same reason.
RUN if command -v apk >/dev/null; then \
      apk add --no-cache bash ca-certificates git ripgrep \
      && adduser -D -u 10001 -h /home/tandem tandem; \
    else \
      apt-get update \
      && apt-get install -y --no-install-recommends bash ca-certificates git ripgrep wget \
      && rm -rf /var/lib/apt/lists/* \
      && useradd -u 10001 -U -m -d /home/tandem -s /bin/sh tandem; \
    fi \
 && mkdir -p /data /workspace \
 && chown tandem:tandem /data /workspace \
 && chmod 1777 /data /home/tandem \
 && chmod 0755 /usr/local/bin/tandem-healthcheck \
 && git config --system --add safe.directory '*'
COPY --from=build /out/tandem /usr/local/bin/tandem
# The database lives under $XDG_DATA_HOME/tandem, on the /data volume.
ENV XDG_DATA_HOME=/data HOME=/home/tandem
VOLUME /data
WORKDIR /workspace
USER tandem
EXPOSE 4096
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 CMD ["tandem-healthcheck"]
# A non-loopback bind refuses to start without TANDEM_SERVER_PASSWORD, which
# comes from the environment at run time and is never part of the image.
CMD ["tandem", "serve", "--hostname", "0.0.0.0", "--port", "4096", "--dir", "/workspace"]
