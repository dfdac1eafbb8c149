package provider_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider"
)

func TestLoadConfig(t *testing.T) {
	t.Setenv("TEST_OPENAI_API_KEY", "sk-openai-secret")
	t.Setenv("TEST_ANTHROPIC_API_KEY", "sk-ant-secret")
	wantModels := []provider.ModelConfig{
		{Name: "gpt-4o", Kind: "openai", BaseURL: "https://api.openai.com/v1", APIKey: "sk-openai-secret", UpstreamModel: "gpt-4o", Timeout: 30 * time.Second, MaxRetries: 2},
		{Name: "claude-3-5-sonnet", Kind: "anthropic", BaseURL: "https://api.anthropic.com", APIKey: "sk-ant-secret", UpstreamModel: "claude-3-5-sonnet-latest", Timeout: provider.DefaultTimeout, MaxRetries: 0},
		{Name: "llama", Kind: "openai", BaseURL: "http://127.0.0.1:11434/v1", UpstreamModel: "llama3.1:8b", Timeout: provider.DefaultTimeout, MaxRetries: 4},
		{Name: "echo", Kind: "echo", UpstreamModel: "echo", Timeout: provider.DefaultTimeout, EchoPrefix: "[echo] "},
	}
	wantFallbacks := map[string][]string{"gpt-4o": {"claude-3-5-sonnet", "echo"}, "llama": {"echo"}}
	for _, file := range []string{"models.json", "models.yaml"} {
		t.Run(file, func(t *testing.T) {
			models, fallbacks, err := provider.LoadConfig(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(models, wantModels) {
				t.Errorf("models\n%+v\nwant\n%+v", models, wantModels)
			}
			if !reflect.DeepEqual(fallbacks, wantFallbacks) {
				t.Errorf("fallbacks %v; want %v", fallbacks, wantFallbacks)
			}
			if _, err := provider.NewRouter(models, fallbacks, provider.Options{}); err != nil {
				t.Errorf("NewRouter: %v", err)
			}
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Setenv("TEST_KEY", "sk-secret-value")
	tests := []struct {
		name    string
		file    string
		content string
		wantErr string
	}{
		{"unknown key json", "c.json", `{"models":[{"name":"a","kind":"echo","colour":"red"}]}`, `unknown field "colour"`},
		{"inline api_key is refused", "c.json", `{"models":[{"name":"a","kind":"openai","api_key":"sk-x"}]}`, `unknown field "api_key"`},
		{"unknown key yaml", "c.yaml", "models:\n  - name: a\n    kind: echo\n    colour: red\n", "field colour not found"},
		{"unknown top-level key", "c.yml", "models: []\nretries: 3\n", "field retries not found"},
		{"trailing data", "c.json", `{"models":[{"name":"a","kind":"echo"}]} {}`, "data after"},
		{"two YAML documents", "c.yaml", "models:\n  - {name: a, kind: echo}\n---\nmodels: []\n", "more than one YAML document"},
		{"empty YAML", "c.yaml", "", "empty file"},
		{"wrong extension", "c.toml", `models = []`, `extension ".toml"`},
		{"no models", "c.json", `{"models":[]}`, "no models"},
		{"unknown kind", "c.json", `{"models":[{"name":"a","kind":"bard"}]}`, `unknown kind "bard"`},
		{"duplicate", "c.json", `{"models":[{"name":"a","kind":"echo"},{"name":"a","kind":"echo"}]}`, `duplicate model name "a"`},
		{"bad URL", "c.json", `{"models":[{"name":"a","kind":"openai","base_url":"localhost:8000"}]}`, "scheme must be http or https"},
		{"key env unset", "c.json", `{"models":[{"name":"a","kind":"openai","api_key_env":"TEST_UNSET_KEY_XYZ"}]}`, "TEST_UNSET_KEY_XYZ (api_key_env) is not set"},
		{"bad timeout", "c.json", `{"models":[{"name":"a","kind":"openai","timeout":"30"}]}`, `timeout "30"`},
		{"negative timeout", "c.yaml", "models:\n  - {name: a, kind: openai, timeout: -1s}\n", `timeout "-1s"`},
		{"negative retries", "c.json", `{"models":[{"name":"a","kind":"openai","max_retries":-1}]}`, "max retries -1"},
		{"wrong type", "c.json", `{"models":[{"name":"a","kind":"openai","max_retries":"2"}]}`, "cannot unmarshal"},
		{"fallback to unknown", "c.json", `{"models":[{"name":"a","kind":"echo"}],"fallbacks":{"a":["b"]}}`, `"b" is not a configured model`},
		{"echo with a key", "c.json", `{"models":[{"name":"a","kind":"echo","api_key_env":"TEST_KEY"}]}`, "echo takes no base URL or API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := provider.LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v; want an error with %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if strings.Contains(err.Error(), "sk-secret-value") {
				t.Errorf("error %q shows the key", err)
			}
		})
	}
	if _, _, err := provider.LoadConfig(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v; want fs.ErrNotExist", err)
	}
}
