package provider

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Model kinds.
const (
	KindOpenAI    = "openai"    // OpenAI chat completions and compatible servers (vLLM, Ollama, LiteLLM)
	KindAnthropic = "anthropic" // the Anthropic Messages API
	KindEcho      = "echo"      // built in: answers with the last user message, for local runs and demos
)

// Defaults for zero values of ModelConfig, Options and the configuration file.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultTimeout          = 60 * time.Second
	DefaultMaxRetries       = 2 // for an absent max_retries in the configuration file
	DefaultMaxTokens        = 4096
	DefaultRetryBase        = 250 * time.Millisecond
	DefaultRetryMax         = 10 * time.Second
	AnthropicVersion        = "2023-06-01" // sent as anthropic-version
)

// kinds builds a provider per kind, from a checked configuration.
var kinds = map[string]func(ModelConfig, Options) Provider{
	KindOpenAI:    newOpenAI,
	KindAnthropic: newAnthropic,
	KindEcho:      newEcho,
}

// ModelConfig is one configured model.
type ModelConfig struct {
	Name          string        // what clients ask for; unique
	Kind          string        // KindOpenAI, KindAnthropic or KindEcho
	BaseURL       string        // http(s) URL without credentials or query; "" = the kind's default (not for echo)
	APIKey        string        // sent as Authorization: Bearer (openai) or x-api-key (anthropic); "" sends none
	UpstreamModel string        // the model name sent upstream; "" = Name
	Timeout       time.Duration // per attempt; when streaming, until the first event and between events; 0 = DefaultTimeout
	MaxRetries    int           // retries of a retryable failure after the first attempt; 0 = none
	EchoPrefix    string        // echo only: put before every answer
}

// Options are shared by all models of a Router. Zero values take the defaults named.
type Options struct {
	// HTTPClient sends the requests; nil: one with pooled keep-alive connections. Its Timeout
	// should be 0 (it would cut long streams; ModelConfig.Timeout applies instead). Redirects
	// are never followed, whatever its CheckRedirect: the API key would go along.
	HTTPClient *http.Client
	Logger     *slog.Logger  // retries and fallbacks, at Warn; nil: discarded
	RetryBase  time.Duration // backoff before the first retry, doubling after; 0 = DefaultRetryBase
	RetryMax   time.Duration // longest backoff, and longest Retry-After waited for; 0 = DefaultRetryMax
	// Sleep waits between attempts and returns early with ctx's error; nil: a timer. Tests
	// record the waits with it instead of waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o *Options) defaults() {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	c := *o.HTTPClient // a copy: the caller's client keeps its own redirect policy
	c.CheckRedirect = noRedirect
	o.HTTPClient = &c
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RetryBase <= 0 {
		o.RetryBase = DefaultRetryBase
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New returns the provider of one model.
func New(c ModelConfig, o Options) (Provider, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("provider.New: %w", err)
	}
	o.defaults()
	return kinds[c.Kind](c, o), nil
}

// check validates c and fills its defaults.
func (c *ModelConfig) check() error {
	if c.Name == "" {
		return fmt.Errorf("model without a name")
	}
	if strings.TrimSpace(c.Name) != c.Name {
		return fmt.Errorf("model %q: name has leading or trailing space", c.Name)
	}
	if _, ok := kinds[c.Kind]; !ok {
		return fmt.Errorf("model %q: unknown kind %q (want %s, %s or %s)", c.Name, c.Kind, KindOpenAI, KindAnthropic, KindEcho)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("model %q: negative timeout %s", c.Name, c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetries < 0 || c.MaxRetries > 10 {
		return fmt.Errorf("model %q: max retries %d out of [0, 10]", c.Name, c.MaxRetries)
	}
	if c.UpstreamModel == "" {
		c.UpstreamModel = c.Name
	}
	if c.Kind == KindEcho {
		if c.BaseURL != "" || c.APIKey != "" {
			return fmt.Errorf("model %q: echo takes no base URL or API key", c.Name)
		}
		return nil
	}
	if c.EchoPrefix != "" {
		return fmt.Errorf("model %q: echo prefix given for kind %s", c.Name, c.Kind)
	}
	if c.BaseURL == "" {
		c.BaseURL = map[string]string{KindOpenAI: DefaultOpenAIBaseURL, KindAnthropic: DefaultAnthropicBaseURL}[c.Kind]
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		// url.Parse's error repeats the URL, which may hold credentials.
		return fmt.Errorf("model %q: base URL does not parse", c.Name)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() // without secrets
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("model %q: base URL %q: scheme must be http or https", c.Name, shown)
	case u.Host == "":
		return fmt.Errorf("model %q: base URL %q has no host", c.Name, shown)
	case u.User != nil:
		return fmt.Errorf("model %q: base URL %q has credentials; give the key as the API key", c.Name, shown)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Errorf("model %q: base URL %q has a query or fragment", c.Name, shown)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if strings.ContainsAny(c.APIKey, "\r\n") {
		return fmt.Errorf("model %q: API key contains a line break", c.Name)
	}
	return nil
}

// check validates a set of models and their fallbacks, filling the models' defaults.
func check(models []ModelConfig, fallbacks map[string][]string) error {
	if len(models) == 0 {
		return fmt.Errorf("no models")
	}
	seen := make(map[string]bool, len(models))
	for i := range models {
		if err := models[i].check(); err != nil {
			return fmt.Errorf("models[%d]: %w", i, err)
		}
		if seen[models[i].Name] {
			return fmt.Errorf("models[%d]: duplicate model name %q", i, models[i].Name)
		}
		seen[models[i].Name] = true
	}
	for name, list := range fallbacks {
		if !seen[name] {
			return fmt.Errorf("fallbacks: %q is not a configured model", name)
		}
		dup := make(map[string]bool, len(list))
		for _, f := range list {
			switch {
			case !seen[f]:
				return fmt.Errorf("fallbacks of %q: %q is not a configured model", name, f)
			case f == name:
				return fmt.Errorf("fallbacks of %q: a model cannot fall back to itself", name)
			case dup[f]:
				return fmt.Errorf("fallbacks of %q: %q listed twice", name, f)
			}
			dup[f] = true
		}
	}
	return nil
}
