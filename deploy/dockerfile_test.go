package deploy

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is where the Dockerfile, docker-compose.yml and go.mod live.
const repoRoot = ".."

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line    int // where it starts
	keyword string
	args    string
}

// parseDockerfile reads the Dockerfile's instructions, grouped by build
// stage (each FROM starts one).
func parseDockerfile(t *testing.T) [][]instruction {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]instruction
	var pending strings.Builder
	start := 0
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "#") || (line == "" && pending.Len() == 0) {
			continue
		}
		if pending.Len() == 0 {
			start = n
		}
		if body, more := strings.CutSuffix(line, `\`); more {
			pending.WriteString(body + " ")
			continue
		}
		pending.WriteString(line)
		keyword, args, _ := strings.Cut(pending.String(), " ")
		pending.Reset()
		in := instruction{line: start, keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args)}
		switch {
		case in.keyword == "FROM":
			stages = append(stages, []instruction{in})
		case len(stages) > 0:
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final stage", len(stages))
	}
	return stages
}

// shellWords splits a POSIX shell command line into words, honouring single
// and double quotes and backslashes; enough for a RUN line.
func shellWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			word.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// goBuild is a `VAR=value ... go build ...` command line split into its
// environment and its arguments after "go".
type goBuild struct {
	env  []string
	args []string
}

func parseGoBuild(t *testing.T, line string) goBuild {
	t.Helper()
	words, err := shellWords(line)
	if err != nil {
		t.Fatal(err)
	}
	var b goBuild
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		b.env, words = append(b.env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("%q is not `[VAR=value ...] go build ...`", line)
	}
	b.args = words[1:]
	return b
}

// dockerfileBuild finds the build stage's single `go build` RUN line.
func dockerfileBuild(t *testing.T) (goBuild, string) {
	t.Helper()
	var found []instruction
	for _, in := range parseDockerfile(t)[0] {
		if in.keyword == "RUN" && strings.Contains(in.args, "go build") {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the build stage has %d `go build` RUN lines, want exactly 1: %+v", len(found), found)
	}
	return parseGoBuild(t, found[0].args), found[0].args
}

func TestDockerfileBuildsTheREADMEBinary(t *testing.T) {
	build, line := dockerfileBuild(t)

	t.Run("the README shows the Dockerfile's build line", func(t *testing.T) {
		readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		var readmeLines []string
		for l := range strings.Lines(string(readme)) {
			if strings.Contains(l, "go build") {
				readmeLines = append(readmeLines, strings.TrimSpace(l))
			}
		}
		for _, l := range readmeLines {
			fromREADME := parseGoBuild(t, l)
			if slices.Equal(fromREADME.env, build.env) && slices.Equal(withoutOutput(fromREADME.args), withoutOutput(build.args)) {
				return
			}
		}
		t.Errorf("README.md's go build lines %q differ from the Dockerfile's (apart from -o):\n%s", readmeLines, line)
	})

	t.Run("the build line makes a static binary that answers --version and --help", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds the whole server; skipped with -short")
		}
		binary := filepath.Join(t.TempDir(), "tandem")
		args := slices.Clone(build.args)
		out := slices.Index(args, "-o")
		if out < 0 || out+1 >= len(args) {
			t.Fatalf("the Dockerfile's go build has no -o path: %q", line)
		}
		args[out+1] = binary
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), build.env...)
		if output, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
		}
		assertStatic(t, binary)
		for _, flag := range []string{"--version", "--help"} {
			output, err := exec.Command(binary, flag).CombinedOutput()
			if err != nil || !strings.Contains(string(output), "tandem") {
				t.Errorf("tandem %s: %v, output %q; want success naming tandem", flag, err, output)
			}
		}
	})
}

// installed lists the packages that each `program verb ...` in a RUN line's words installs: the
// words after it up to the end of that command, options left out.
func installed(words []string, program, verb string) []string {
	var packages []string
	for i := 0; i+1 < len(words); i++ {
		if words[i] != program || words[i+1] != verb {
			continue
		}
		for _, w := range words[i+2:] {
			if w == "&&" || w == ";" || strings.HasSuffix(w, ";") || w == "||" {
				if w != ";" && strings.HasSuffix(w, ";") {
					packages = append(packages, strings.TrimSuffix(w, ";"))
				}
				break
			}
			if !strings.HasPrefix(w, "-") {
				packages = append(packages, w)
			}
		}
	}
	return packages
}

// withoutOutput drops "-o path": where the binary is written does not
// change what is built.
func withoutOutput(args []string) []string {
	if i := slices.Index(args, "-o"); i >= 0 && i+1 < len(args) {
		return slices.Concat(args[:i], args[i+2:])
	}
	return args
}

// assertStatic fails unless path is an ELF executable with no program
// interpreter and no shared-library dependencies, i.e. runs on any image.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s is not an ELF binary: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is dynamically linked", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatalf("read %s's dynamic section: %v", path, err)
	}
	if len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", path, libs)
	}
}

func TestDockerfileFinalImage(t *testing.T) {
	stages := parseDockerfile(t)
	final := stages[len(stages)-1]
	last := map[string]string{} // the last value of each instruction
	var all []instruction
	for _, in := range final {
		last[in.keyword] = in.args
		all = append(all, in)
	}

	dockerfile := readFile(t, "Dockerfile")
	t.Run("the build stage is Go 1.26 unless a local base is given", func(t *testing.T) {
		if from := stages[0][0].args; !strings.HasPrefix(from, "${GOLANG_IMAGE} ") ||
			!strings.Contains(dockerfile, "ARG GO_VERSION=1.26\n") || !strings.Contains(dockerfile, "ARG GOLANG_IMAGE=golang:${GO_VERSION}\n") {
			t.Errorf("build stage FROM %q, want ${GOLANG_IMAGE} defaulting to golang:${GO_VERSION} with GO_VERSION=1.26", from)
		}
	})
	t.Run("the runtime base is Alpine unless another is given", func(t *testing.T) {
		if from := final[0].args; from != "${RUNTIME_IMAGE}" || !strings.Contains(dockerfile, "ARG RUNTIME_IMAGE=alpine:${ALPINE_VERSION}\n") {
			t.Errorf("final stage FROM %q, want ${RUNTIME_IMAGE} defaulting to alpine:${ALPINE_VERSION}", from)
		}
	})
	t.Run("the server runs as a user that is not root", func(t *testing.T) {
		if user := last["USER"]; user == "" || user == "root" || user == "0" || strings.HasPrefix(user, "0:") {
			t.Errorf("final USER = %q, want a non-root user", user)
		}
	})
	t.Run("the image has a shell, git, ripgrep and CA certificates on Alpine and on Debian", func(t *testing.T) {
		for _, manager := range [][2]string{{"apk", "add"}, {"apt-get", "install"}} {
			var packages []string
			for _, in := range all {
				if in.keyword != "RUN" {
					continue
				}
				words, err := shellWords(in.args)
				if err != nil {
					t.Fatal(err)
				}
				packages = append(packages, installed(words, manager[0], manager[1])...)
			}
			for _, want := range []string{"bash", "git", "ripgrep", "ca-certificates"} {
				if !slices.Contains(packages, want) {
					t.Errorf("%s %s installs %v, missing %s", manager[0], manager[1], packages, want)
				}
			}
		}
	})
	t.Run("the data directory is a volume and the workspace the working directory", func(t *testing.T) {
		if !strings.Contains(last["ENV"], "XDG_DATA_HOME=/data") || last["VOLUME"] != "/data" || last["WORKDIR"] != "/workspace" {
			t.Errorf("ENV %q, VOLUME %q, WORKDIR %q; want XDG_DATA_HOME=/data, /data, /workspace", last["ENV"], last["VOLUME"], last["WORKDIR"])
		}
	})
	t.Run("the server listens on all interfaces on port 4096 and serves the workspace", func(t *testing.T) {
		want := `["tandem", "serve", "--hostname", "0.0.0.0", "--port", "4096", "--dir", "/workspace"]`
		if last["CMD"] != want || last["EXPOSE"] != "4096" {
			t.Errorf("CMD %s, EXPOSE %q; want %s and 4096", last["CMD"], last["EXPOSE"], want)
		}
	})
	t.Run("the healthcheck script is in the image", func(t *testing.T) {
		if !strings.Contains(last["HEALTHCHECK"], `CMD ["tandem-healthcheck"]`) ||
			!slices.ContainsFunc(all, func(in instruction) bool {
				return in.keyword == "COPY" && in.args == "deploy/healthcheck.sh /usr/local/bin/tandem-healthcheck"
			}) {
			t.Errorf("HEALTHCHECK %q; want it to run tandem-healthcheck copied from deploy/healthcheck.sh", last["HEALTHCHECK"])
		}
	})
	t.Run("no secret is baked into any stage", func(t *testing.T) {
		for _, stage := range stages {
			for _, in := range stage {
				if in.keyword != "ENV" && in.keyword != "ARG" {
					continue
				}
				upper := strings.ToUpper(in.args)
				for _, secret := range []string{"PASSWORD", "API_KEY", "TOKEN", "SECRET"} {
					if strings.Contains(upper, secret) {
						t.Errorf("line %d: %s %s puts a secret in the image", in.line, in.keyword, in.args)
					}
				}
			}
		}
	})
	t.Run("the build context leaves out secrets and history", func(t *testing.T) {
		ignored := strings.Fields(readFile(t, ".dockerignore"))
		for _, want := range []string{".git", ".env", ".tmp"} {
			if !slices.Contains(ignored, want) {
				t.Errorf(".dockerignore lacks %s", want)
			}
		}
	})
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []string
	}{
		{"double quotes keep spaces inside one word", `go build -ldflags="-s -w" ./x`, []string{"go", "build", "-ldflags=-s -w", "./x"}},
		{"single quotes keep backslashes", `echo 'a\b' c`, []string{"echo", `a\b`, "c"}},
		{"a backslash escapes a space", `a\ b c`, []string{"a b", "c"}},
		{"runs of blanks separate words", "a  \t b", []string{"a", "b"}},
		{"an empty quoted word is a word", `a "" b`, []string{"a", "", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shellWords(tt.line)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("shellWords(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
			}
		})
	}
	t.Run("an unterminated quote is an error", func(t *testing.T) {
		if _, err := shellWords(`go build "-ldflags=-s`); err == nil {
			t.Error("want an error")
		}
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGoBuildLinesCompare(t *testing.T) {
	dockerfile := parseGoBuild(t, `CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tandem ./cmd/tandem`)
	tests := []struct {
		name string
		line string
		same bool
	}{
		{"the same flags with another -o path build the same binary", `CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o tandem ./cmd/tandem`, true},
		{"single quotes around the ldflags change nothing", `CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o tandem ./cmd/tandem`, true},
		{"a build without CGO_ENABLED=0 differs", `go build -trimpath -ldflags="-s -w" -o tandem ./cmd/tandem`, false},
		{"a build without -trimpath differs", `CGO_ENABLED=0 go build -ldflags="-s -w" -o tandem ./cmd/tandem`, false},
		{"a plain go build differs", `go build -o tandem ./cmd/tandem`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := parseGoBuild(t, tt.line)
			same := slices.Equal(other.env, dockerfile.env) && slices.Equal(withoutOutput(other.args), withoutOutput(dockerfile.args))
			if same != tt.same {
				t.Errorf("%q same as the Dockerfile's = %v, want %v", tt.line, same, tt.same)
			}
		})
	}
}
