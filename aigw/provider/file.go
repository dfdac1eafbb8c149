package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"
)

// FileConfig is the models section of a configuration file (JSON or YAML); README.md shows it.
// A gateway with a file of its own can embed it and call Resolve.
type FileConfig struct {
	Models    []FileModel         `json:"models" yaml:"models"`
	Fallbacks map[string][]string `json:"fallbacks,omitempty" yaml:"fallbacks,omitempty"`
}

// FileModel is one model in a configuration file. The API key is never in the file: it comes
// from the environment variable APIKeyEnv names.
type FileModel struct {
	Name          string `json:"name" yaml:"name"`
	Kind          string `json:"kind" yaml:"kind"`
	BaseURL       string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	APIKeyEnv     string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"` // "" = no key
	UpstreamModel string `json:"upstream_model,omitempty" yaml:"upstream_model,omitempty"`
	Timeout       string `json:"timeout,omitempty" yaml:"timeout,omitempty"`         // Go duration ("30s"); "" = DefaultTimeout
	MaxRetries    *int   `json:"max_retries,omitempty" yaml:"max_retries,omitempty"` // absent = DefaultMaxRetries
	EchoPrefix    string `json:"echo_prefix,omitempty" yaml:"echo_prefix,omitempty"`
}

// LoadConfig reads a configuration file, .json or .yaml/.yml, strictly (unknown keys, trailing
// data and a second YAML document are errors), takes API keys from the environment and checks
// the result as NewRouter does.
func LoadConfig(path string) ([]ModelConfig, map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("provider.LoadConfig: %w", err)
	}
	var f FileConfig
	switch ext := filepath.Ext(path); ext {
	case ".json":
		err = decodeJSON(b, &f)
	case ".yaml", ".yml":
		err = decodeYAML(b, &f)
	default:
		err = fmt.Errorf("extension %q: want .json, .yaml or .yml", ext)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("provider.LoadConfig: %s: %w", path, err)
	}
	models, fallbacks, err := f.Resolve(os.LookupEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("provider.LoadConfig: %s: %w", path, err)
	}
	return models, fallbacks, nil
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the configuration object")
	}
	return nil
}

func decodeYAML(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return errors.New("empty file")
		}
		return err
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		return errors.New("more than one YAML document")
	}
	return nil
}

// Resolve turns the file's models into ModelConfigs, reading API keys with lookupEnv (os.LookupEnv
// in production), and checks them as NewRouter does. A named variable that is unset or empty is
// an error, so a missing secret is found at start rather than at the first request.
func (f FileConfig) Resolve(lookupEnv func(string) (string, bool)) ([]ModelConfig, map[string][]string, error) {
	models := make([]ModelConfig, 0, len(f.Models))
	for i, m := range f.Models {
		c := ModelConfig{
			Name: m.Name, Kind: m.Kind, BaseURL: m.BaseURL, UpstreamModel: m.UpstreamModel,
			MaxRetries: DefaultMaxRetries, EchoPrefix: m.EchoPrefix,
		}
		if m.MaxRetries != nil {
			c.MaxRetries = *m.MaxRetries
		}
		if m.Timeout != "" {
			d, err := time.ParseDuration(m.Timeout)
			if err != nil || d <= 0 {
				return nil, nil, fmt.Errorf("models[%d] (%q): timeout %q: want a positive duration such as 30s", i, m.Name, m.Timeout)
			}
			c.Timeout = d
		}
		if m.APIKeyEnv != "" {
			key, ok := lookupEnv(m.APIKeyEnv)
			if !ok || key == "" {
				return nil, nil, fmt.Errorf("models[%d] (%q): environment variable %s (api_key_env) is not set", i, m.Name, m.APIKeyEnv)
			}
			c.APIKey = key
		}
		if c.Kind == KindEcho {
			c.MaxRetries = 0 // nothing to retry; lets an echo entry omit max_retries
		}
		models = append(models, c)
	}
	if err := check(models, f.Fallbacks); err != nil {
		return nil, nil, err
	}
	return models, f.Fallbacks, nil
}
