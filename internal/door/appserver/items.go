package appserver

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// Codex's item kinds that tandem's parts become.
const (
	kindAgent   = "agentMessage"
	kindReason  = "reasoning"
	kindCommand = "commandExecution"
	kindFile    = "fileChange"
	kindTool    = "mcpToolCall"
	kindPlan    = "plan" // todowrite: a turn/plan/updated, not an item
)

// kindOfTool is the item a tandem tool call becomes: bash a command execution, the tools that write
// files a file change, the todo list the turn's plan, anything else (read, grep, webfetch, an MCP
// server's tool) a tool call of the server that offers it ("tandem" for tandem's own).
func kindOfTool(name string) string {
	switch name {
	case "bash":
		return kindCommand
	case "write", "edit", "patch", "multiedit":
		return kindFile
	case "todowrite":
		return kindPlan
	}
	return kindTool
}

// userItem is a prompt as Codex's userMessage item.
func userItem(msgID string, texts []string) map[string]any {
	content := []any{}
	for _, t := range texts {
		content = append(content, map[string]any{"type": "text", "text": t, "text_elements": []any{}})
	}
	return map[string]any{"type": "userMessage", "id": msgID, "content": content}
}

// textItem is an assistant text or reasoning part with the text it has so far.
func textItem(p session.Part, text string) map[string]any {
	if p.Type == "reasoning" {
		return map[string]any{"type": kindReason, "id": p.ID, "summary": []any{}, "content": []any{text}}
	}
	return map[string]any{"type": kindAgent, "id": p.ID, "text": text}
}

// toolInput is a tool part's input as an object (a call still streaming its input has none).
func toolInput(p session.Part) map[string]any {
	in := map[string]any{}
	if p.State != nil {
		_ = json.Unmarshal(p.State.Input, &in)
	}
	return in
}

// statusOf is a tool part's state as Codex's item status.
func statusOf(p session.Part, declined bool) string {
	switch {
	case p.State == nil || p.State.Status == "pending" || p.State.Status == "running":
		return "inProgress"
	case p.State.Status == "completed":
		return "completed"
	case declined:
		return "declined"
	}
	return "failed"
}

// toolItem is a tool part as a Codex item; mcp names the MCP servers (their tools are named
// "<server>_<tool>"); declined says a person refused the call.
func toolItem(p session.Part, dir string, mcp []string, declined bool) map[string]any {
	in := toolInput(p)
	status := statusOf(p, declined)
	var meta map[string]any
	if p.State != nil {
		meta = p.State.Metadata
	}
	switch kindOfTool(p.Tool) {
	case kindCommand:
		cmd, _ := in["command"].(string)
		cwd := dir
		if w, ok := in["workdir"].(string); ok && w != "" {
			cwd = absIn(dir, w)
		}
		item := map[string]any{"type": kindCommand, "id": p.CallID, "command": cmd, "cwd": cwd, "processId": nil, "source": "agent",
			"status": status, "commandActions": []any{map[string]any{"type": "unknown", "command": cmd}},
			"aggregatedOutput": nil, "exitCode": nil, "durationMs": nil}
		if out, ok := meta["output"].(string); ok {
			item["aggregatedOutput"] = out
		}
		if p.State != nil && p.State.Status == "completed" && p.State.Output != nil && item["aggregatedOutput"] == nil {
			item["aggregatedOutput"] = *p.State.Output
		}
		if exit, ok := meta["exit"].(float64); ok {
			item["exitCode"] = int(exit)
			if status == "completed" && exit != 0 {
				item["status"] = "failed"
			}
		}
		if p.State != nil && p.State.Time != nil && p.State.Time.End > 0 {
			item["durationMs"] = p.State.Time.End - p.State.Time.Start
		}
		return item
	case kindFile:
		return map[string]any{"type": kindFile, "id": p.CallID, "changes": fileChanges(in, meta, dir), "status": status}
	}
	server, tool := "tandem", p.Tool
	for _, m := range mcp {
		if strings.HasPrefix(p.Tool, m+"_") {
			server, tool = m, strings.TrimPrefix(p.Tool, m+"_")
			break
		}
	}
	item := map[string]any{"type": kindTool, "id": p.CallID, "server": server, "tool": tool, "status": status,
		"arguments": in, "result": nil, "error": nil, "durationMs": nil}
	if p.State != nil {
		switch p.State.Status {
		case "completed":
			out := ""
			if p.State.Output != nil {
				out = *p.State.Output
			}
			item["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "structuredContent": nil}
		case "error":
			item["error"] = map[string]any{"message": p.State.Error}
		}
		if p.State.Time != nil && p.State.Time.End > 0 {
			item["durationMs"] = p.State.Time.End - p.State.Time.Start
		}
	}
	return item
}

// fileChanges are the changes of a write or edit: once it ran, from its file diff (a new file's
// content, or the unified diff of an update); before, the path it names.
func fileChanges(in, meta map[string]any, dir string) []any {
	path, _ := in["filePath"].(string)
	if fd, ok := meta["filediff"].(map[string]any); ok {
		if f, _ := fd["file"].(string); f != "" {
			path = f
		}
		before, _ := fd["before"].(string)
		after, _ := fd["after"].(string)
		if existed, ok := meta["exists"].(bool); (ok && !existed) || (!ok && before == "") {
			return []any{map[string]any{"path": absIn(dir, path), "kind": map[string]any{"type": "add"}, "diff": after}}
		}
	}
	diff, _ := meta["diff"].(string)
	if path == "" {
		return []any{}
	}
	return []any{map[string]any{"path": absIn(dir, path), "kind": map[string]any{"type": "update", "move_path": nil}, "diff": diff}}
}

// absIn is p made absolute in dir.
func absIn(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// planOf is a todo list as Codex's plan steps; cancelled items are left out.
func planOf(todos []struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}) []any {
	out := []any{}
	for _, t := range todos {
		st := "pending"
		switch t.Status {
		case "in_progress":
			st = "inProgress"
		case "completed":
			st = "completed"
		case "cancelled":
			continue
		}
		out = append(out, map[string]any{"step": t.Content, "status": st})
	}
	return out
}
