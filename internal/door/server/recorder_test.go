package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestTheAccessLogRecordsAHijackedStreamAs200AndAnUpgradeAs101(t *testing.T) {
	tests := []struct {
		name    string
		upgrade string
		want    int
	}{
		{"an SSE stream that takes the connection was answered 200", "", http.StatusOK},
		{"a WebSocket upgrade was answered 101", "websocket", http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec *statusRecorder
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec = &statusRecorder{ResponseWriter: w, status: http.StatusOK, upgrade: r.Header.Get("Upgrade") != ""}
				conn, _, err := rec.Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
				conn.Close()
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if tt.upgrade != "" {
				req.Header.Set("Upgrade", tt.upgrade)
				req.Header.Set("Connection", "Upgrade")
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if rec == nil || rec.status != tt.want {
				t.Fatalf("recorded %+v, want status %d", rec, tt.want)
			}
		})
	}
}
