package snapshot_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/infra/snapshot"
)

// BenchmarkTrack measures one step boundary's snapshot on a project of 10,000 files in 100
// directories, one file changed since the last snapshot (what a step that edits a file costs);
// first-track-ms is the first snapshot of the project, which writes every file into the shadow
// repository.
func BenchmarkTrack(b *testing.B) {
	dir := b.TempDir()
	for i := range 10000 {
		write(b, dir, filepath.Join(fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	s := snapshot.New(snapshot.Options{Dir: filepath.Join(b.TempDir(), "snapshot"), Timeout: time.Minute, FirstWait: time.Hour})
	b.Cleanup(s.Close)
	ctx := context.Background()
	start := time.Now()
	if h, err := s.Track(ctx, dir); err != nil || h == "" {
		b.Fatalf("first Track: %q %v", h, err)
	}
	first := time.Since(start)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		write(b, dir, "d00/f00000.txt", fmt.Sprintf("changed %d\n", i))
		if h, err := s.Track(ctx, dir); err != nil || h == "" {
			b.Fatalf("Track: %q %v", h, err)
		}
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-track-ms")
}
