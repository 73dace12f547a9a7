package auth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tandem-dev/tandem/internal/base/atomicfile"
)

// KeyFileName is the file, in the data directory, that holds the key browser sessions are signed
// with and the sessions logged out before they expired.
const KeyFileName = "web-session.json"

// keyFile is that file: readable by its owner only (0600), replaced atomically on every change.
type keyFile struct {
	path string
}

type keyFileBody struct {
	Secret string `json:"secret"`
	// Revoked maps each logged-out session to its expiry (Unix seconds); expired ones are dropped.
	Revoked map[string]int64 `json:"revoked,omitempty"`
}

// Open returns an Authority for creds whose browser sessions survive a restart: the secret their
// signing key comes from is kept in the file at path (created, mode 0600, on first use), and so are
// logouts. With bindPassword the key also depends on the password, so that changing it ends every
// session; pass it for a password the user chose, not for one generated at start.
func Open(creds Credentials, path string, bindPassword bool) (*Authority, error) {
	kf := &keyFile{path: path}
	body, err := kf.load()
	if errors.Is(err, fs.ErrNotExist) {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		body = keyFileBody{Secret: base64.RawURLEncoding.EncodeToString(secret)}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		err = kf.write(body)
	}
	if err != nil {
		return nil, err
	}
	secret, err := base64.RawURLEncoding.DecodeString(body.Secret)
	if err != nil || len(secret) < 32 {
		// The message never quotes the file: it holds a secret.
		return nil, fmt.Errorf("auth: %s holds no usable session secret; remove it (every browser signs in again)", path)
	}
	revoked := map[string]time.Time{}
	for k, exp := range body.Revoked {
		revoked[k] = time.Unix(exp, 0)
	}
	return newAuthority(creds, sessionKey(secret, creds, bindPassword), kf, revoked), nil
}

// OpenShared is Open for a server whose browser sessions other servers honour too (several nodes
// sharing one database): sessions are signed with secret, which the nodes share, rather than with
// the file's; logouts are kept in the file as with Open, and reach the other nodes through OnEnded
// and Ended.
func OpenShared(creds Credentials, path string, bindPassword bool, secret []byte) (*Authority, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("auth: a shared session secret needs 32 bytes or more, got %d", len(secret))
	}
	a, err := Open(creds, path, bindPassword)
	if err != nil {
		return nil, err
	}
	a.sessionKey = sessionKey(secret, creds, bindPassword)
	return a, nil
}

func (kf *keyFile) load() (keyFileBody, error) {
	var body keyFileBody
	raw, err := os.ReadFile(kf.path)
	if err != nil {
		return body, err
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return body, fmt.Errorf("auth: %s is not tandem's session key file; remove it (every browser signs in again)", kf.path)
	}
	info, err := os.Stat(kf.path)
	if err != nil {
		return body, fmt.Errorf("auth: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(kf.path, 0o600); err != nil {
			return body, fmt.Errorf("auth: %s is readable by others and its mode cannot be changed: %w", kf.path, err)
		}
	}
	return body, nil
}

// save rewrites the file with the revoked sessions; the secret stays as it is.
func (kf *keyFile) save(revoked map[string]time.Time) error {
	body, err := kf.load()
	if err != nil {
		return err
	}
	body.Revoked = make(map[string]int64, len(revoked))
	for k, exp := range revoked {
		body.Revoked[k] = exp.Unix()
	}
	return kf.write(body)
}

// write replaces the file atomically, 0600 from the start: a crash leaves the old file or the new
// one, and nobody else can read either.
func (kf *keyFile) write(body keyFileBody) error {
	raw, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if err := atomicfile.Write(kf.path, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
