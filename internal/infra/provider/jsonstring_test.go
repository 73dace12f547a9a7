package provider

import (
	"encoding/json"
	"testing"
)

// TestAppendJSONStringReadsBackAsEncodingJSONWrites checks that every string the OpenAI request
// body writes by hand reads back as the string encoding/json would have written.
func TestAppendJSONStringReadsBackAsEncodingJSONWrites(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"plain text is copied", "hello, world"},
		{"quotes and backslashes are escaped", `say "hi" \ bye`},
		{"newlines, tabs and carriage returns are escaped", "a\nb\tc\rd"},
		{"other control characters become \\u escapes", "nul\x00 bell\x07 esc\x1b"},
		{"multi-byte UTF-8 is kept", "héllo — 世界 🎉"},
		{"invalid UTF-8 becomes U+FFFD", "bad \xff\xfe byte"},
		{"line and paragraph separators are escaped", "a\u2028b\u2029c"},
		{"HTML characters stay valid", "<script>&</script>"},
		{"the empty string is two quotes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) { checkJSONString(t, tc.in) })
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\xff", "\u2028", "\x01\x1f"} {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func checkJSONString(t *testing.T, in string) {
	out := appendJSONString([]byte("x"), in)
	if out[0] != 'x' {
		t.Fatalf("the prefix was overwritten: %q", out)
	}
	var got string
	if err := json.Unmarshal(out[1:], &got); err != nil {
		t.Fatalf("%q is not a JSON string: %v", out[1:], err)
	}
	std, _ := json.Marshal(in)
	var want string
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("reads back as %q, encoding/json's as %q", got, want)
	}
}
