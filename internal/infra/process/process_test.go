//go:build unix

package process

import "testing"

func TestParseStatReadsGroupAndSessionAfterTheCommandName(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		want     stat
		wantLive bool
	}{
		{"a plain command is live with its group and session", "42 (sh) S 1 40 41 0 -1", stat{pgrp: 40, sid: 41}, true},
		{"a command name with spaces and parentheses is skipped whole", "42 (a) b (c)) R 1 7 8 0", stat{pgrp: 7, sid: 8}, true},
		{"a zombie is not live", "42 (sh) Z 1 40 41 0", stat{}, false},
		{"a dead process is not live", "42 (sh) X 1 40 41 0", stat{}, false},
		{"a truncated line is not live", "42 (sh) S 1", stat{}, false},
		{"a line without a command name is not live", "garbage", stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, live := parseStat([]byte(tt.raw))
			if got != tt.want || live != tt.wantLive {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.raw, got, live, tt.want, tt.wantLive)
			}
		})
	}
}
