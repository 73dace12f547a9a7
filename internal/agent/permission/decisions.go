package permission

import (
	"slices"
	"strings"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// The decision keys a reply may carry (POST /permission/{id}/reply {"reply": key}). once, always
// and reject are OpenCode's and keep their meaning; the others are tandem's.
const (
	KeyOnce              = "once"                // allow this call
	KeySession           = "session"             // allow, and what the patterns match for the rest of the session
	KeyAlways            = "always"              // allow, and what the patterns match in the project, across restarts
	KeyReject            = "reject"              // refuse this call (an optional message is told to the model)
	KeyRejectWithMessage = "reject-with-message" // refuse this call and tell the model why (message required)
	KeyDenyAlways        = "deny-always"         // refuse, and what the patterns match in the project, across restarts
)

// allKeys are every key in the order a decision list offers them.
var allKeys = []string{KeyOnce, KeySession, KeyAlways, KeyReject, KeyRejectWithMessage, KeyDenyAlways}

// Choice is one answer a pending request accepts (the request's "decisions", a tandem extension).
type Choice = api.PermissionChoice

// Decisions lists the answers valid for req, in order: allow once, for the session, always in the
// project, reject, reject with a message, always reject in the project. A request that cannot be
// judged before it runs (req.Metadata["unjudged"]) offers nothing lasting: once and the rejects.
func Decisions(req Request) []Choice {
	asked := slices.Clone(req.Patterns)
	out := []Choice{{Key: KeyOnce, Label: "Allow once", Patterns: asked}}
	lasting := !unjudged(req)
	rule := rulePatterns(req)
	if lasting {
		out = append(out,
			Choice{Key: KeySession, Label: "Allow for this session", Patterns: rule},
			Choice{Key: KeyAlways, Label: "Always allow in this project", Patterns: rule})
	}
	out = append(out,
		Choice{Key: KeyReject, Label: "Reject", Patterns: asked},
		Choice{Key: KeyRejectWithMessage, Label: "Reject and tell the agent why", Patterns: asked, Message: true})
	if lasting {
		out = append(out, Choice{Key: KeyDenyAlways, Label: "Always reject in this project", Patterns: rule})
	}
	return out
}

// rulePatterns are what a lasting answer to req allows or refuses: its "always" patterns (bash: the
// command family, "git push *"), or what it asks when it has none.
func rulePatterns(req Request) []string {
	if len(req.Always) > 0 {
		return slices.Clone(req.Always)
	}
	return slices.Clone(req.Patterns)
}

// parseKey checks that key is one of the decision keys.
func parseKey(key string) error {
	if slices.Contains(allKeys, key) {
		return nil
	}
	valid := `"` + strings.Join(allKeys, `" | "`) + `"`
	if key == "" {
		return errs.E(errs.Invalid, "reply: required, one of %s", valid)
	}
	return errs.E(errs.Invalid, "reply: expected %s, got %q", valid, key)
}

// offered checks that key is in the decision list of req.
func offered(req Request, key string) error {
	var keys []string
	for _, c := range req.Decisions {
		if c.Key == key {
			return nil
		}
		keys = append(keys, c.Key)
	}
	return errs.E(errs.Invalid, "reply: %q is not offered for permission request %s; valid here: \"%s\"", key, req.ID, strings.Join(keys, `" | "`))
}

// openCodeReply is the reply OpenCode's clients know for a key (permission.replied's "reply"): the
// lasting allows are "always", every refusal "reject".
func openCodeReply(key string) Reply {
	switch key {
	case KeyOnce:
		return Once
	case KeySession, KeyAlways:
		return Always
	}
	return Reject
}

// chosen checks the patterns a person picked for a lasting answer: only session, always and
// deny-always remember patterns, and each one must be among those the request's decision offers
// (a request no longer waiting is checked by the reply itself: it gets NotFound or Conflict).
func chosen(req Request, waiting bool, key string, patterns []string) error {
	if key != KeySession && key != KeyAlways && key != KeyDenyAlways {
		return errs.E(errs.Invalid, "patterns: only a lasting answer (%q, %q or %q) remembers patterns, not %q", KeySession, KeyAlways, KeyDenyAlways, key)
	}
	if !waiting {
		return nil
	}
	var offer []string
	for _, c := range req.Decisions {
		if c.Key == key {
			offer = c.Patterns
		}
	}
	for _, p := range patterns {
		if !slices.Contains(offer, p) {
			return errs.E(errs.Invalid, "patterns: %q is not offered by %q for permission request %s; offered: \"%s\"", p, key, req.ID, strings.Join(offer, `" | "`))
		}
	}
	return nil
}
