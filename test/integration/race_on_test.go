//go:build race

package integration

// raceDetector is true in `go test -race` builds, where everything runs several times slower.
const raceDetector = true
