package provider

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// echoChunks is how many deltas at most the echo model streams an answer in.
const echoChunks = 4

// echo answers with the last user message, after an optional prefix: a model for local runs,
// demos and tests that needs no network and always says the same thing. Tokens are counted as
// whitespace-separated words; MaxTokens cuts the answer to that many words (FinishLength).
type echo struct{ cfg ModelConfig }

var _ Provider = (*echo)(nil)

func newEcho(c ModelConfig, _ Options) Provider { return &echo{cfg: c} }

func (e *echo) answer(ctx context.Context, r Request) (*Response, error) {
	if err := noTools(r, e.cfg.Name); err != nil {
		return nil, err
	}
	if err := validate(r); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("provider: %s: %w", e.cfg.Name, err)
	}
	var last string
	prompt := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == RoleUser && last == "" {
			last = r.Messages[i].Content
		}
		prompt += words(r.Messages[i].Content)
	}
	resp := &Response{Model: e.cfg.Name, Content: e.cfg.EchoPrefix + last, FinishReason: FinishStop}
	if r.MaxTokens > 0 {
		if end := wordsEnd(resp.Content, r.MaxTokens); end < len(resp.Content) {
			resp.Content, resp.FinishReason = resp.Content[:end], FinishLength
		}
	}
	resp.Usage = Usage{PromptTokens: prompt, CompletionTokens: words(resp.Content)}
	return resp, nil
}

// Chat implements Provider.
func (e *echo) Chat(ctx context.Context, r Request) (*Response, error) { return e.answer(ctx, r) }

// Stream implements Provider: the answer in up to echoChunks deltas of whole words.
func (e *echo) Stream(ctx context.Context, r Request, onDelta func(string) error) (*Response, error) {
	resp, err := e.answer(ctx, r)
	if err != nil {
		return nil, err
	}
	per := (words(resp.Content) + echoChunks - 1) / echoChunks
	for rest := resp.Content; rest != ""; {
		end := len(rest)
		if per > 0 {
			end = wordsEnd(rest, per)
			// Carry the spaces after the last word with it, so no delta starts with a space.
			for end < len(rest) {
				r, size := utf8.DecodeRuneInString(rest[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("provider: %s: %w", e.cfg.Name, err)
		}
		if err := onDelta(rest[:end]); err != nil {
			return nil, err
		}
		rest = rest[end:]
	}
	return resp, nil
}

func words(s string) int { return len(strings.Fields(s)) }

// wordsEnd is the byte offset just past the n-th word of s, or len(s) if s has fewer.
func wordsEnd(s string, n int) int {
	in := false
	for i, r := range s {
		switch sp := unicode.IsSpace(r); {
		case !sp && !in:
			in = true
		case sp && in:
			in = false
			if n--; n == 0 {
				return i
			}
		}
	}
	return len(s)
}
