package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// A share is a read-only link to one session that tandem serves itself, at base/s/{token}: the
// browser UI in read-only mode for that session and nothing else. The token is 256 random bits;
// only its hash is stored, so the database alone does not open the link. Revoking deletes it.

// sharing owns a session's read-only link: making and revoking it, and what the link shows (the
// session and its messages without the owner's paths). It reads the session through rows and its
// messages through msgs, and stores only the link's hash.
type sharing struct {
	rows sessionRows
	msgs messageLog
	db   shareStore
}

// shareStore is the store as sharing uses it: the link's hash, written with the session's field.
type shareStore interface {
	SharedSession(ctx context.Context, tokenHash []byte) (string, error)
	Tx(ctx context.Context, fn func(q store.Tx) error) error
}

// SharePath is where shared sessions are served; the token follows it.
const SharePath = "/s/"

// Share gives a session a read-only link under base (the server's URL as the client reached it),
// or returns the link it already has.
func (sh sharing) Share(ctx context.Context, sessionID, base string) (Session, error) {
	sess, err := sh.rows.Get(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	if sess.Share != nil {
		return sess, nil
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(raw)
	hash := sha256.Sum256([]byte(token))
	err = sh.db.Tx(ctx, func(q store.Tx) error {
		if err := q.PutShare(ctx, sessionID, hash[:], sh.rows.nowMS()); err != nil {
			return err
		}
		sess, err = sh.rows.change(ctx, q, sessionID, func(x *Session) {
			x.Share = &Share{URL: strings.TrimSuffix(base, "/") + SharePath + token}
		})
		return err
	})
	if err != nil {
		return Session{}, err
	}
	sh.rows.announce(sess)
	return sess, nil
}

// Unshare revokes a session's link: it stops working at once.
func (sh sharing) Unshare(ctx context.Context, sessionID string) (Session, error) {
	if _, err := sh.rows.Get(ctx, sessionID); err != nil {
		return Session{}, err
	}
	var sess Session
	err := sh.db.Tx(ctx, func(q store.Tx) error {
		if err := q.DeleteShare(ctx, sessionID); err != nil {
			return err
		}
		var err error
		sess, err = sh.rows.change(ctx, q, sessionID, func(x *Session) { x.Share = nil })
		return err
	})
	if err != nil {
		return Session{}, err
	}
	sh.rows.announce(sess)
	return sess, nil
}

// Shared is the session a link's token opens, without what only its owner should see (the
// project's directory, the permission rules, client metadata) and with paths inside the project
// written relative to it. An unknown or revoked token is NotFound, the same answer as for a token
// that never existed.
func (sh sharing) Shared(ctx context.Context, token string) (Session, error) {
	sess, err := sh.shared(ctx, token)
	if err != nil {
		return Session{}, err
	}
	roots := projectRoots([]string{sess.Directory, Worktree(sess.Directory)})
	sess.Directory, sess.Permission, sess.Metadata = "", nil, nil
	// The title (a model names a session after its first prompt: "Read /home/me/app/notes.txt"),
	// the summary's diffs and a revert's diff are written relative to the project too: every
	// string of the session goes through the rewrite that its messages go through.
	doc, err := json.Marshal(sess)
	if err != nil {
		return Session{}, err
	}
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return Session{}, err
	}
	if doc, err = json.Marshal(relativeStrings(fields, roots)); err != nil {
		return Session{}, err
	}
	var out Session
	if err := json.Unmarshal(doc, &out); err != nil {
		return Session{}, err
	}
	out.Title = cutRoot(out.Title, roots)
	return out, nil
}

// cutRoot drops the start of a root that a title cut short ends with ("Read /home/me/pro…"
// becomes "Read …"): what is left of the path cannot be made relative, and would show the
// directories the project is in.
func cutRoot(title string, roots []string) string {
	head, ok := strings.CutSuffix(title, "…")
	if !ok {
		return title
	}
	i := strings.LastIndexAny(head, " \t\n\"'`(") + 1
	tail := head[i:]
	for _, r := range roots {
		if len(tail) > 1 && strings.HasPrefix(r, tail) {
			return head[:i] + "…"
		}
	}
	return title
}

// SharedMessages is the messages of the session a link's token opens, oldest first, as a JSON
// array of {info, parts}, without the project's absolute paths: each assistant message's path
// (cwd, root) is left out, and in every other string (tool inputs and outputs, titles, patch file
// lists) a path inside the project is written relative to it ("." for the project itself).
func (sh sharing) SharedMessages(ctx context.Context, token string) ([]byte, error) {
	sess, err := sh.shared(ctx, token)
	if err != nil {
		return nil, err
	}
	body, _, err := sh.msgs.MessagesJSON(ctx, sess.ID, MessagesInput{})
	if err != nil {
		return nil, err
	}
	var items []map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // costs and token counts pass through as they were stored
	if err := dec.Decode(&items); err != nil {
		return nil, err
	}
	roots := []string{sess.Directory, Worktree(sess.Directory)}
	for _, item := range items {
		info, _ := item["info"].(map[string]any)
		if path, ok := info["path"].(map[string]any); ok {
			for _, k := range []string{"cwd", "root"} {
				if dir, ok := path[k].(string); ok {
					roots = append(roots, dir)
				}
			}
			delete(info, "path")
		}
	}
	return json.Marshal(relativeStrings(items, projectRoots(roots)))
}

// projectRoots is the directories whose paths the shared view writes relative to them: dirs and
// where their symbolic links lead, absolute ones only, the longest first (so that a directory
// inside another is made relative to itself).
func projectRoots(dirs []string) []string {
	roots := slices.Clone(dirs)
	for _, r := range dirs {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			roots = append(roots, real)
		}
	}
	roots = slices.DeleteFunc(roots, func(r string) bool { return !filepath.IsAbs(r) || r == string(filepath.Separator) })
	slices.SortFunc(roots, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b) // equal roots side by side, for Compact
	})
	return slices.Compact(roots)
}

// relativeStrings rewrites, in every string of v, the paths inside one of roots relative to it.
func relativeStrings(v any, roots []string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			v[k] = relativeStrings(child, roots)
		}
	case []map[string]any:
		for i, child := range v {
			v[i] = relativeStrings(child, roots).(map[string]any)
		}
	case []any:
		for i, child := range v {
			v[i] = relativeStrings(child, roots)
		}
	case string:
		for _, r := range roots {
			v = relativeTo(v, r)
		}
		return v
	}
	return v
}

// relativeTo rewrites each occurrence of root in s that is a whole path element: root/x becomes x,
// root alone ".". /home/me/project2 is left alone when root is /home/me/project.
func relativeTo(s, root string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, root)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(root):]
		switch {
		case strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, string(filepath.Separator)):
			rest = rest[1:]
		case rest == "" || !pathByte(rest[0]):
			b.WriteString(".")
		default:
			b.WriteString(root)
		}
		s = rest
	}
}

// pathByte reports whether c may continue a file name (so root is only a prefix of another name).
func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c >= 0x80
}

func (sh sharing) shared(ctx context.Context, token string) (Session, error) {
	hash := sha256.Sum256([]byte(token))
	sessionID, err := sh.db.SharedSession(ctx, hash[:])
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, errs.E(errs.NotFound, "this link does not exist or was revoked")
	}
	if err != nil {
		return Session{}, err
	}
	return sh.rows.Get(ctx, sessionID)
}
