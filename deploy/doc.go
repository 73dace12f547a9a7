// Package deploy holds the checks on how tandem ships: the Dockerfile builds
// the same static binary as the README's build line, the image runs as a
// non-root user with no secret baked in, docker-compose.yml is valid and
// wires the data volume, workspace, password and healthcheck, and the
// image's healthcheck script (healthcheck.sh) really authenticates.
// No Docker engine is needed; the tests are in the _test.go files.
// nginx.conf is the reverse-proxy configuration the README recommends;
// routes/nginx_test.go runs it in a real nginx in front of the event streams.
package deploy
