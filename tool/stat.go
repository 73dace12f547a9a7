package tool

// DiffStat counts the lines added and removed between two versions of a file, the figures a
// session's summary and GET /session/{id}/diff report.
func DiffStat(before, after string) (additions, deletions int) {
	d := diffFiles("", before, after)
	return d.Additions, d.Deletions
}
