package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/tandem-dev/tandem/internal/testenv"
)

// composeFile is the part of `docker-compose config` output the tests read.
type composeFile struct {
	Services map[string]struct {
		Build     any      `yaml:"build"`
		Image     string   `yaml:"image"`
		User      string   `yaml:"user"`
		Ports     []string `yaml:"ports"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Environment map[string]*string `yaml:"environment"`
		Volumes     []string           `yaml:"volumes"`
		Profiles    []string           `yaml:"profiles"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// dockerCompose finds Debian's docker-compose. CI installs it, so there
// (CI=true) its absence fails the test instead of skipping it.
func dockerCompose(t *testing.T) string {
	t.Helper()
	return testenv.Program(t, "docker-compose", "apt-get install docker-compose")
}

// composeConfig runs docker-compose on the repository's compose file with
// exactly the given variables set (plus PATH and HOME, which docker-compose
// itself needs) and an empty env file, so neither the host's settings nor a
// developer's .env can leak in.
func composeConfig(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	return composeFileConfig(t, "docker-compose.yml", env, args...)
}

// composeFileConfig is composeConfig for another compose file of the repository.
func composeFileConfig(t *testing.T, file string, env map[string]string, args ...string) (string, error) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The project directory is the compose file's own, as when a user runs docker-compose -f FILE.
	cmd := exec.Command(dockerCompose(t), append([]string{
		"--project-directory", filepath.Dir(filepath.Join(root, file)), "-f", filepath.Join(root, file), "--env-file", envFile,
	}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestComposeFile(t *testing.T) {
	password := "correct horse battery staple"
	out, err := composeConfig(t, map[string]string{"TANDEM_SERVER_PASSWORD": password}, "config")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var config composeFile
	if err := yaml.Unmarshal([]byte(out), &config); err != nil {
		t.Fatalf("parse docker-compose config output: %v\n%s", err, out)
	}
	tandem, ok := config.Services["tandem"]
	if !ok {
		t.Fatalf("no tandem service in:\n%s", out)
	}

	t.Run("tandem is built from the Dockerfile beside the compose file", func(t *testing.T) {
		if tandem.Build == nil {
			t.Errorf("the tandem service has no build section")
		}
	})
	t.Run("the database lives on a named volume", func(t *testing.T) {
		if !slices.Contains(tandem.Volumes, "tandem-data:/data:rw") || config.Volumes["tandem-data"] == nil {
			t.Errorf("volumes %q, top-level %v; want the named volume tandem-data at /data", tandem.Volumes, config.Volumes)
		}
	})
	t.Run("the project directory is the workspace", func(t *testing.T) {
		root, _ := filepath.Abs(repoRoot)
		if !slices.Contains(tandem.Volumes, root+":/workspace:rw") {
			t.Errorf("volumes %q; want %s mounted at /workspace", tandem.Volumes, root)
		}
	})
	t.Run("the password comes from the environment", func(t *testing.T) {
		if got := tandem.Environment["TANDEM_SERVER_PASSWORD"]; got == nil || *got != password {
			t.Errorf("TANDEM_SERVER_PASSWORD = %v, want the environment's value", got)
		}
	})
	t.Run("the image compose builds is tandem:local", func(t *testing.T) {
		if tandem.Image != "tandem:local" {
			t.Errorf("image %q, want tandem:local", tandem.Image)
		}
	})
	t.Run("provider keys and the default model pass through only when set", func(t *testing.T) {
		for _, key := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "TANDEM_MODEL"} {
			value, listed := tandem.Environment[key]
			if !listed || value != nil {
				t.Errorf("%s: listed=%v value=%v; want listed without a value (taken from the environment when set)", key, listed, value)
			}
		}
	})
	t.Run("the port is published on loopback unless asked otherwise", func(t *testing.T) {
		if !slices.Equal(tandem.Ports, []string{"127.0.0.1:4096:4096/tcp"}) {
			t.Errorf("ports %q, want 127.0.0.1:4096:4096/tcp", tandem.Ports)
		}
	})
	t.Run("the healthcheck runs the image's health script", func(t *testing.T) {
		if !slices.Equal(tandem.Healthcheck.Test, []string{"CMD", "tandem-healthcheck"}) {
			t.Errorf("healthcheck test %q, want [CMD tandem-healthcheck]", tandem.Healthcheck.Test)
		}
	})
	t.Run("Ollama is only in the ollama profile", func(t *testing.T) {
		ollama, ok := config.Services["ollama"]
		if !ok || !slices.Equal(ollama.Profiles, []string{"ollama"}) || len(tandem.Profiles) != 0 {
			t.Errorf("ollama service present=%v profiles=%q, tandem profiles=%q; want ollama only under the ollama profile",
				ok, ollama.Profiles, tandem.Profiles)
		}
	})
}

func TestComposeRefusesToStartWithoutAPassword(t *testing.T) {
	out, err := composeConfig(t, nil, "config")
	if err == nil || !strings.Contains(out, "set a password") {
		t.Fatalf("docker-compose config without TANDEM_SERVER_PASSWORD: err=%v, output:\n%s\nwant a failure saying to set a password", err, out)
	}
}

// TestComposeWiresOllamaWhenAsked: docker-compose 1.29's config lists every
// service whatever the profile, so only the wiring is checked here; that
// Ollama sits in its own profile is checked by TestComposeFile.
func TestComposeWiresOllamaWhenAsked(t *testing.T) {
	out, err := composeConfig(t, map[string]string{
		"TANDEM_SERVER_PASSWORD": "pw", "COMPOSE_PROFILES": "ollama",
		"OPENAI_BASE_URL": "http://ollama:11434/v1", "OPENAI_API_KEY": "ollama", "TANDEM_MODEL": "openai/qwen2.5-coder:7b",
	}, "config")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var config composeFile
	if err := yaml.Unmarshal([]byte(out), &config); err != nil {
		t.Fatal(err)
	}
	env := config.Services["tandem"].Environment
	for key, want := range map[string]string{"OPENAI_BASE_URL": "http://ollama:11434/v1", "OPENAI_API_KEY": "ollama", "TANDEM_MODEL": "openai/qwen2.5-coder:7b"} {
		if got := env[key]; got == nil || *got != want {
			t.Errorf("%s = %v, want %s", key, got, want)
		}
	}
}

// TestClusterComposeFile checks deploy/docker-compose.cluster.yml, two nodes on one PostgreSQL;
// test/integration/cluster_test.go runs such nodes for real.
func TestClusterComposeFile(t *testing.T) {
	out, err := composeFileConfig(t, "deploy/docker-compose.cluster.yml",
		map[string]string{"TANDEM_SERVER_PASSWORD": "pw", "POSTGRES_PASSWORD": "pg"}, "config")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var config composeFile
	if err := yaml.Unmarshal([]byte(out), &config); err != nil {
		t.Fatalf("parse docker-compose config output: %v\n%s", err, out)
	}
	postgres, ok := config.Services["postgres"]
	if !ok {
		t.Fatalf("no postgres service in:\n%s", out)
	}
	t.Run("PostgreSQL keeps its data on a volume and says when it is ready", func(t *testing.T) {
		if !slices.Contains(postgres.Volumes, "postgres-data:/var/lib/postgresql/data:rw") || len(postgres.Healthcheck.Test) == 0 {
			t.Errorf("postgres volumes %q, healthcheck %q; want postgres-data and a healthcheck", postgres.Volumes, postgres.Healthcheck.Test)
		}
		if got := postgres.Environment["POSTGRES_PASSWORD"]; got == nil || *got != "pg" {
			t.Errorf("POSTGRES_PASSWORD = %v, want the environment's", got)
		}
	})
	for node, port := range map[string]string{"tandem-1": "4096", "tandem-2": "4097"} {
		tandem, ok := config.Services[node]
		if !ok {
			t.Fatalf("no %s service in:\n%s", node, out)
		}
		t.Run(node+" is built from the Dockerfile and published on loopback port "+port, func(t *testing.T) {
			if tandem.Build == nil || !slices.Equal(tandem.Ports, []string{"127.0.0.1:" + port + ":4096/tcp"}) {
				t.Errorf("build %v, ports %q", tandem.Build, tandem.Ports)
			}
		})
		t.Run(node+" has a data volume of its own and serves the project", func(t *testing.T) {
			root, _ := filepath.Abs(repoRoot)
			if !slices.Contains(tandem.Volumes, node+"-data:/data:rw") || !slices.Contains(tandem.Volumes, root+":/workspace:rw") {
				t.Errorf("volumes %q", tandem.Volumes)
			}
		})
		t.Run(node+" starts once PostgreSQL is healthy and is told where it is", func(t *testing.T) {
			url := tandem.Environment["TANDEM_DATABASE_URL"]
			if tandem.DependsOn["postgres"].Condition != "service_healthy" || url == nil || !strings.Contains(*url, ":pg@postgres:5432/") {
				t.Errorf("depends_on %v, TANDEM_DATABASE_URL %v", tandem.DependsOn, url)
			}
		})
		t.Run(node+" is named and tells the other node where to reach it", func(t *testing.T) {
			id, advertise := tandem.Environment["TANDEM_NODE_ID"], tandem.Environment["TANDEM_ADVERTISE_URL"]
			if id == nil || *id != node || advertise == nil || *advertise != "http://"+node+":4096" {
				t.Errorf("TANDEM_NODE_ID %v, TANDEM_ADVERTISE_URL %v", id, advertise)
			}
		})
		t.Run(node+" takes the password from the environment and runs the image's healthcheck", func(t *testing.T) {
			if got := tandem.Environment["TANDEM_SERVER_PASSWORD"]; got == nil || *got != "pw" ||
				!slices.Equal(tandem.Healthcheck.Test, []string{"CMD", "tandem-healthcheck"}) {
				t.Errorf("TANDEM_SERVER_PASSWORD %v, healthcheck %q", got, tandem.Healthcheck.Test)
			}
		})
	}
	t.Run("without a database password it refuses to start", func(t *testing.T) {
		out, err := composeFileConfig(t, "deploy/docker-compose.cluster.yml", map[string]string{"TANDEM_SERVER_PASSWORD": "pw"}, "config")
		if err == nil || !strings.Contains(out, "set the database password") {
			t.Errorf("err=%v, output:\n%s\nwant a failure saying to set the database password", err, out)
		}
	})
}
