package provider

import (
	"context"
	"encoding/json"
	"fmt"
)

// EmbedRequest asks a model for the embeddings of texts (OpenAI's embeddings API).
type EmbedRequest struct {
	Model          string   // a configured model
	Input          []string // the texts, already checked
	EncodingFormat string   // "float" (or "") or "base64"
	Dimensions     *int
	User           string
}

// EmbedResponse holds one embedding per input, as the upstream encoded it (an array of numbers,
// or base64 text), in input order.
type EmbedResponse struct {
	Model      string // the configured name
	Embeddings []json.RawMessage
	Usage      Usage
}

// Embedder is a Provider that computes embeddings.
type Embedder interface {
	Embed(ctx context.Context, r EmbedRequest) (*EmbedResponse, error)
}

// Embed asks the model itself, never a fallback: another model's embeddings live in another
// space, and mixing them would corrupt the caller's index without an error. A model that does
// not compute embeddings is ErrInvalidRequest.
func (r *Router) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
	p, ok := r.models[req.Model]
	if !ok {
		return nil, fmt.Errorf("provider: %w %q", ErrUnknownModel, req.Model)
	}
	e, ok := p.(Embedder)
	if !ok {
		return nil, fmt.Errorf("provider: %w: model %s does not compute embeddings (only OpenAI-compatible models do)", ErrInvalidRequest, req.Model)
	}
	if len(req.Input) == 0 {
		return nil, fmt.Errorf("provider: %w: no input", ErrInvalidRequest)
	}
	return e.Embed(ctx, req)
}

var _ Embedder = (*openAI)(nil)

// Embed implements Embedder: POST {base}/embeddings.
func (p *openAI) Embed(ctx context.Context, r EmbedRequest) (*EmbedResponse, error) {
	body, err := json.Marshal(struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format,omitempty"`
		Dimensions     *int     `json:"dimensions,omitempty"`
		User           string   `json:"user,omitempty"`
	}{p.cfg.UpstreamModel, r.Input, r.EncodingFormat, r.Dimensions, r.User})
	if err != nil {
		return nil, err
	}
	m := p.httpModel
	m.url = p.cfg.BaseURL + "/embeddings"
	var out *EmbedResponse
	err = p.retry.do(ctx, func(a *attempt) error {
		res, err := m.post(a, body, false)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var v struct {
			Data []struct {
				Index     int             `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
			Usage openAIUsage `json:"usage"`
		}
		if err := m.readJSON(a, res, &v); err != nil {
			return err
		}
		embs := make([]json.RawMessage, len(r.Input))
		for _, d := range v.Data {
			if d.Index < 0 || d.Index >= len(embs) || embs[d.Index] != nil || len(d.Embedding) == 0 {
				return m.fail(res.StatusCode, "", "embeddings answer with a bad or repeated index", nil, false)
			}
			embs[d.Index] = d.Embedding
		}
		for i, e := range embs {
			if e == nil {
				return m.fail(res.StatusCode, "", fmt.Sprintf("embeddings answer without input %d", i), nil, false)
			}
		}
		out = &EmbedResponse{Model: p.cfg.Name, Embeddings: embs, Usage: Usage{v.Usage.PromptTokens, v.Usage.CompletionTokens}}
		return nil
	})
	return out, err
}
