package tool

// DiffStat counts the lines added and removed between two versions of a file, the figures a
// session's summary and GET /session/{id}/diff report.
func DiffStat(before, after string) (additions, deletions int) {
	d := diffFiles("", before, after)
	return d.Additions, d.Deletions
}

// Patch is the unified diff turning before into after, labelled name, with its line counts: the
// patch, additions and deletions of OpenCode's FileDiff.
func Patch(name, before, after string) (patch string, additions, deletions int) {
	d := diffFiles(name, before, after)
	return d.Patch, d.Additions, d.Deletions
}
