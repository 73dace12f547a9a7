package provider

import "testing"

func TestCleanTitle(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "a plain answer is kept", in: "Fix flaky login test", want: "Fix flaky login test"},
		{name: "quotes, a label and a period go", in: "Title: \"Fix flaky login test.\"", want: "Fix flaky login test"},
		{name: "only the first non-empty line counts", in: "\n\n  Add dark mode  \nBecause the user asked", want: "Add dark mode"},
		{name: "markdown emphasis goes", in: "**Refactor the store**", want: "Refactor the store"},
		{name: "a long answer is cut with an ellipsis", in: "Investigate why the nightly build of the documentation site fails on arm64", want: "Investigate why the nightly build of the document…"},
		{name: "nothing stays nothing", in: "  \n ", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CleanTitle(tc.in); got != tc.want {
				t.Fatalf("CleanTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTheDemoModelTitlesAPromptByWhatItDoes(t *testing.T) {
	tests := []struct{ name, prompt, want string }{
		{name: "a command", prompt: "run: echo hi", want: "Run echo hi"},
		{name: "a read", prompt: "read: README.md", want: "Read README.md"},
		{name: "a write names the file, not its content", prompt: "write: notes.txt\nhello\n", want: "Write notes.txt"},
		{name: "a question", prompt: "ask: Which DB? | Postgres | SQLite", want: "Question: Which DB?"},
		{name: "an MCP call", prompt: `mcp: everything echo {"message":"hi"}`, want: "Call echo on everything"},
		{name: "plain text is capitalised", prompt: "explain the build\nin detail", want: "Explain the build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Model: DemoID, System: []string{TitleSystem}, Messages: []Message{{Role: RoleUser, Text: tc.prompt}}}
			if !IsTitleRequest(req) {
				t.Fatal("not seen as a title request")
			}
			for range 2 { // the same prompt, the same title
				if got := demoReply(req); got.text != tc.want || got.call != nil {
					t.Fatalf("title of %q = %+v, want %q", tc.prompt, got, tc.want)
				}
			}
		})
	}
}
