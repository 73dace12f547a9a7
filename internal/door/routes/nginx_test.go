package routes_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestSSEThroughNginx runs the README's reverse-proxy configuration (deploy/nginx.conf) in a real
// nginx on loopback in front of a real server, and reads /event through it with curl as HTTP/1.0
// and HTTP/1.1 clients: the stream's frames arrive as they are published. It does so as the file
// ships (HTTP/1.1 towards tandem) and without its proxy_http_version line, nginx's default, which
// speaks HTTP/1.0 to tandem and needs a close-delimited stream.
func TestSSEThroughNginx(t *testing.T) {
	nginx := testenv.Program(t, "nginx", "apt-get install nginx")
	curl := testenv.Program(t, "curl", "apt-get install curl")
	shipped, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "deploy", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(shipped), "proxy_http_version 1.1;") {
		t.Fatal("deploy/nginx.conf no longer sets proxy_http_version 1.1; update this test's variants")
	}
	s := startAPIServer(t, apiOptions{})
	for _, upstream := range []struct{ name, conf string }{
		{"as shipped, HTTP/1.1 towards tandem", string(shipped)},
		{"with nginx's default HTTP/1.0 towards tandem", strings.Replace(string(shipped), "proxy_http_version 1.1;", "", 1)},
	} {
		t.Run(upstream.name, func(t *testing.T) {
			proxy := startNginx(t, nginx, upstream.conf, strings.TrimPrefix(s.base, "http://"))
			for i, version := range []string{"--http1.0", "--http1.1"} {
				t.Run("curl "+version+" streams the events", func(t *testing.T) {
					cmd := exec.CommandContext(t.Context(), curl, "-sSN", version, "--max-time", strconv.Itoa(int(testenv.Patience/time.Second)),
						"-u", apiUser+":"+apiPassword, "-D", "/dev/stderr", proxy+"/event")
					var stderr strings.Builder
					cmd.Stderr = &stderr
					out, err := cmd.StdoutPipe()
					if err != nil {
						t.Fatal(err)
					}
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					frames := make(chan sseFrame, 64)
					done := make(chan struct{})
					go func() {
						defer close(done)
						defer close(frames)
						readFrames(out, frames)
					}()
					defer func() {
						_ = cmd.Process.Kill()
						testenv.Recv(t, done, "curl's output ending")
						_ = cmd.Wait()
					}()
					c := &sseClient{t: t, frames: frames, done: done}
					if _, hi := c.next(); hi.Type != "server.connected" {
						t.Fatalf("first frame %s, want server.connected; curl said:\n%s", hi.Type, stderr.String())
					}
					if err := s.bus.Publish("", "test.proxied", map[string]any{"n": i}); err != nil {
						t.Fatal(err)
					}
					if _, e := c.nextOfType("test.proxied"); e.Properties["n"] != float64(i) {
						t.Fatalf("event %+v", e)
					}
				})
			}
		})
	}
}

// startNginx runs nginx in the foreground with conf (a server block, as deploy/nginx.conf) listening
// on a free loopback port and proxying to upstream, and returns its base URL.
func startNginx(t *testing.T, nginx, conf, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(testenv.UnusedPort(t))
	conf = strings.Replace(conf, "listen 127.0.0.1:8080;", "listen "+listen+";", 1)
	conf = strings.Replace(conf, "proxy_pass http://127.0.0.1:4096;", "proxy_pass http://"+upstream+";", 1)
	if err := os.WriteFile(filepath.Join(dir, "tandem.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	errorLog := filepath.Join(dir, "error.log")
	main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[2]s info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/tandem.conf;
}
`, dir, errorLog)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", errorLog)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		testenv.Recv(t, exited, "nginx exiting")
		if t.Failed() {
			if b, err := os.ReadFile(errorLog); err == nil {
				t.Logf("nginx's error log:\n%s", b)
			}
		}
	})
	testenv.Eventually(t, "nginx to listen on "+listen, func() bool {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(errorLog)
			exited <- err
			t.Fatalf("nginx exited (%v):\n%s", err, b)
		default:
		}
		conn, err := net.Dial("tcp", listen)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return "http://" + listen
}
