package tool

import (
	"fmt"
	"slices"
	"strings"
)

// The patch format is the one OpenAI's models are trained to write for Codex's apply_patch: a
// file-oriented diff without line numbers, where each change is found by its context.
//
//	*** Begin Patch
//	*** Add File: path            then the new file's lines, each starting with +
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: new/path         optional, right after Update File
//	@@ optional line to find first
//	 context line
//	-removed line
//	+added line
//	*** End of File               optional: the chunk ends at the file's end
//	*** End Patch

// patchOp is one file operation of a patch, as parsed.
type patchOp struct {
	kind   string // "add", "delete" or "update"
	path   string
	moveTo string       // update only: the file's new path
	lines  []string     // add only: the new file's lines
	chunks []patchChunk // update only
}

// patchChunk is one change of an update: the lines it expects (context and removed) replaced by
// the lines it leaves (context and added).
type patchChunk struct {
	anchor string   // the text after @@, found before the old lines; "" for none
	lines  []lineOp // ' ' context, '-' removed, '+' added, in the patch's order
	atEnd  bool     // *** End of File: the old lines must end the file
	line   int      // the chunk's line in the patch, for errors
}

// old is the lines the chunk expects in the file: its context and removed lines.
func (c patchChunk) old() []string {
	var out []string
	for _, l := range c.lines {
		if l.kind != '+' {
			out = append(out, l.text)
		}
	}
	return out
}

// replace is what the chunk leaves in place of file, the lines it matched: the file's own context
// lines (so that indentation the patch got wrong stays as it was) and the added ones.
func (c patchChunk) replace(file []string) []string {
	var out []string
	i := 0
	for _, l := range c.lines {
		switch l.kind {
		case ' ':
			out = append(out, file[i])
			i++
		case '-':
			i++
		case '+':
			out = append(out, l.text)
		}
	}
	return out
}

const (
	patchBegin  = "*** Begin Patch"
	patchEnd    = "*** End Patch"
	patchAdd    = "*** Add File:"
	patchDelete = "*** Delete File:"
	patchUpdate = "*** Update File:"
	patchMove   = "*** Move to:"
	patchEOF    = "*** End of File"
)

// parsePatch reads a whole patch. Errors name the patch line at fault, so the model can fix it.
func parsePatch(text string) ([]patchOp, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	// Models sometimes wrap the patch in a heredoc, as they would for a shell: the wrapper goes.
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "<<") {
		lines = lines[1 : len(lines)-1]
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != patchBegin {
		return nil, fmt.Errorf("the first line of the patch must be %q", patchBegin)
	}
	if strings.TrimSpace(lines[len(lines)-1]) != patchEnd {
		return nil, fmt.Errorf("the last line of the patch must be %q", patchEnd)
	}
	body := lines[1 : len(lines)-1]
	var ops []patchOp
	for i := 0; i < len(body); {
		head := strings.TrimRight(body[i], " \t")
		lineNo := i + 2
		switch {
		case strings.HasPrefix(head, patchAdd):
			op := patchOp{kind: "add", path: strings.TrimSpace(strings.TrimPrefix(head, patchAdd))}
			i++
			for i < len(body) && !isFileHeader(body[i]) {
				l, ok := strings.CutPrefix(body[i], "+")
				if !ok {
					return nil, fmt.Errorf("patch line %d: every line of an added file starts with +, got %q", i+2, body[i])
				}
				op.lines = append(op.lines, l)
				i++
			}
			ops = append(ops, op)
		case strings.HasPrefix(head, patchDelete):
			ops = append(ops, patchOp{kind: "delete", path: strings.TrimSpace(strings.TrimPrefix(head, patchDelete))})
			i++
		case strings.HasPrefix(head, patchUpdate):
			op := patchOp{kind: "update", path: strings.TrimSpace(strings.TrimPrefix(head, patchUpdate))}
			i++
			if i < len(body) && strings.HasPrefix(body[i], patchMove) {
				op.moveTo = strings.TrimSpace(strings.TrimPrefix(body[i], patchMove))
				i++
			}
			var err error
			op.chunks, i, err = parseChunks(body, i)
			if err != nil {
				return nil, err
			}
			if len(op.chunks) == 0 && op.moveTo == "" {
				return nil, fmt.Errorf("patch line %d: the update of %s has no changes", lineNo, op.path)
			}
			ops = append(ops, op)
		case strings.TrimSpace(head) == "":
			i++
		default:
			return nil, fmt.Errorf("patch line %d: expected %q, %q or %q, got %q", lineNo, patchAdd, patchUpdate, patchDelete, body[i])
		}
		if n := len(ops); n > 0 && ops[n-1].path == "" {
			return nil, fmt.Errorf("patch line %d: the file operation names no path", lineNo)
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("the patch changes no file")
	}
	return ops, nil
}

func isFileHeader(line string) bool {
	return strings.HasPrefix(line, patchAdd) || strings.HasPrefix(line, patchDelete) ||
		strings.HasPrefix(line, patchUpdate) || strings.TrimRight(line, " \t") == patchEnd
}

// parseChunks reads an update's chunks from body[i:] up to the next file operation.
func parseChunks(body []string, i int) ([]patchChunk, int, error) {
	var chunks []patchChunk
	var cur *patchChunk
	started := false // the current chunk has a line already
	for i < len(body) && !isFileHeader(body[i]) {
		line := body[i]
		lineNo := i + 2
		i++
		switch {
		case line == "@@" || strings.HasPrefix(line, "@@ "):
			chunks = append(chunks, patchChunk{anchor: strings.TrimSpace(strings.TrimPrefix(line, "@@")), line: lineNo})
			cur, started = &chunks[len(chunks)-1], false
			continue
		case strings.TrimRight(line, " \t") == patchEOF:
			if cur == nil || !started {
				return nil, i, fmt.Errorf("patch line %d: %q ends no chunk", lineNo, patchEOF)
			}
			cur.atEnd = true
			cur = nil
			continue
		}
		if cur == nil {
			// The first chunk may leave out its @@ line.
			chunks = append(chunks, patchChunk{line: lineNo})
			cur = &chunks[len(chunks)-1]
		}
		switch {
		case line == "":
			// An empty line is an empty context line whose leading space an editor trimmed.
			cur.lines = append(cur.lines, lineOp{' ', ""})
		case line[0] == ' ' || line[0] == '-' || line[0] == '+':
			cur.lines = append(cur.lines, lineOp{line[0], line[1:]})
		default:
			return nil, i, fmt.Errorf("patch line %d: a changed line starts with ' ', '-' or '+', got %q", lineNo, line)
		}
		started = true
	}
	for _, c := range chunks {
		if len(c.lines) == 0 {
			return nil, i, fmt.Errorf("patch line %d: the chunk has no lines", c.line)
		}
	}
	return chunks, i, nil
}

// applyChunks returns content with an update's chunks applied, in order, each found after the
// previous one. A chunk whose lines are not in the file fails the whole update.
func applyChunks(path, content string, chunks []patchChunk) (string, error) {
	crlf := strings.Contains(content, "\r\n")
	if crlf {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the final newline ends the last line; it is no line of its own
	}
	type replacement struct {
		at, n int
		with  []string
	}
	var reps []replacement
	pos := 0
	for _, c := range chunks {
		if c.anchor != "" {
			at := seekLines(lines, []string{c.anchor}, pos, false)
			if at < 0 {
				return "", fmt.Errorf("patch line %d: the line %q after @@ was not found in %s", c.line, c.anchor, path)
			}
			pos = at + 1
		}
		if len(c.old()) == 0 {
			// Only additions: right after the @@ line when there is one, else at the end of the file.
			at := len(lines)
			if c.anchor != "" {
				at = pos
			}
			reps = append(reps, replacement{at: at, with: c.replace(nil)})
			continue
		}
		old := c.old()
		at := seekLines(lines, old, pos, c.atEnd)
		if n := len(c.lines); at < 0 && c.lines[n-1] == (lineOp{' ', ""}) {
			// A trailing empty context line often stands for the file's end.
			c.lines = c.lines[:n-1]
			old = c.old()
			at = seekLines(lines, old, pos, c.atEnd)
		}
		if at < 0 {
			return "", fmt.Errorf("patch line %d: these lines were not found in %s (after line %d):\n%s", c.line, path, pos, strings.Join(c.old(), "\n"))
		}
		reps = append(reps, replacement{at: at, n: len(old), with: c.replace(lines[at : at+len(old)])})
		pos = at + len(old)
	}
	slices.SortStableFunc(reps, func(a, b replacement) int { return a.at - b.at })
	out := make([]string, 0, len(lines))
	next := 0
	for _, r := range reps {
		if r.at < next {
			return "", fmt.Errorf("two chunks of the patch change the same lines of %s", path)
		}
		out = append(out, lines[next:r.at]...)
		out = append(out, r.with...)
		next = r.at + r.n
	}
	out = append(out, lines[next:]...)
	result := strings.Join(out, "\n")
	if len(out) > 0 {
		result += "\n"
	}
	if crlf {
		result = strings.ReplaceAll(result, "\n", "\r\n")
	}
	return result, nil
}

// seekLines finds want in lines at or after from: exactly first, then ignoring trailing
// whitespace, then ignoring whitespace at both ends (models often get indentation slightly
// wrong, never the words). atEnd looks only where want would end the file. It returns -1 when
// want is nowhere.
func seekLines(lines, want []string, from int, atEnd bool) int {
	if len(want) > len(lines) {
		return -1
	}
	for _, same := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t") == strings.TrimRight(b, " \t") },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
	} {
		start, stop := from, len(lines)-len(want)
		if atEnd {
			start = max(start, stop)
		}
	search:
		for i := start; i <= stop; i++ {
			for j, w := range want {
				if !same(lines[i+j], w) {
					continue search
				}
			}
			return i
		}
	}
	return -1
}
