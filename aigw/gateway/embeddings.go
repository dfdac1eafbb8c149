package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// MaxEmbedInputs bounds the texts of one embeddings request (OpenAI's own limit).
const MaxEmbedInputs = 2048

// EmbedRequest asks for the embeddings of texts, which are checked and redacted first: the
// model embeds what it would have been sent in a chat.
type EmbedRequest struct {
	Project        string
	Model          string
	Input          []string
	EncodingFormat string // "float" (or "") or "base64"
	Dimensions     *int
	User           string
}

// EmbedResponse holds one embedding per input, in order.
type EmbedResponse struct {
	Model             string
	Embeddings        []json.RawMessage
	Usage             Usage
	Redactions        []Redaction
	RedactionsOmitted int
	Policy            PolicyRef
}

// Embed redacts the inputs, applies the block rules, asks the model (never a fallback: another
// model's vectors live in another space) and writes the audit record (kind openai).
func (s *Service) Embed(ctx context.Context, c Caller, requestID string, req EmbedRequest) (*EmbedResponse, error) {
	start := time.Now()
	if err := s.checkProject(c, req.Project); err != nil {
		return nil, err
	}
	if !s.o.Models.Has(req.Model) {
		return nil, badParam("model", "unknown model %q; known: %s", req.Model, strings.Join(s.o.Models.Models(), ", "))
	}
	if len(req.Input) == 0 || len(req.Input) > MaxEmbedInputs {
		return nil, badParam("input", "1 to %d texts", MaxEmbedInputs)
	}
	for i, in := range req.Input {
		if err := checkText(fmt.Sprintf("input[%d]", i), in); err != nil {
			return nil, err
		}
	}
	cg, err := s.guardForModel(ctx, req.Project, req.Model)
	if err != nil {
		return nil, err
	}
	sess := cg.guard.NewSession()
	var reds []Redaction
	var finds []Finding
	var raw strings.Builder
	clean := make([]string, len(req.Input))
	msgs := make([]provider.Message, len(req.Input))
	blocked := false
	for i, in := range req.Input {
		where := fmt.Sprintf("input[%d]", i)
		res := sess.Input(in)
		clean[i], msgs[i] = res.Text, provider.Message{Role: provider.RoleUser, Content: res.Text}
		reds = append(reds, convRedactions(where, res.Redactions)...)
		finds = append(finds, convFindings(where, res.Findings)...)
		blocked = blocked || res.Blocked
		raw.WriteString("input: " + in + "\n")
	}
	input, _ := json.Marshal(msgs)
	record := func(status int, blocked bool) error {
		return s.commit(ctx, s.record(c, cg, requestID, "openai", req.Model, input, raw.String(), "", reds, finds, blocked, status, start))
	}
	if blocked {
		if err := record(http.StatusUnprocessableEntity, true); err != nil {
			return nil, err
		}
		return nil, blockedError(finds, "the request")
	}
	resp, err := s.o.Models.Embed(ctx, provider.EmbedRequest{Model: req.Model, Input: clean, EncodingFormat: req.EncodingFormat, Dimensions: req.Dimensions, User: req.User})
	if err != nil {
		s.mUpstreams.WithLabelValues(req.Model, "error").Inc()
		if cerr := record(http.StatusBadGateway, false); cerr != nil {
			return nil, cerr
		}
		return nil, upstreamError(err)
	}
	s.mUpstreams.WithLabelValues(req.Model, "ok").Inc()
	if err := record(http.StatusOK, false); err != nil {
		return nil, err
	}
	out := &EmbedResponse{Model: resp.Model, Embeddings: resp.Embeddings, Usage: Usage{PromptTokens: resp.Usage.PromptTokens},
		Policy: PolicyRef{cg.policyID, cg.version}}
	out.Redactions, out.RedactionsOmitted = listRedactions(reds)
	return out, nil
}

// openaiEmbedFields are the fields of OpenAI's embeddings request; all are used.
var openaiEmbedFields = []string{"model", "input", "encoding_format", "dimensions", "user"}

// parseOpenAIEmbed reads an embeddings body: input is a string or an array of strings (token
// arrays cannot be checked and are refused).
func parseOpenAIEmbed(body []byte) (EmbedRequest, error) {
	var r EmbedRequest
	var fields map[string]json.RawMessage
	if err := rest.DecodeBytes(body, &fields); err != nil {
		return r, err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		if !slices.Contains(openaiEmbedFields, k) {
			return r, badParam(k, "unknown field %q of the embeddings API", k)
		}
		if string(v) == "null" && k != "model" && k != "input" {
			continue
		}
		var err error
		switch k {
		case "model":
			err = decodeParam(k, v, &r.Model)
		case "input":
			var one string
			if json.Unmarshal(v, &one) == nil {
				r.Input = []string{one}
			} else if json.Unmarshal(v, &r.Input) != nil {
				err = badParam(k, "must be a string or an array of strings (token arrays cannot be checked; send text)")
			}
		case "encoding_format":
			if err = decodeParam(k, v, &r.EncodingFormat); err == nil && r.EncodingFormat != "float" && r.EncodingFormat != "base64" {
				err = badParam(k, `must be "float" or "base64"`)
			}
		case "dimensions":
			if err = decodeParam(k, v, &r.Dimensions); err == nil && *r.Dimensions < 1 {
				err = badParam(k, "must be at least 1")
			}
		case "user":
			err = decodeParam(k, v, &r.User)
		}
		if err != nil {
			return r, err
		}
	}
	if r.Model == "" {
		return r, badParam("model", "is required")
	}
	if r.Input == nil {
		return r, badParam("input", "is required")
	}
	return r, nil
}

func (h *handlers) openaiEmbeddings(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, chatBodyLimit))
	if err != nil {
		openaiFail(c, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is larger than %d bytes", chatBodyLimit))
		return
	}
	req, err := parseOpenAIEmbed(body)
	if err != nil {
		openaiFail(c, err)
		return
	}
	cl := caller(c)
	req.Project = cl.Project
	id := rest.GetRequestID(c)
	res, err := h.s.Embed(c.Request.Context(), cl, id, req)
	if err != nil {
		openaiFail(c, err)
		return
	}
	data := make([]gin.H, len(res.Embeddings))
	for i, e := range res.Embeddings {
		data[i] = gin.H{"object": "embedding", "index": i, "embedding": e}
	}
	edge := gin.H{"request_id": id, "redactions": res.Redactions, "policy": res.Policy}
	if res.RedactionsOmitted > 0 {
		edge["redactions_omitted"] = res.RedactionsOmitted
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "model": res.Model,
		"usage": gin.H{"prompt_tokens": res.Usage.PromptTokens, "total_tokens": res.Usage.PromptTokens}, "edgewan": edge})
}
