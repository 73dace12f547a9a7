package tool

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines surround each hunk.
const diffContext = 3

// maxEditDistance bounds the exact (Myers) search. Past it the changed middle of the two texts is
// shown as one removal and one addition: still a correct patch, just not the smallest, and the time
// and memory stay bounded for huge rewrites.
const maxEditDistance = 1000

type lineOp struct {
	kind byte // ' ' kept, '-' removed, '+' added
	text string
}

// fileDiff is the diff of one file, in the shapes the edit and write tools report.
type fileDiff struct {
	Patch     string
	Additions int
	Deletions int
}

// diffFiles compares two versions of a file. name labels the patch (OpenCode labels it with the
// absolute path, and clients render it as is).
func diffFiles(name, before, after string) fileDiff {
	ops := diffLines(splitLines(before), splitLines(after))
	var d fileDiff
	for _, op := range ops {
		switch op.kind {
		case '+':
			d.Additions++
		case '-':
			d.Deletions++
		}
	}
	var b strings.Builder
	b.WriteString("Index: " + name + "\n")
	b.WriteString(strings.Repeat("=", 67) + "\n")
	b.WriteString("--- " + name + "\n")
	b.WriteString("+++ " + name + "\n")
	writeHunks(&b, ops)
	d.Patch = b.String()
	return d
}

// metadata is the filediff object clients show for an edit.
func (d fileDiff) metadata(path, before, after string) map[string]any {
	return map[string]any{
		"file":      path,
		"before":    before,
		"after":     after,
		"additions": d.Additions,
		"deletions": d.Deletions,
	}
}

// splitLines splits text into lines that keep their "\n", so that a last line without one differs
// from the same line with one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []lineOp {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	ops := make([]lineOp, 0, len(a)+len(b))
	for _, l := range a[:prefix] {
		ops = append(ops, lineOp{' ', l})
	}
	ops = append(ops, myers(a[prefix:len(a)-suffix], b[prefix:len(b)-suffix])...)
	for _, l := range a[len(a)-suffix:] {
		ops = append(ops, lineOp{' ', l})
	}
	return ops
}

// myers is the O(ND) greedy shortest-edit-script search, keeping each round's frontier so that the
// path can be walked back.
func myers(a, b []string) []lineOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(a, b)
	}
	limit := min(n+m, maxEditDistance)
	v := make([]int, 2*limit+3)
	off := limit + 1
	var rounds [][]int
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				rounds = append(rounds, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(a, b, rounds)
			}
		}
		rounds = append(rounds, append([]int(nil), v[off-d:off+d+1]...))
	}
	return replaceAll(a, b)
}

func backtrack(a, b []string, rounds [][]int) []lineOp {
	x, y := len(a), len(b)
	var rev []lineOp
	for d := len(rounds) - 1; d > 0; d-- {
		prev := rounds[d-1] // indexed by k + (d-1)
		k := x - y
		at := func(k int) int { return prev[k+d-1] }
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		startX, startY := prevX, prevY
		if prevK == k+1 {
			startY++
		} else {
			startX++
		}
		for x > startX && y > startY {
			x--
			y--
			rev = append(rev, lineOp{' ', a[x]})
		}
		if prevK == k+1 {
			rev = append(rev, lineOp{'+', b[prevY]})
		} else {
			rev = append(rev, lineOp{'-', a[prevX]})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, lineOp{' ', a[x]})
	}
	ops := make([]lineOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

func replaceAll(a, b []string) []lineOp {
	ops := make([]lineOp, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, lineOp{'-', l})
	}
	for _, l := range b {
		ops = append(ops, lineOp{'+', l})
	}
	return ops
}

// writeHunks writes the changes of ops as unified-diff hunks with diffContext lines around them.
func writeHunks(b *strings.Builder, ops []lineOp) {
	i := 0
	for i < len(ops) {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i // one past the last changed op of this hunk
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext, len(ops))
		writeHunk(b, ops, start, stop)
		i = stop
	}
}

func writeHunk(b *strings.Builder, ops []lineOp, start, stop int) {
	oldLine, newLine := 1, 1
	for _, op := range ops[:start] {
		if op.kind != '+' {
			oldLine++
		}
		if op.kind != '-' {
			newLine++
		}
	}
	oldCount, newCount := 0, 0
	for _, op := range ops[start:stop] {
		if op.kind != '+' {
			oldCount++
		}
		if op.kind != '-' {
			newCount++
		}
	}
	if oldCount == 0 {
		oldLine--
	}
	if newCount == 0 {
		newLine--
	}
	fmt.Fprintf(b, "@@ -%d,%d +%d,%d @@\n", oldLine, oldCount, newLine, newCount)
	for _, op := range ops[start:stop] {
		b.WriteByte(op.kind)
		text, hasNewline := strings.CutSuffix(op.text, "\n")
		b.WriteString(text)
		b.WriteByte('\n')
		if !hasNewline {
			b.WriteString("\\ No newline at end of file\n")
		}
	}
}
