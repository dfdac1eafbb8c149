package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
)

// Router sends each request to the model it names and, when that model fails, to the model's
// fallbacks in order. It is safe for concurrent use.
type Router struct {
	models map[string]Provider
	chains map[string][]string // per model: itself, then its fallbacks
	log    *slog.Logger
}

// NewRouter builds the models and checks the configuration: names unique and non-empty, known
// kinds, usable base URLs, fallbacks naming configured models (not themselves, not twice).
// Fallbacks are not followed transitively: a model's list is the whole chain.
func NewRouter(models []ModelConfig, fallbacks map[string][]string, o Options) (*Router, error) {
	models = slices.Clone(models)
	if err := check(models, fallbacks); err != nil {
		return nil, fmt.Errorf("provider.NewRouter: %w", err)
	}
	o.defaults()
	r := &Router{models: make(map[string]Provider, len(models)), chains: make(map[string][]string, len(models)), log: o.Logger}
	for _, c := range models {
		r.models[c.Name] = kinds[c.Kind](c, o)
		r.chains[c.Name] = append([]string{c.Name}, fallbacks[c.Name]...)
	}
	return r, nil
}

// Has tells whether model is configured.
func (r *Router) Has(model string) bool {
	_, ok := r.models[model]
	return ok
}

// Models returns the configured model names, sorted.
func (r *Router) Models() []string { return slices.Sorted(maps.Keys(r.models)) }

// Fallbacks returns the models tried after model, in order.
func (r *Router) Fallbacks(model string) []string {
	if len(r.chains[model]) < 2 {
		return nil
	}
	return slices.Clone(r.chains[model][1:])
}

// Chat asks req.Model and then its fallbacks until one answers; Response.Model says which.
// It falls back on any *UpstreamError, not on ErrInvalidRequest or ctx ending. When all fail,
// the error joins theirs (errors.As finds the *UpstreamError of the first).
func (r *Router) Chat(ctx context.Context, req Request) (*Response, error) {
	return r.try(ctx, req, func(p Provider, sent *bool) (*Response, error) { return p.Chat(ctx, req) })
}

// Stream is Chat streamed: onDelta gets the text as it arrives. It falls back only while
// nothing has been passed to onDelta; after that, a failure is the caller's to report.
func (r *Router) Stream(ctx context.Context, req Request, onDelta func(string) error) (*Response, error) {
	return r.try(ctx, req, func(p Provider, sent *bool) (*Response, error) {
		return p.Stream(ctx, req, func(s string) error {
			*sent = true
			return onDelta(s)
		})
	})
}

func (r *Router) try(ctx context.Context, req Request, call func(Provider, *bool) (*Response, error)) (*Response, error) {
	chain, ok := r.chains[req.Model]
	if !ok {
		return nil, fmt.Errorf("provider: %w %q", ErrUnknownModel, req.Model)
	}
	var errs []error
	for i, name := range chain {
		sent := false
		resp, err := call(r.models[name], &sent)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, err)
		var ue *UpstreamError
		if sent || ctx.Err() != nil || !errors.As(err, &ue) || i == len(chain)-1 {
			break
		}
		r.log.Warn("provider: falling back", "model", name, "next", chain[i+1], "error", err.Error())
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("provider: %s and its fallbacks failed: %w", req.Model, errors.Join(errs...))
}
