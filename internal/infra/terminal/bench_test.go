package terminal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOutput measures how fast output travels from a program through the terminal to a viewer,
// without any network in between (the WebSocket benchmark is in routes).
func BenchmarkOutput(b *testing.B) {
	m := NewManager(Options{})
	defer m.Close()
	const size = 16 << 20
	file := filepath.Join(b.TempDir(), "big")
	if err := os.WriteFile(file, bytes.Repeat([]byte("0123456789abcdef"), size/16), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for range b.N {
		info, err := m.Create(context.Background(), CreateInput{Command: "/bin/sh", Args: []string{"-c", `stty raw -echo; head -c 1 >/dev/null; cat "$0"`, file}, Directory: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		v, _, err := m.Attach(info.ID, FromEnd)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Write(context.Background(), info.ID, []byte("g")); err != nil {
			b.Fatal(err)
		}
		n := 0
		for chunk := range v.Output() {
			n += len(chunk)
		}
		if n < size {
			b.Fatalf("got %d bytes", n)
		}
		_ = m.Remove(info.ID)
	}
}
