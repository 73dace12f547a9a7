package session

import (
	"context"
	"strings"

	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// generateTitle asks the session's model for a title of its first prompt, as OpenCode's title
// agent does, and gives it to the session if the session still has the placeholder title the
// prompt gave it (a rename meanwhile wins). A model that fails or answers nothing leaves the
// placeholder.
func (s *Service) generateTitle(ctx context.Context, prov provider.Provider, modelID, sessionID, placeholder, text string) {
	if prov == nil || strings.TrimSpace(text) == "" {
		return
	}
	req := provider.Request{
		Model:     modelID,
		System:    []string{provider.TitleSystem},
		Messages:  []provider.Message{{Role: provider.RoleUser, Text: text}},
		MaxTokens: 64,
	}
	var answer strings.Builder
	err := prov.Stream(ctx, req, func(e provider.Event) error {
		if e.Kind == provider.TextDelta {
			answer.WriteString(e.Text)
		}
		return nil
	})
	if err != nil {
		s.log.Info("session title: the model wrote none; the first line of the prompt stays", "session", sessionID, "err", err)
		return
	}
	title := provider.CleanTitle(answer.String())
	if title == "" || title == placeholder {
		return
	}
	keep := context.WithoutCancel(ctx)
	var titled Session
	renamed := false
	err = s.db.Tx(keep, func(q store.Tx) error {
		cur, err := get(keep, q, sessionID)
		if err != nil || cur.Title != placeholder {
			return err
		}
		titled, err = s.change(keep, q, sessionID, func(x *Session) { x.Title = title })
		renamed = err == nil
		return err
	})
	if err != nil {
		s.log.Warn("session title: not stored", "session", sessionID, "err", err)
		return
	}
	if renamed {
		s.announce(titled)
	}
}
