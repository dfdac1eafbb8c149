package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// ScopeAdmin lets a project's key change its policies and settings and read raw inputs.
const ScopeAdmin = auth.ScopeAIGWAdmin

// Register mounts the /ai-gateway/v1 routes on g, which must already authenticate. Every route
// needs an AI gateway key (a project-scoped key); policy changes need its aigw:admin scope.
func Register(g *gin.RouterGroup, s *Service, pages *page.Codec, diff func(a, b json.RawMessage) []string) {
	h := &handlers{s: s, pages: pages, diff: diff}
	g.Use(projectKey)
	small := h.admit(rest.DefaultMaxBody)
	g.POST("/sanitize", h.admit(textBodyLimit), h.sanitize)
	g.POST("/chat", h.admit(chatBodyLimit), h.chat)
	g.GET("/models", h.models)
	g.GET("/policies", h.listPolicies)
	g.POST("/policies", adminOnly, small, h.createPolicy)
	g.GET("/policies/:id", h.getPolicy)
	g.POST("/policies/:id/versions", adminOnly, small, h.addVersion)
	g.POST("/policies/:id/publish", adminOnly, small, h.publish)
	g.POST("/policies/:id/test", h.admit(textBodyLimit), h.test)
	g.GET("/changes", h.listChanges)
	g.GET("/projects/:id", h.getProject)
	g.PATCH("/projects/:id", adminOnly, small, h.updateProject)
	g.GET("/logs", h.listLogs)
	g.GET("/logs/:id", h.getLog)
	g.POST("/openai/chat/completions", h.admit(chatBodyLimit), h.openaiChat)
	g.POST("/openai/embeddings", h.admit(chatBodyLimit), h.openaiEmbeddings)
	g.POST("/anthropic/v1/messages", h.admit(chatBodyLimit), h.anthropicMessages)
	g.GET("/openai/models", h.openaiModels)
	g.GET("/openai/models/:model", h.openaiModel)
	registerDocuments(g, h)
}

// projectKey refuses keys that are not AI gateway keys.
func projectKey(c *gin.Context) {
	k := auth.KeyFrom(c)
	if k == nil || k.Project == "" {
		rest.FailWith(c, http.StatusForbidden, apierr.CodeForbidden, "the AI gateway needs a project key (controller keys create --project P)")
		return
	}
	c.Next()
}

// adminOnly refuses keys without aigw:admin before their body is read; the service checks again.
func adminOnly(c *gin.Context) {
	if !caller(c).Admin {
		rest.FailWith(c, http.StatusForbidden, apierr.CodeInvalidScope, "this key lacks the scope aigw:admin required to change the project's policies and settings")
		return
	}
	c.Next()
}

func caller(c *gin.Context) Caller {
	k := auth.KeyFrom(c)
	return Caller{KeyID: k.ID, Project: k.Project, Admin: k.HasScope(ScopeAdmin)}
}

type handlers struct {
	s     *Service
	pages *page.Codec
	diff  func(a, b json.RawMessage) []string
}

// ChatMessage is a message of POST /chat: role and content, which is required ("" is a text,
// null is not).
type ChatMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
}

// chatBodyLimit bounds a chat request: many messages of up to MaxText each.
const chatBodyLimit = 4 << 20

// textBodyLimit bounds a request carrying one text of up to MaxText.
const textBodyLimit = MaxText + 4096

// errTextRequired answers a body whose text is missing or null: "" is a text, null is not.
func errTextRequired(field string) error {
	return apierr.BadRequest("%s is required and must be a string (it may be empty); got none or null", field)
}

func (h *handlers) sanitize(c *gin.Context) {
	var body struct {
		Project string  `json:"project"`
		Text    *string `json:"text"`
	}
	if err := rest.Decode(c, &body, textBodyLimit); err != nil {
		rest.Fail(c, err)
		return
	}
	if body.Text == nil {
		rest.Fail(c, errTextRequired("text"))
		return
	}
	req := SanitizeRequest{Project: body.Project, Text: *body.Text}
	res, err := h.s.Sanitize(c.Request.Context(), caller(c), rest.GetRequestID(c), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (h *handlers) chat(c *gin.Context) {
	var body struct {
		ChatRequest
		Messages []ChatMessage `json:"messages"`
	}
	if err := rest.Decode(c, &body, chatBodyLimit); err != nil {
		rest.Fail(c, err)
		return
	}
	req := body.ChatRequest
	req.Messages = make([]provider.Message, len(body.Messages))
	for i, m := range body.Messages {
		if m.Content == nil {
			rest.Fail(c, errTextRequired(fmt.Sprintf("messages[%d].content", i)))
			return
		}
		req.Messages[i] = provider.Message{Role: m.Role, Content: *m.Content}
	}
	if !req.Stream {
		res, err := h.s.Chat(c.Request.Context(), caller(c), rest.GetRequestID(c), "chat", req)
		if err != nil {
			rest.Fail(c, err)
			return
		}
		c.JSON(http.StatusOK, res)
		return
	}
	sink := &sseSink{c: c}
	if err := h.s.ChatStream(c.Request.Context(), caller(c), rest.GetRequestID(c), "chat", req, sink); err != nil {
		sink.fail(err)
	}
}

// sseSink writes the gateway's own stream format: "delta" events {"text"}, then one "done"
// event with the whole response (or an "error" event with the error body).
type sseSink struct {
	c       *gin.Context
	started bool
}

func (s *sseSink) start() {
	if s.started {
		return
	}
	s.started = true
	startSSE(s.c)
}

// startSSE begins an event stream: no caching, no proxy buffering.
func startSSE(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
}

func (s *sseSink) event(name string, v any) error {
	s.start()
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(s.c.Writer, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	s.c.Writer.Flush()
	return nil
}

func (s *sseSink) Delta(text string) error { return s.event("delta", map[string]string{"text": text}) }

func (s *sseSink) Done(r *ChatResponse) error { return s.event("done", r) }

// ToolCall cannot happen: /chat requests carry no tools. Failing is better than dropping one.
func (s *sseSink) ToolCall(int, string, string, string) error {
	return errors.New("gateway: a tool call in a /chat answer")
}

// fail answers an error: as a normal error response before the stream started, else as an
// "error" event that ends it.
func (s *sseSink) fail(err error) {
	if !s.started {
		rest.Fail(s.c, err)
		return
	}
	e := apierr.From(err)
	_ = s.event("error", rest.ErrorBody{Error: rest.ErrorDetail{Code: e.Code, Message: e.Message, RequestID: rest.GetRequestID(s.c)}})
}

func (h *handlers) models(c *gin.Context) {
	ms, err := h.s.Models(c.Request.Context(), caller(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"data": ms})
}

func (h *handlers) listPolicies(c *gin.Context) {
	rest.List(c, h.pages, nil, func(p page.Params, _ url.Values) ([]*Policy, error) {
		return h.s.ListPolicies(c.Request.Context(), caller(c), p)
	}, func(p *Policy) page.Key { return page.Key{UpdatedAt: p.UpdatedAt, ID: p.ID} })
}

func (h *handlers) createPolicy(c *gin.Context) {
	var req CreatePolicyRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.CreatePolicy(c.Request.Context(), caller(c), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+p.ID)
	c.JSON(http.StatusCreated, p)
}

func (h *handlers) getPolicy(c *gin.Context) {
	p, err := h.s.GetPolicy(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (h *handlers) addVersion(c *gin.Context) {
	var req AddVersionRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	v, err := h.s.AddVersion(c.Request.Context(), caller(c), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", "/ai-gateway/v1/policies/"+c.Param("id"))
	c.JSON(http.StatusCreated, v)
}

func (h *handlers) publish(c *gin.Context) {
	var req PublishRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	ch, err := h.s.Publish(c.Request.Context(), caller(c), c.Param("id"), req, h.diff)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ch)
}

func (h *handlers) test(c *gin.Context) {
	var body struct {
		TestRequest
		Text *string `json:"text"`
	}
	if err := rest.Decode(c, &body, textBodyLimit); err != nil {
		rest.Fail(c, err)
		return
	}
	if body.Text == nil {
		rest.Fail(c, errTextRequired("text"))
		return
	}
	req := body.TestRequest
	req.Text = *body.Text
	res, err := h.s.TestPolicy(c.Request.Context(), caller(c), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (h *handlers) listChanges(c *gin.Context) {
	rest.List(c, h.pages, nil, func(p page.Params, _ url.Values) ([]*Change, error) {
		return h.s.ListChanges(c.Request.Context(), caller(c), p)
	}, func(ch *Change) page.Key { return page.Key{UpdatedAt: ch.UpdatedAt, ID: ch.ID} })
}

func (h *handlers) getProject(c *gin.Context) {
	p, err := h.s.GetProject(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (h *handlers) updateProject(c *gin.Context) {
	var u ProjectUpdate
	if err := rest.DecodePatch(c, &u, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.UpdateProject(c.Request.Context(), caller(c), c.Param("id"), u)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// listLogs is rest.List with a page bounded in bytes as well: a page ends before the record
// that would take it over MaxLogPageBytes (it always holds one), and its cursor continues
// from there.
func (h *handlers) listLogs(c *gin.Context) {
	q := c.Request.URL.Query()
	list := c.Request.URL.Path
	p, err := h.pages.Parse(q, list, "project", "until", "entity", "blocked", "kind")
	if err != nil {
		rest.Fail(c, err)
		return
	}
	rows, err := h.fetchLogs(c, p, q)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	size := 0
	for i, r := range rows {
		r.bound() // records written before the bounds
		if size += r.size(); i > 0 && size > MaxLogPageBytes && i < p.Limit {
			p.Limit, rows = i, rows[:i+1] // page.Page sees one more row than the page: a cursor
			break
		}
	}
	c.JSON(http.StatusOK, page.Page(h.pages, q, list, p, rows, func(r *Record) page.Key { return page.Key{UpdatedAt: r.UpdatedAt, ID: r.ID} }))
}

func (h *handlers) fetchLogs(c *gin.Context, p page.Params, q url.Values) ([]*Record, error) {
	f := LogFilter{Project: q.Get("project"), Entity: q.Get("entity"), Kind: q.Get("kind")}
	if v := q.Get("until"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, apierr.BadRequest("until must be an RFC 3339 timestamp, got %q", v)
		}
		f.Until = t
	}
	if v := q.Get("blocked"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierr.BadRequest("blocked must be true or false, got %q", v)
		}
		f.Blocked = &b
	}
	return h.s.ListLogs(c.Request.Context(), caller(c), p, f)
}

func (h *handlers) getLog(c *gin.Context) {
	r, err := h.s.GetLog(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
