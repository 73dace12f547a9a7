//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real binary as a separate process: started, asked, stopped.

// binaryServer is the real binary serving on loopback.
type binaryServer struct {
	pid    int
	url    string
	client *http.Client
	stop   func() // SIGTERM, and a kill if it has not exited 15 s later; idempotent
}

// binaryOptions is how startBinaryServer starts the binary.
type binaryOptions struct {
	env        map[string]string // added to a clean environment
	stderr     io.Writer         // its log and the Go runtime's traces; nil discards them
	userConfig string            // the user's tandem.json, when not empty
	// extraFiles are left open in the server as descriptors 3, 4, …, as a supervisor or a shell's
	// `exec 3>…` may leave them.
	extraFiles []*os.File
}

// startBinaryServer runs `tandem serve` from bin as o says and stops it when tb ends.
func startBinaryServer(tb testing.TB, bin string, o binaryOptions) *binaryServer {
	tb.Helper()
	root := tb.TempDir()
	project, data := filepath.Join(root, "project"), filepath.Join(root, "data")
	for _, d := range []string{project, data, filepath.Join(root, "tandem")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if o.userConfig != "" {
		if err := os.WriteFile(filepath.Join(root, "tandem", "tandem.json"), []byte(o.userConfig), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "serve", "--port", "0", "--data-dir", data, "--dir", project, "--print-logs")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "XDG_CONFIG_HOME=" + root, "XDG_STATE_HOME=" + data,
		"TANDEM_SERVER_PASSWORD=growth", "TANDEM_SERVER_USERNAME=tandem"}
	for k, v := range o.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = o.stderr
	cmd.ExtraFiles = o.extraFiles
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() { once.Do(func() { terminate(cmd.Process, exited) }) }
	tb.Cleanup(stop)
	url := awaitURL(tb, stdout, exited)
	return &binaryServer{pid: cmd.Process.Pid, url: url, client: &http.Client{Timeout: time.Minute}, stop: stop}
}

// awaitURL reads a starting `tandem serve --print-logs` from its stdout until it says where it
// listens, and returns that URL without the trailing slash. It fails tb if the server exits first
// (exited closes; nil when the caller does not watch for that) or says nothing within 20 s.
func awaitURL(tb testing.TB, stdout io.Reader, exited <-chan struct{}) string {
	tb.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), " listening on "); ok {
				select {
				case found <- strings.TrimSuffix(url, "/"):
				default:
				}
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-exited:
		tb.Fatal("the server exited before it listened")
	case <-time.After(20 * time.Second):
		tb.Fatal("the server did not print its URL within 20s")
	}
	return ""
}

// terminate stops a server gracefully: SIGTERM, and a kill if it has not exited (closed exited)
// 15 s later.
func terminate(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// do sends a request and decodes a 200's body into out (when not nil).
func (s *binaryServer) do(tb testing.TB, method, path, body string, out any) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, s.url+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("tandem", "growth")
	resp, err := s.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s %s: %d %s (%v)", method, path, resp.StatusCode, data, err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			tb.Fatal(err)
		}
	}
}
