package auth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openAt(t *testing.T, path string, creds Credentials, bind bool) *Authority {
	t.Helper()
	a, err := Open(creds, path, bind)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBrowserSessionsSurviveARestart(t *testing.T) {
	creds := Credentials{Username: "tandem", Password: "chosen"}
	path := filepath.Join(t.TempDir(), "data", KeyFileName)
	before := openAt(t, path, creds, true)
	kept, ended := before.NewSession(), before.NewSession()
	if err := before.EndSession(ended); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the key file's mode is %o, want 600", info.Mode().Perm())
	}

	tests := []struct {
		name  string
		creds Credentials
		bind  bool
		token string
		want  bool
	}{
		{"a session from before the restart still signs in", creds, true, kept, true},
		{"a session logged out before the restart stays logged out", creds, true, ended, false},
		{"a changed password the user chose ends every session", Credentials{Username: "tandem", Password: "changed"}, true, kept, false},
		{"a changed user name ends every session", Credentials{Username: "other", Password: "chosen"}, true, kept, false},
		{"a password generated at start does not sign anyone out", Credentials{Username: "tandem", Password: "generated-2"}, false, openAt(t, path, Credentials{Username: "tandem", Password: "generated-1"}, false).NewSession(), true},
		{"a token whose signature was altered is refused", creds, true, kept[:len(kept)-2] + "AA", false},
		{"a token signed with another server's key is refused", creds, true, openAt(t, filepath.Join(t.TempDir(), KeyFileName), creds, true).NewSession(), false},
		{"a session of the in-memory authority is refused", creds, true, New(creds).NewSession(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := openAt(t, path, tt.creds, tt.bind).CheckSession(tt.token); got != tt.want {
				t.Errorf("CheckSession = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTheKeyFileIsKeptPrivate(t *testing.T) {
	t.Run("a key file that others may read is made private", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), KeyFileName)
		token := openAt(t, path, Credentials{Username: "u", Password: "p"}, true).NewSession()
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if !openAt(t, path, Credentials{Username: "u", Password: "p"}, true).CheckSession(token) {
			t.Fatal("the session did not survive")
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("mode %o, want 600", info.Mode().Perm())
		}
	})
	t.Run("a damaged key file is an error that does not quote it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), KeyFileName)
		if err := os.WriteFile(path, []byte(`{"secret":"c2hvcnQ"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(Credentials{Username: "u", Password: "p"}, path, true)
		if err == nil || !strings.Contains(err.Error(), "remove it") || strings.Contains(err.Error(), "c2hvcnQ") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNodesSharingASecretHonourEachOthersSessionsAndLogouts(t *testing.T) {
	creds := Credentials{Username: "tandem", Password: "shared-password"}
	secret := bytes.Repeat([]byte{7}, 32)
	a, err := OpenShared(creds, filepath.Join(t.TempDir(), KeyFileName), true, secret)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenShared(creds, filepath.Join(t.TempDir(), KeyFileName), true, secret)
	if err != nil {
		t.Fatal(err)
	}
	// A logout at one node reaches the other, as the cluster's signal carries it.
	a.OnEnded(func(nonce string, exp time.Time) {
		if err := b.Ended(nonce, exp); err != nil {
			t.Error(err)
		}
	})
	token := a.NewSession()
	if !b.CheckSession(token) {
		t.Fatal("a session signed in at one node is refused at the other")
	}
	if err := a.EndSession(token); err != nil {
		t.Fatal(err)
	}
	if a.CheckSession(token) || b.CheckSession(token) {
		t.Error("a session logged out at one node is still accepted")
	}
	if _, err := OpenShared(creds, filepath.Join(t.TempDir(), KeyFileName), true, []byte("short")); err == nil {
		t.Error("a short shared secret was accepted")
	}
}
