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
	models    map[string]Provider
	fallbacks map[string][]string
	log       *slog.Logger
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
	r := &Router{models: make(map[string]Provider, len(models)), fallbacks: make(map[string][]string), log: o.Logger}
	for _, c := range models {
		r.models[c.Name] = kinds[c.Kind](c, o)
	}
	for name, list := range fallbacks {
		if len(list) > 0 {
			r.fallbacks[name] = slices.Clone(list)
		}
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
func (r *Router) Fallbacks(model string) []string { return slices.Clone(r.fallbacks[model]) }

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
	first, ok := r.models[req.Model]
	if !ok {
		return nil, fmt.Errorf("provider: %w %q", ErrUnknownModel, req.Model)
	}
	chain := r.fallbacks[req.Model]
	var errs []error
	for i := -1; i < len(chain); i++ {
		p, name := first, req.Model
		if i >= 0 {
			p, name = r.models[chain[i]], chain[i]
		}
		sent := false
		resp, err := call(p, &sent)
		if err == nil {
			return resp, nil
		}
		var ue *UpstreamError
		if sent || ctx.Err() != nil || !errors.As(err, &ue) || i == len(chain)-1 {
			if len(errs) == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("provider: %s and its fallbacks failed: %w", req.Model, errors.Join(append(errs, err)...))
		}
		errs = append(errs, err)
		r.log.Warn("provider: falling back", "model", name, "next", chain[i+1], "error", err.Error())
	}
	panic("unreachable")
}
