//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	creackpty "github.com/creack/pty"
)

// ptyScript writes base64 text (zeros bytes of zeros, in 76-column lines) once it has read one byte
// in raw mode, so timing starts with the output and not with the process.
func ptyScript(zeros int) []string {
	return []string{"-c", "stty raw -echo; head -c 1 >/dev/null; head -c " + strconv.Itoa(zeros) + " /dev/zero | base64"}
}

// ptyOutput is how many bytes ptyScript writes: base64 of zeros, a newline after every 76 columns
// and at the end (raw mode: no carriage returns added).
func ptyOutput(zeros int) int64 {
	b64 := int64((zeros + 2) / 3 * 4)
	return b64 + (b64+75)/76
}

// ptyLocal is the ceiling: the same script on a PTY this program reads directly. It returns MB/s.
func ptyLocal(zeros int) (float64, error) {
	cmd := exec.Command("/bin/sh", ptyScript(zeros)...)
	master, err := creackpty.Start(cmd)
	if err != nil {
		return 0, err
	}
	defer master.Close()
	buf := make([]byte, 64<<10)
	start := time.Now()
	if _, err := master.Write([]byte("g")); err != nil {
		return 0, err
	}
	var n int64
	for {
		m, err := master.Read(buf)
		n += int64(m)
		if err != nil {
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
				return 0, err
			}
			break
		}
	}
	elapsed := time.Since(start)
	_ = cmd.Wait()
	if want := ptyOutput(zeros); n < want {
		return 0, fmt.Errorf("local PTY: read %d bytes, want %d", n, want)
	}
	return float64(n) / elapsed.Seconds() / 1e6, nil
}

// ptyWebSocket runs the script in a PTY of the server (POST /pty), reads it through
// GET /pty/{id}/connect and returns MB/s from the keystroke that starts the output to the last byte.
func ptyWebSocket(ctx context.Context, t *target, zeros int) (float64, error) {
	args := ptyScript(zeros)
	body, _ := json.Marshal(map[string]any{"command": "/bin/sh", "args": args, "cwd": t.project})
	var info struct {
		ID string `json:"id"`
	}
	if err := t.callJSON(ctx, http.MethodPost, "/pty", string(body), &info); err != nil {
		return 0, err
	}
	defer func() { _, _ = t.call(ctx, http.MethodDelete, "/pty/"+info.ID, "", http.StatusOK) }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	h := http.Header{}
	if t.auth != "" {
		h.Set("Authorization", t.auth)
	}
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(t.base, "http")+"/pty/"+info.ID+"/connect",
		&websocket.DialOptions{HTTPHeader: h, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return 0, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	want := ptyOutput(zeros)
	buf := make([]byte, 64<<10)
	start := time.Now()
	if err := conn.Write(ctx, websocket.MessageText, []byte("g")); err != nil {
		return 0, err
	}
	var n int64
	last := start
	for n < want {
		_, r, err := conn.Reader(ctx)
		if err != nil {
			return 0, fmt.Errorf("after %d of %d bytes: %w", n, want, err)
		}
		m, err := io.CopyBuffer(io.Discard, r, buf)
		if err != nil {
			return 0, err
		}
		n += m
		last = time.Now()
	}
	return float64(n) / last.Sub(start).Seconds() / 1e6, nil
}
