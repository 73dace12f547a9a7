package client

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// State is the file a running `tandem serve` writes (0600) so that local clients find it and
// authenticate: stateDir/server.json.
type State struct {
	URL      string `json:"url"`
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
	PID      int    `json:"pid"`
}

// StateFile is where the state file lives in a state directory.
func StateFile(stateDir string) string { return filepath.Join(stateDir, "server.json") }

// ReadState reads the state file of the local server.
func ReadState(stateDir string) (State, error) {
	var st State
	body, err := os.ReadFile(StateFile(stateDir))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%s: %w", StateFile(stateDir), err)
	}
	return st, nil
}

// Locate turns a server address given by a person into a client. "" or "local" means the server
// that `tandem serve` started on this machine (its state file). The credentials come, in order,
// from the URL's user info, from TANDEM_SERVER_USERNAME/TANDEM_SERVER_PASSWORD, or from the state
// file when it describes the same server.
func Locate(raw string, getenv func(string) string, stateDir string) (*Client, error) {
	st, stErr := ReadState(stateDir)
	if raw == "" || raw == "local" {
		if stErr != nil {
			return nil, fmt.Errorf("no URL given and no local server found (%v); start `tandem serve` or pass its URL", stErr)
		}
		raw = st.URL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: expected the server's http(s) URL, e.g. http://127.0.0.1:4096", raw)
	}
	user, password := "tandem", ""
	switch {
	case u.User != nil:
		user = u.User.Username()
		password, _ = u.User.Password()
	case getenv("TANDEM_SERVER_PASSWORD") != "":
		password = getenv("TANDEM_SERVER_PASSWORD")
		if v := getenv("TANDEM_SERVER_USERNAME"); v != "" {
			user = v
		}
	case stErr == nil && sameServer(st.URL, u):
		user, password = st.Username, st.Password
	}
	u.User = nil
	return New(u.String(), user, password), nil
}

func sameServer(stateURL string, u *url.URL) bool {
	s, err := url.Parse(stateURL)
	return err == nil && s.Scheme == u.Scheme && s.Host == u.Host
}
