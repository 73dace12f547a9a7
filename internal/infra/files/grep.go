package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Text is one piece of text in ripgrep's JSON output.
type Text struct {
	Text string `json:"text" required:"true"`
}

// Submatch is one match inside a line: its text and byte offsets in the line.
type Submatch struct {
	Match Text `json:"match" required:"true"`
	Start int  `json:"start" required:"true" minimum:"0"`
	End   int  `json:"end" required:"true" minimum:"0"`
}

// TextMatch is one matching line, OpenCode's (and ripgrep's) match shape.
type TextMatch struct {
	Path           Text       `json:"path" required:"true" description:"Relative to the project directory."`
	Lines          Text       `json:"lines" required:"true" description:"The matching line, with its line ending."`
	LineNumber     int        `json:"line_number" required:"true" minimum:"0"`
	AbsoluteOffset int        `json:"absolute_offset" required:"true" minimum:"0" description:"Byte offset of the line in the file."`
	Submatches     []Submatch `json:"submatches" required:"true"`
}

// rgText is ripgrep's arbitrary data: text, or base64 bytes when it is not valid UTF-8.
type rgText struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (t rgText) String() string {
	if t.Text != nil {
		return *t.Text
	}
	if t.Bytes != nil {
		if b, err := base64.StdEncoding.DecodeString(*t.Bytes); err == nil {
			return strings.ToValidUTF8(string(b), "\uFFFD")
		}
	}
	return ""
}

type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path           rgText `json:"path"`
		Lines          rgText `json:"lines"`
		LineNumber     int    `json:"line_number"`
		AbsoluteOffset int    `json:"absolute_offset"`
		Submatches     []struct {
			Match rgText `json:"match"`
			Start int    `json:"start"`
			End   int    `json:"end"`
		} `json:"submatches"`
	} `json:"data"`
}

// Grep searches the files under dir for pattern (a ripgrep regular expression) with ripgrep, which
// respects .gitignore (in or out of a git work tree, as the file index does), and returns up to limit
// matching lines. Hidden files are searched; .git is not.
func Grep(ctx context.Context, dir, pattern string, limit int) ([]TextMatch, error) {
	if pattern == "" {
		return nil, errs.E(errs.Invalid, "pattern: must not be empty")
	}
	rg, err := exec.LookPath("rg")
	if err != nil {
		return nil, errs.E(errs.Unavailable, "text search needs ripgrep (rg) on the server's PATH")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, rg, "--json", "--hidden", "--no-require-git", "--glob", "!.git", "--max-columns", "2000",
		"--max-filesize", "10M", "--regexp", pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start rg: %w", err)
	}
	out := []TextMatch{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() && len(out) < limit {
		var m rgMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Type != "match" {
			continue
		}
		tm := TextMatch{
			Path:           Text{strings.TrimPrefix(m.Data.Path.String(), "./")},
			Lines:          Text{m.Data.Lines.String()},
			LineNumber:     m.Data.LineNumber,
			AbsoluteOffset: m.Data.AbsoluteOffset,
			Submatches:     make([]Submatch, 0, len(m.Data.Submatches)),
		}
		for _, s := range m.Data.Submatches {
			tm.Submatches = append(tm.Submatches, Submatch{Match: Text{s.Match.String()}, Start: s.Start, End: s.End})
		}
		out = append(out, tm)
	}
	full := len(out) >= limit
	if full {
		cancel() // enough: stop ripgrep rather than read the rest
	}
	_, _ = bytes.NewBuffer(nil).ReadFrom(stdout)
	err = cmd.Wait()
	if full || err == nil {
		return out, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case 1: // no match
			return out, nil
		case 2:
			msg := strings.TrimSpace(stderr.String())
			if strings.Contains(msg, "regex parse error") || strings.Contains(msg, "error parsing regex") {
				return nil, errs.E(errs.Invalid, "pattern: %s", firstLines(msg, 6))
			}
			if len(out) > 0 {
				return out, nil // some files were unreadable; what was found stands
			}
			if msg == "" {
				return out, nil
			}
			return nil, fmt.Errorf("rg: %s", firstLines(msg, 6))
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	return nil, fmt.Errorf("rg: %w", err)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
