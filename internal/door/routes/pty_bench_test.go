package routes_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	creackpty "github.com/creack/pty"
)

// ptyStreamMin is a lower bound of each workload's output.
const ptyStreamMin = 20_000_000

// ptyStreamWorkloads write about 20 MB once they have read one byte, so that timing starts with the
// output and not with the process: base64 text in 76-column lines (15,000,000 zero bytes) made by a
// pipeline, and the same text cat'ed from a file, which leaves the terminal as the only limit.
func ptyStreamWorkloads(b *testing.B) map[string][]string {
	b.Helper()
	file := filepath.Join(b.TempDir(), "big")
	text := base64.StdEncoding.EncodeToString(make([]byte, 15_000_000))
	var sb strings.Builder
	for len(text) > 76 {
		sb.WriteString(text[:76] + "\n")
		text = text[76:]
	}
	sb.WriteString(text + "\n")
	if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	const wait = `stty raw -echo; head -c 1 >/dev/null; `
	return map[string][]string{
		"base64": {"-c", wait + `head -c 15000000 /dev/zero | base64`},
		"cat":    {"-c", wait + `cat "$0"`, file},
	}
}

// BenchmarkPTYStreamWebSocket measures PTY output throughput end to end: the script's output goes
// through the terminal, the PTY manager, the real router and a WebSocket on loopback to a real
// WebSocket client that reads every frame. MB/s counts the bytes the client received.
func BenchmarkPTYStreamWebSocket(b *testing.B) {
	s := startPTYServer(b, ptyServerOptions{})
	for _, name := range []string{"base64", "cat"} {
		args := ptyStreamWorkloads(b)[name]
		b.Run(name, func(b *testing.B) { ptyStreamWebSocket(b, s, args) })
	}
}

func ptyStreamWebSocket(b *testing.B, s *ptyServer, args []string) {
	buf := make([]byte, 64<<10)
	var total int64
	var elapsed, cpu time.Duration
	for range b.N {
		info := s.create(b, "/bin/sh", args...)
		v := s.dial(b, info.ID, ptyDialOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), ptyWait)
		start, cpu0 := time.Now(), ptyCPUTime(b)
		v.send("g")
		n := int64(0)
		for {
			typ, r, err := v.conn.Reader(ctx)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					b.Fatalf("closed with %v after %d bytes", err, n)
				}
				break
			}
			if typ != websocket.MessageText {
				b.Fatalf("live output in a %v frame", typ)
			}
			m, err := io.CopyBuffer(io.Discard, r, buf)
			if err != nil {
				b.Fatal(err)
			}
			n += m
		}
		elapsed += time.Since(start)
		cpu += ptyCPUTime(b) - cpu0
		cancel()
		if n < ptyStreamMin {
			b.Fatalf("received %d bytes, want at least %d", n, ptyStreamMin)
		}
		total += n
		_ = s.m.Remove(info.ID)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds()/1e6, "MB/s")
	b.ReportMetric(cpu.Seconds()*1e3/(float64(total)/1e6), "cpu-ms/MB")
}

// BenchmarkPTYStreamLocal is the ceiling of BenchmarkPTYStreamWebSocket: the same script on a local
// PTY whose master side this process reads directly, with nothing in between.
func BenchmarkPTYStreamLocal(b *testing.B) {
	for _, name := range []string{"base64", "cat"} {
		args := ptyStreamWorkloads(b)[name]
		b.Run(name, func(b *testing.B) { ptyStreamLocal(b, args) })
	}
}

func ptyStreamLocal(b *testing.B, args []string) {
	buf := make([]byte, 64<<10)
	var total int64
	var elapsed, cpu time.Duration
	for range b.N {
		cmd := exec.Command("/bin/sh", args...)
		master, err := creackpty.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), ptyCPUTime(b)
		if _, err := master.Write([]byte("g")); err != nil {
			b.Fatal(err)
		}
		n := int64(0)
		for {
			m, err := master.Read(buf)
			n += int64(m)
			if err != nil {
				if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
		}
		elapsed += time.Since(start)
		cpu += ptyCPUTime(b) - cpu0
		_ = master.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		if n < ptyStreamMin {
			b.Fatalf("read %d bytes, want at least %d", n, ptyStreamMin)
		}
		total += n
	}
	b.ReportMetric(float64(total)/elapsed.Seconds()/1e6, "MB/s")
	b.ReportMetric(cpu.Seconds()*1e3/(float64(total)/1e6), "cpu-ms/MB")
}

// ptyCPUTime is the CPU time this process has used (user and system): on a busy machine, CPU per
// megabyte moves much less than MB/s.
func ptyCPUTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
