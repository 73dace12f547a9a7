# tandem in a container: a static binary on a small Alpine image that has what
# the agent's tools call (a shell, git, ripgrep). Build: docker build -t tandem .
# Run it with docker-compose (docker-compose.yml) or see the README.
ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so source edits reuse the downloaded-modules layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same build line as the README's; deploy/dockerfile_test.go runs it.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tandem ./cmd/tandem

FROM alpine:${ALPINE_VERSION}
COPY --from=build /out/tandem /usr/local/bin/tandem
COPY deploy/healthcheck.sh /usr/local/bin/tandem-healthcheck
# /data and /home/tandem are world-writable (sticky, like /tmp) so that
# docker-compose can run the server as the uid that owns the mounted project.
# Every directory counts as safe for git, for the same reason.
RUN apk add --no-cache bash ca-certificates git ripgrep \
 && adduser -D -u 10001 -h /home/tandem tandem \
 && mkdir -p /data /workspace \
 && chown tandem:tandem /data /workspace \
 && chmod 1777 /data /home/tandem \
 && chmod 0755 /usr/local/bin/tandem-healthcheck \
 && git config --system --add safe.directory '*'
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
