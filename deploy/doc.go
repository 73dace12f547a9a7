// Package deploy holds the checks on how tandem ships: the Dockerfile builds
// the same static binary as the README's build line, the image runs as a
// non-root user with no secret baked in, docker-compose.yml and
// deploy/docker-compose.cluster.yml are valid and wire the data volumes, workspace,
// password and healthcheck, and the image's healthcheck script
// (healthcheck.sh) really authenticates. These tests need no container
// engine; image-test.sh, which scripts/test.sh runs, builds the image with
// Podman, runs it and brings docker-compose.yml up for real.
// nginx.conf is the reverse-proxy configuration docs/deploying.md recommends;
// internal/door/routes/nginx_test.go runs it in a real nginx in front of the event streams.
// nginx-cluster.conf is the same for several nodes on one PostgreSQL, behind one address;
// test/integration/cluster_test.go runs it in a real nginx in front of three nodes.
package deploy
