package files

import (
	"container/heap"
	"runtime"
	"strings"
	"sync"
)

// Kind says which entries a search returns.
type Kind string

// The kinds of entry a search can return.
const (
	KindAll       Kind = ""          // files and directories
	KindFile      Kind = "file"      // files only
	KindDirectory Kind = "directory" // directories only
)

// Search returns up to limit entries of l ranked by how well they match query, a fuzzy pattern:
// its characters must appear in order (case-insensitively); matches at the start of a path segment or
// a word, runs of consecutive characters and matches in the file's own name rank higher, and so do
// shorter paths. Words separated by spaces must each match. Directories end with "/".
//
// With an empty query, files come in path order (KindFile), otherwise directories do. Hidden
// directories (".github/…") come after the others when only directories are searched, unless the
// query itself asks for a hidden name (as OpenCode orders them).
func (l *Listing) Search(query string, kind Kind, limit int) []string {
	query = strings.TrimSpace(strings.ReplaceAll(query, `\`, "/"))
	preferHidden := strings.HasPrefix(query, ".") || strings.Contains(query, "/.")
	hiddenLast := !preferHidden && kind == KindDirectory
	if limit <= 0 {
		return []string{}
	}
	if query == "" {
		if kind == KindFile {
			return firstN(l.Files, limit)
		}
		return firstN(hiddenLastOrder(l.Dirs), limit)
	}
	words := strings.Fields(foldASCII(query))
	lo, hi := 0, len(l.Files)+len(l.Dirs)
	switch kind {
	case KindFile:
		hi = len(l.Files)
	case KindDirectory:
		lo = len(l.Files)
	}
	h := l.searchRange(words, lo, hi, limit, hiddenLast)
	out := make([]string, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(match).path
	}
	return out
}

// parallelFrom is the number of candidates above which a search is split across processors.
const parallelFrom = 20_000

// searchRange ranks entries lo..hi-1, split across the processors when there are many.
func (l *Listing) searchRange(words []string, lo, hi, limit int, hiddenLast bool) *matchHeap {
	workers := runtime.GOMAXPROCS(0)
	if hi-lo < parallelFrom || workers < 2 {
		return l.rank(words, lo, hi, limit, hiddenLast)
	}
	parts := make([]*matchHeap, workers)
	var wg sync.WaitGroup
	step := (hi - lo + workers - 1) / workers
	for w := range workers {
		from, to := lo+w*step, min(lo+(w+1)*step, hi)
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = l.rank(words, from, to, limit, hiddenLast)
		}()
	}
	wg.Wait()
	h := parts[0]
	for _, p := range parts[1:] {
		for _, m := range p.items {
			h.offer(m, limit)
		}
	}
	return h
}

// rank scores entries lo..hi-1 and keeps the best limit.
func (l *Listing) rank(words []string, lo, hi, limit int, hiddenLast bool) *matchHeap {
	h := &matchHeap{}
	for i := lo; i < hi; i++ {
		folded := l.folded[i]
		orig := l.entry(i)
		total := 0
		ok := true
		for _, w := range words {
			s, matched := score(w, folded, orig)
			if !matched {
				ok = false
				break
			}
			total += s
		}
		if ok {
			h.offer(match{path: orig, score: total, hidden: hiddenLast && isHidden(orig)}, limit)
		}
	}
	return h
}

// offer keeps m if it is among the best limit seen.
func (h *matchHeap) offer(m match, limit int) {
	if h.Len() < limit {
		heap.Push(h, m)
	} else if m.better(h.items[0]) {
		h.items[0] = m
		heap.Fix(h, 0)
	}
}

func (l *Listing) entry(i int) string {
	if i < len(l.Files) {
		return l.Files[i]
	}
	return l.Dirs[i-len(l.Files)]
}

func firstN(list []string, n int) []string {
	if len(list) < n {
		n = len(list)
	}
	return append([]string{}, list[:n]...)
}

func hiddenLastOrder(list []string) []string {
	var visible, hidden []string
	for _, s := range list {
		if isHidden(s) {
			hidden = append(hidden, s)
		} else {
			visible = append(visible, s)
		}
	}
	return append(visible, hidden...)
}

// isHidden says whether any segment of p starts with a dot.
func isHidden(p string) bool {
	p = strings.TrimSuffix(p, "/")
	for i := 0; i < len(p); i++ {
		if p[i] == '.' && (i == 0 || p[i-1] == '/') && i+1 < len(p) && p[i+1] != '/' && p[i+1] != '.' {
			return true
		}
	}
	return false
}

type match struct {
	path   string
	score  int
	hidden bool
}

// better orders matches: visible before hidden (when that applies), higher score, shorter path, then
// by path.
func (m match) better(o match) bool {
	if m.hidden != o.hidden {
		return !m.hidden
	}
	if m.score != o.score {
		return m.score > o.score
	}
	if len(m.path) != len(o.path) {
		return len(m.path) < len(o.path)
	}
	return m.path < o.path
}

// matchHeap keeps the best matches with the worst on top.
type matchHeap struct{ items []match }

func (h *matchHeap) Len() int           { return len(h.items) }
func (h *matchHeap) Less(i, j int) bool { return h.items[j].better(h.items[i]) }
func (h *matchHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *matchHeap) Push(x any)         { h.items = append(h.items, x.(match)) }
func (h *matchHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// Scoring weights. A matched character is worth scoreMatch; the bonuses reward where it sits.
const (
	scoreMatch       = 16
	bonusSegment     = 30 // first character of a path segment
	bonusWord        = 22 // after _ - . or space
	bonusCamel       = 18 // an upper-case letter after a lower-case one
	bonusConsecutive = 20 // right after the previous matched character
	bonusBaseStart   = 24 // the query starts the file's own name
	bonusBaseExact   = 80 // the query is the file's name, or its name without the extension
	penaltyGapStart  = 6
	penaltyGapChar   = 1
	penaltyGapMax    = 20
)

// score rates one word q (folded) against a path: folded is the path ASCII lower-cased, orig the path.
// ok is false when q is not a subsequence of the path.
func score(q, folded, orig string) (int, bool) {
	if len(q) > len(folded) {
		return 0, false
	}
	// Quick rejection, and the end of the first complete match (IndexByte is vectorised).
	end := -1
	for qi := 0; qi < len(q); qi++ {
		i := strings.IndexByte(folded[end+1:], q[qi])
		if i < 0 {
			return 0, false
		}
		end += i + 1
	}
	trimmed := strings.TrimSuffix(folded, "/")
	baseStart := strings.LastIndexByte(trimmed, '/') + 1
	best := windowScore(q, folded, orig, tightest(q, folded, 0, end), baseStart)
	// A match inside the file's own name usually beats one spread over its directories.
	if baseStart > 0 {
		if s, ok := subsequenceFrom(q, folded, baseStart); ok {
			if w := windowScore(q, folded, orig, tightest(q, folded, baseStart, s), baseStart); w > best {
				best = w
			}
		}
	}
	base := trimmed[baseStart:]
	if base == q || (strings.HasPrefix(base, q) && strings.IndexByte(base[len(q):], '.') == 0 && strings.Count(base[len(q):], ".") == 1) {
		best += bonusBaseExact
	}
	return best - len(orig)/4, true
}

// subsequenceFrom finds q in folded starting at from and returns the index of its last character.
func subsequenceFrom(q, folded string, from int) (int, bool) {
	qi := 0
	for i := from; i < len(folded); i++ {
		if folded[i] == q[qi] {
			qi++
			if qi == len(q) {
				return i, true
			}
		}
	}
	return 0, false
}

// tightest walks back from end (where a match of q ends) to the latest start at or after lo from
// which q still matches: the shortest window ending there. It is -1 when there is none.
func tightest(q, folded string, lo, end int) int {
	if end < lo || end >= len(folded) {
		return -1
	}
	qi := len(q) - 1
	for i := end; i >= lo; i-- {
		if folded[i] == q[qi] {
			if qi == 0 {
				return i
			}
			qi--
		}
	}
	return -1
}

// windowScore scores the greedy match of q in folded starting at start.
func windowScore(q, folded, orig string, start, baseStart int) int {
	if start < 0 {
		return -1 << 30
	}
	s := 0
	prev := -1
	qi := 0
	for i := start; i < len(folded) && qi < len(q); i++ {
		if folded[i] != q[qi] {
			continue
		}
		s += scoreMatch
		switch {
		case i == 0 || orig[i-1] == '/':
			s += bonusSegment
		case orig[i-1] == '_' || orig[i-1] == '-' || orig[i-1] == '.' || orig[i-1] == ' ':
			s += bonusWord
		case isUpper(orig[i]) && isLower(orig[i-1]):
			s += bonusCamel
		}
		if qi == 0 && i == baseStart {
			s += bonusBaseStart
		}
		if prev >= 0 {
			if i == prev+1 {
				s += bonusConsecutive
			} else {
				s -= min(penaltyGapStart+penaltyGapChar*(i-prev-1), penaltyGapMax)
			}
		}
		prev = i
		qi++
	}
	return s
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
