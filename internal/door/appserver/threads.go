package appserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/id"
)

// threadObject is a tandem session as Codex's Thread.
func (s *server) threadObject(sess session.Session, turns []any, status any) map[string]any {
	tid := s.threadID(sess.ID)
	prov, model := "", ""
	if sess.Model != nil {
		prov, model = sess.Model.ProviderID, sess.Model.ProviderID+"/"+sess.Model.ID
	}
	if status == nil {
		status = map[string]any{"type": "notLoaded"}
	}
	var name any
	if sess.Title != "" {
		name = sess.Title
	}
	return map[string]any{
		"id": tid, "sessionId": tid, "extra": map[string]any{"tandemSessionId": sess.ID}, "forkedFromId": nil, "parentThreadId": nil, "preview": sess.Title,
		"ephemeral": false, "modelProvider": prov, "model": nilIfEmpty(model), "createdAt": sess.Time.Created / 1000,
		"updatedAt": sess.Time.Updated / 1000, "status": status, "path": nil, "cwd": sess.Directory,
		"cliVersion": s.o.Version, "source": "appServer", "name": name, "projectId": nil, "turns": turns,
		"gitInfo": nil, "agentNickname": nil, "agentRole": nil,
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// turnsOf is a stored history as Codex turns: each prompt opens one, holding the prompt and what
// the assistant did in answer to it.
func turnsOf(msgs []session.WithParts, dir string, mcp []string) []any {
	turns := []any{}
	var cur map[string]any
	for _, m := range msgs {
		if m.Info.Role == session.RoleUser {
			cur = map[string]any{"id": m.Info.ID, "items": []any{userItem(m.Info.ID, promptTexts(m.Parts))}, "itemsView": "full",
				"status": "completed", "error": nil, "startedAt": m.Info.Time.Created / 1000, "completedAt": nil, "durationMs": nil}
			turns = append(turns, cur)
			continue
		}
		if cur == nil {
			continue
		}
		for _, p := range m.Parts {
			if item := storedItem(p, dir, mcp); item != nil {
				cur["items"] = append(cur["items"].([]any), item)
			}
		}
		if m.Info.Time.Completed > 0 {
			cur["completedAt"] = m.Info.Time.Completed / 1000
		}
		if e := m.Info.Error; e != nil {
			if e.Name == "MessageAbortedError" {
				cur["status"] = "interrupted"
			} else {
				cur["status"] = "failed"
				cur["error"] = turnError(e)
			}
		}
	}
	return turns
}

// storedItem is a stored part as a finished item, or nil for a part Codex has no item for.
func storedItem(p session.Part, dir string, mcp []string) map[string]any {
	switch p.Type {
	case "text", "reasoning":
		if p.Text == nil || p.Synthetic {
			return nil
		}
		return textItem(p, *p.Text)
	case "tool":
		if kindOfTool(p.Tool) == kindPlan {
			return nil
		}
		return toolItem(p, dir, mcp, false)
	}
	return nil
}

// promptTexts are a prompt's texts (a file part as its name).
func promptTexts(parts []session.Part) []string {
	var out []string
	for _, p := range parts {
		switch {
		case p.Type == "text" && p.Text != nil && !p.Synthetic:
			out = append(out, *p.Text)
		case p.Type == "file" && p.Filename != "":
			out = append(out, "@"+p.Filename)
		}
	}
	return out
}

// turnError is a tandem message error as Codex's TurnError.
func turnError(e *session.MessageError) map[string]any {
	msg := e.Name
	if m, ok := e.Data["message"].(string); ok && m != "" {
		msg += ": " + m
	}
	return map[string]any{"message": msg, "codexErrorInfo": nil, "additionalDetails": nil}
}

type threadStartParams struct {
	Model     *string `json:"model"`
	Cwd       *string `json:"cwd"`
	Ephemeral *bool   `json:"ephemeral"`
}

// threadStart creates a tandem session in cwd (the door's directory when none is given).
func (s *server) threadStart(ctx context.Context, raw json.RawMessage) (any, error) {
	var p threadStartParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/start: %v", err)
	}
	dir := s.o.Dir
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return nil, invalidParams("thread/start: cwd must be an absolute path")
		}
		dir = filepath.Clean(*p.Cwd)
	}
	in := session.CreateInput{Metadata: map[string]any{"codexClient": s.clientName()}}
	if p.Model != nil && *p.Model != "" {
		m, err := s.modelRef(ctx, *p.Model)
		if err != nil {
			return nil, err
		}
		in.Model = &session.SessionModel{ProviderID: m.ProviderID, ID: m.ModelID}
	}
	c := s.c.InDirectory(dir)
	sess, err := c.CreateSession(ctx, in)
	if err != nil {
		return nil, err
	}
	t, err := s.open(ctx, sess, c)
	if err != nil {
		return nil, err
	}
	obj := s.threadObject(sess, []any{}, t.status())
	s.then = func(ctx context.Context) { s.p.notify(ctx, "thread/started", map[string]any{"thread": obj}) }
	return s.threadResponse(ctx, t, obj, nil)
}

func (s *server) clientName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == "" {
		return "codex"
	}
	return s.client
}

// modelRef resolves "provider/model" (or a model ID of one provider) against tandem's providers.
func (s *server) modelRef(ctx context.Context, ref string) (*session.MessageModel, error) {
	list, err := s.c.Providers(ctx)
	if err != nil {
		return nil, err
	}
	prov, model, ok := strings.Cut(ref, "/")
	for _, p := range list.Providers {
		if ok && p.ID == prov && model != "" {
			// A provider takes model IDs its catalog does not list (TANDEM_MODEL may name one).
			return &session.MessageModel{ProviderID: p.ID, ModelID: model}, nil
		}
		for id := range p.Models {
			if !ok && id == ref {
				return &session.MessageModel{ProviderID: p.ID, ModelID: id}, nil
			}
		}
	}
	return nil, invalidParams("no model %q among tandem's providers (model/list lists them)", ref)
}

// threadResponse is the answer to thread/start and thread/resume.
func (s *server) threadResponse(ctx context.Context, t *thread, obj map[string]any, extra map[string]any) (any, error) {
	prov, model := "", ""
	if m := t.currentModel(); m != nil {
		prov, model = m.ProviderID, m.ProviderID+"/"+m.ModelID
	} else if dp, dm, err := s.defaultModel(ctx); err == nil && dm != "" {
		prov, model = dp, dp+"/"+dm
	}
	out := map[string]any{
		"thread": obj, "model": model, "modelProvider": prov, "serviceTier": nil, "cwd": t.dir,
		"approvalPolicy": "on-request", "approvalsReviewer": "user", "reasoningEffort": nil,
		"sandbox": map[string]any{"type": "workspaceWrite", "writableRoots": []string{t.dir}, "networkAccess": true,
			"excludeTmpdirEnvVar": false, "excludeSlashTmp": false},
		"instructionSources": []any{}, "disabledPluginIds": []any{},
	}
	for k, v := range extra {
		out[k] = v
	}
	return out, nil
}

type threadIDParams struct {
	ThreadID     string `json:"threadId"`
	IncludeTurns bool   `json:"includeTurns"`
}

func (p threadIDParams) check(method string) error {
	if p.ThreadID == "" {
		return invalidParams("%s: threadId is required", method)
	}
	return nil
}

// threadResume loads a stored session (of any directory) on this connection: its history as
// turns, and from now on its events.
func (s *server) threadResume(ctx context.Context, raw json.RawMessage) (any, error) {
	var p threadIDParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/resume: %v", err)
	}
	if err := p.check("thread/resume"); err != nil {
		return nil, err
	}
	sess, err := s.session(ctx, p.ThreadID)
	if err != nil {
		return nil, notFound(err, p.ThreadID)
	}
	c := s.c.InDirectory(sess.Directory)
	t, err := s.open(ctx, sess, c)
	if err != nil {
		return nil, err
	}
	msgs, err := c.Messages(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	t.learnModel(msgs)
	turns := turnsOf(msgs, sess.Directory, s.mcpNames(ctx))
	obj := s.threadObject(sess, turns, t.status())
	return s.threadResponse(ctx, t, obj, map[string]any{"initialTurnsPage": nil, "turnsBackwardsCursor": nil, "itemsBackwardsCursor": nil})
}

// notFound is a missing session as Codex says it.
func notFound(err error, threadID string) error {
	if ce, ok := err.(*client.Error); ok && ce.Status == 404 {
		return invalidRequest("thread not found: %s", threadID)
	}
	return err
}

type threadListParams struct {
	Cursor     *string  `json:"cursor"`
	Limit      *int     `json:"limit"`
	Cwd        any      `json:"cwd"`
	SearchTerm *string  `json:"searchTerm"`
	Archived   *bool    `json:"archived"`
	Source     []string `json:"sourceKinds"`
}

// threadList lists the sessions of the door's directory (or cwd), newest first; subagent sessions
// and archived ones are not threads a Codex client resumes.
func (s *server) threadList(ctx context.Context, raw json.RawMessage) (any, error) {
	var p threadListParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/list: %v", err)
	}
	empty := map[string]any{"data": []any{}, "nextCursor": nil, "backwardsCursor": nil}
	if (p.Archived != nil && *p.Archived) || (len(p.Source) > 0 && !containsAny(p.Source, "appServer", "cli", "vscode", "exec")) {
		return empty, nil
	}
	dir := s.o.Dir
	if cwd, ok := p.Cwd.(string); ok && cwd != "" {
		dir = cwd
	}
	search := ""
	if p.SearchTerm != nil {
		search = *p.SearchTerm
	}
	limit := 0
	if p.Limit != nil {
		limit = *p.Limit
	}
	list, err := s.c.InDirectory(dir).SearchSessions(ctx, search, limit)
	if err != nil {
		return nil, err
	}
	data := []any{}
	for _, sess := range list {
		if sess.ParentID != "" {
			continue
		}
		data = append(data, s.threadObject(sess, []any{}, s.loadedStatus(s.threadID(sess.ID))))
	}
	return map[string]any{"data": data, "nextCursor": nil, "backwardsCursor": nil}, nil
}

func containsAny(list []string, want ...string) bool {
	for _, l := range list {
		for _, w := range want {
			if l == w {
				return true
			}
		}
	}
	return false
}

// threadID is the Codex thread ID of a session: Codex clients take only UUIDs, so it is a UUID
// (version 8) made from the session ID's SHA-256, the same on every connection and after restarts.
func (s *server) threadID(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	tid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	s.mu.Lock()
	s.known[tid] = sessionID
	s.mu.Unlock()
	return tid
}

// session finds the session of a thread ID: one this connection has named, a tandem session ID
// as it is, or one of the project's sessions whose thread ID it is (a client resuming after a
// restart).
func (s *server) session(ctx context.Context, threadID string) (session.Session, error) {
	s.mu.Lock()
	sid, ok := s.known[threadID]
	s.mu.Unlock()
	if !ok && id.Valid(id.Session, threadID) {
		sid, ok = threadID, true
	}
	if !ok {
		list, err := s.c.InDirectory(s.o.Dir).SearchSessions(ctx, "", 0)
		if err != nil {
			return session.Session{}, err
		}
		for _, sess := range list {
			if s.threadID(sess.ID) == threadID {
				sid, ok = sess.ID, true
				break
			}
		}
	}
	if !ok {
		return session.Session{}, invalidRequest("thread not found: %s", threadID)
	}
	sess, err := s.c.Session(ctx, sid)
	if err != nil {
		return session.Session{}, notFound(err, threadID)
	}
	return sess, nil
}

// loadedStatus is a thread's status when this connection has it loaded, else notLoaded.
func (s *server) loadedStatus(id string) any {
	s.mu.Lock()
	t := s.threads[id]
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.status()
}

func (s *server) threadLoaded(context.Context, json.RawMessage) (any, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.threads))
	for id := range s.threads {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	return map[string]any{"data": ids, "nextCursor": nil}, nil
}

// threadRead reads a session, with its turns when asked.
func (s *server) threadRead(ctx context.Context, raw json.RawMessage) (any, error) {
	var p threadIDParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/read: %v", err)
	}
	if err := p.check("thread/read"); err != nil {
		return nil, err
	}
	sess, err := s.session(ctx, p.ThreadID)
	if err != nil {
		return nil, notFound(err, p.ThreadID)
	}
	turns := []any{}
	if p.IncludeTurns {
		if turns, err = s.storedTurns(ctx, sess); err != nil {
			return nil, err
		}
	}
	return map[string]any{"thread": s.threadObject(sess, turns, s.loadedStatus(s.threadID(sess.ID)))}, nil
}

func (s *server) storedTurns(ctx context.Context, sess session.Session) ([]any, error) {
	c := s.c.InDirectory(sess.Directory)
	msgs, err := c.Messages(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	return turnsOf(msgs, sess.Directory, s.mcpNames(ctx)), nil
}

type turnsListParams struct {
	ThreadID string  `json:"threadId"`
	Limit    *int    `json:"limit"`
	Cursor   *string `json:"cursor"`
}

// threadTurns lists a session's turns, newest first (one page: tandem does not page them).
func (s *server) threadTurns(ctx context.Context, raw json.RawMessage) (any, error) {
	var p turnsListParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/turns/list: %v", err)
	}
	sess, err := s.session(ctx, p.ThreadID)
	if err != nil {
		return nil, notFound(err, p.ThreadID)
	}
	turns, err := s.storedTurns(ctx, sess)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(turns))
	for i := len(turns) - 1; i >= 0; i-- {
		out = append(out, turns[i])
	}
	if p.Limit != nil && *p.Limit > 0 && len(out) > *p.Limit {
		out = out[:*p.Limit]
	}
	return map[string]any{"data": out, "nextCursor": nil, "backwardsCursor": nil}, nil
}

type threadNameParams struct {
	ThreadID string `json:"threadId"`
	Name     string `json:"name"`
}

// threadName renames the session.
func (s *server) threadName(ctx context.Context, raw json.RawMessage) (any, error) {
	var p threadNameParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/name/set: %v", err)
	}
	sess, err := s.session(ctx, p.ThreadID)
	if err != nil {
		return nil, err
	}
	if _, err := s.c.RenameSession(ctx, sess.ID, p.Name); err != nil {
		return nil, notFound(err, p.ThreadID)
	}
	s.then = func(ctx context.Context) {
		s.p.notify(ctx, "thread/name/updated", map[string]any{"threadId": p.ThreadID, "threadName": p.Name})
	}
	return map[string]any{}, nil
}

// threadArchive: tandem keeps every session; archiving is not served.
func (s *server) threadArchive(context.Context, json.RawMessage) (any, error) {
	return nil, invalidRequest("tandem does not archive sessions (delete one with DELETE /session/{id})")
}

// threadUnsubscribe stops this connection's events of a thread.
func (s *server) threadUnsubscribe(_ context.Context, raw json.RawMessage) (any, error) {
	var p threadIDParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("thread/unsubscribe: %v", err)
	}
	s.mu.Lock()
	t := s.threads[p.ThreadID]
	delete(s.threads, p.ThreadID)
	s.mu.Unlock()
	if t == nil {
		return map[string]any{"status": "notLoaded"}, nil
	}
	t.stop()
	return map[string]any{"status": "unsubscribed"}, nil
}

// mcpNames are the names of tandem's MCP servers, longest first (a tool's prefix names one).
func (s *server) mcpNames(ctx context.Context) []string {
	st, err := s.c.MCPStatus(ctx)
	if err != nil {
		s.log.Debug("app-server: MCP status", "err", err)
		return nil
	}
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	return names
}
