package manpage

import "testing"

func TestRoffText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a backslash is printed, not read as an escape", `C:\dir`, `C:\edir`},
		{"a line that starts with a dot stays text", "see\n.tandem/command", "see\n\\&.tandem/command"},
		{"a line that starts with a quote stays text", "'quoted'", `\&'quoted'`},
		{"plain text is unchanged", "tandem serve --port 4096", "tandem serve --port 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := roffText(tc.in); got != tc.want {
				t.Errorf("roffText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
