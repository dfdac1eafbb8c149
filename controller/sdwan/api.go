package sdwan

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/rest"
	"github.com/edgewan/edgewan/telemetry/rollup"
)

// Register mounts the /sd-wan/v1 routes on g, which must already authenticate. Reads need
// sdwan:read, writes sdwan:write.
func Register(g *gin.RouterGroup, s *Service, pages *page.Codec) {
	h := &handlers{s: s, pages: pages}
	r, w := auth.Require(auth.ScopeSDWANRead), auth.Require(auth.ScopeSDWANWrite)
	g.GET("/sites", r, h.listSites)
	g.POST("/sites", w, h.createSite)
	g.GET("/sites/:id", r, h.getSite)
	g.PATCH("/sites/:id", w, h.updateSite)
	g.DELETE("/sites/:id", w, h.deleteSite)
	g.GET("/sites/:id/transports", r, h.listTransports)
	g.POST("/sites/:id/transports", w, h.addTransport)
	g.GET("/sites/:id/health", r, h.health)
	g.GET("/sites/:id/series", r, h.series)
	g.GET("/events", r, h.listEvents)
	g.GET("/overview", r, h.overview)
	g.GET("/stream", r, h.stream)
	g.GET("/policies", r, h.listPolicies)
	g.POST("/policies", w, h.createPolicy)
	g.GET("/policies/:id", r, h.getPolicy)
	g.POST("/policies/:id/versions", w, h.addVersion)
	g.PATCH("/policies/:id", w, h.updatePolicy)
	g.POST("/policies/:id/publish", w, h.publish)
	// Simulating changes nothing in the network, but it replays the fleet's history and can
	// unlock a publish: a write, as every POST.
	g.POST("/policies/:id/versions/:v/simulate", w, h.simulate)
	g.GET("/policies/:id/versions/:v/simulation", r, h.latestSimulation)
	g.GET("/policies/:id/simulations/:sim", r, h.getSimulation)
	g.GET("/changes", r, h.listChanges)
}

// RegisterClaim mounts POST /claim on g, which must NOT require a bearer token: the claim token
// in the body is the agent's only credential. The caller rate-limits it per address.
func RegisterClaim(g *gin.RouterGroup, s *Service) {
	g.POST("/claim", func(c *gin.Context) {
		var req ClaimRequest
		if err := rest.Decode(c, &req, 16<<10); err != nil {
			rest.Fail(c, err)
			return
		}
		res, err := s.Claim(c.Request.Context(), req, c.ClientIP())
		if err != nil {
			rest.Fail(c, err)
			return
		}
		c.Header("Cache-Control", "no-store") // the MQTT password is in the body
		c.JSON(http.StatusOK, res)
	})
}

type handlers struct {
	s     *Service
	pages *page.Codec
}

func actor(c *gin.Context) string {
	if k := auth.KeyFrom(c); k != nil {
		return k.ID
	}
	return ""
}

func (h *handlers) listSites(c *gin.Context) {
	rest.List(c, h.pages, []string{"status", "role"}, func(p page.Params, q url.Values) ([]*Site, error) {
		return h.s.ListSites(c.Request.Context(), p, SiteFilter{Status: q.Get("status"), Role: q.Get("role")})
	}, func(s *Site) page.Key { return page.Key{UpdatedAt: s.UpdatedAt, ID: s.ID} })
}

func (h *handlers) createSite(c *gin.Context) {
	var req CreateSiteRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	site, err := h.s.CreateSite(c.Request.Context(), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+site.ID)
	c.Header("Cache-Control", "no-store") // the claim token is in the body
	c.JSON(http.StatusCreated, site)
}

func (h *handlers) getSite(c *gin.Context) {
	site, err := h.s.GetSite(c.Request.Context(), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, site)
}

func (h *handlers) updateSite(c *gin.Context) {
	var req UpdateSiteRequest
	if err := rest.DecodePatch(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	site, err := h.s.UpdateSite(c.Request.Context(), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, site)
}

func (h *handlers) deleteSite(c *gin.Context) {
	if err := h.s.DecommissionSite(c.Request.Context(), c.Param("id")); err != nil {
		rest.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *handlers) listTransports(c *gin.Context) {
	rest.List(c, h.pages, nil, func(p page.Params, q url.Values) ([]*Transport, error) {
		return h.s.ListTransports(c.Request.Context(), c.Param("id"), p)
	}, func(t *Transport) page.Key { return page.Key{UpdatedAt: t.UpdatedAt, ID: t.ID} })
}

func (h *handlers) addTransport(c *gin.Context) {
	var req CreateTransportRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	t, err := h.s.AddTransport(c.Request.Context(), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+t.ID)
	c.JSON(http.StatusCreated, t)
}

func (h *handlers) health(c *gin.Context) {
	window, text, ok := windowParam(c, "5m")
	if !ok {
		return
	}
	hl, err := h.s.Health(c.Request.Context(), c.Param("id"), window, text)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, hl)
}

func (h *handlers) series(c *gin.Context) {
	window, text, ok := windowParam(c, "15m")
	if !ok {
		return
	}
	se, err := h.s.Series(c.Request.Context(), c.Param("id"), window, text)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, se)
}

// windowParam reads the only query parameter of health and series, window (def when absent),
// or answers 400 and reports false.
func windowParam(c *gin.Context, def string) (time.Duration, string, bool) {
	q := c.Request.URL.Query()
	for k, vs := range q {
		if k != "window" || len(vs) > 1 {
			rest.Fail(c, badParam(k))
			return 0, "", false
		}
	}
	text := q.Get("window")
	if text == "" {
		text = def
	}
	window, err := rollup.ParseWindow(text)
	if err != nil {
		rest.Fail(c, badWindow(text, err))
		return 0, "", false
	}
	return window, text, true
}

// overview answers GET /overview: q, status, sort, offset, limit, each at most once.
func (h *handlers) overview(c *gin.Context) {
	q := c.Request.URL.Query()
	var sq SiteQuery
	for k, vs := range q {
		if len(vs) > 1 {
			rest.Fail(c, apierr.BadRequest("query parameter %q given twice", k))
			return
		}
		v := vs[0]
		var err error
		switch k {
		case "q":
			sq.Search = v
		case "status":
			sq.Status = v
		case "sort":
			sq.Sort = v
		case "offset":
			sq.Offset, err = strconv.Atoi(v)
		case "limit":
			sq.Limit, err = strconv.Atoi(v)
			if err == nil && sq.Limit == 0 {
				sq.Limit = -1 // refused below, not taken for the default
			}
		default:
			rest.Fail(c, apierr.BadRequest("unknown query parameter %q; the overview accepts q, status, sort, offset and limit", k))
			return
		}
		if err != nil {
			rest.Fail(c, apierr.BadRequest("%s %q is not a number", k, v))
			return
		}
	}
	p, err := h.s.SitesOverview(c.Request.Context(), sq)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// stream answers GET /stream with server-sent events until the client goes.
func (h *handlers) stream(c *gin.Context) {
	q := c.Request.URL.Query()
	for k, vs := range q {
		if k != "sites" || len(vs) > 1 {
			rest.Fail(c, apierr.BadRequest("query parameter %q unknown or repeated; the stream accepts sites, once", k))
			return
		}
	}
	ids, err := ParseStreamSites(q.Get("sites"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	hd := c.Writer.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	sw, flush := rest.StreamWriter(c, 0) // a client that stops reading ends its stream
	w := &failWriter{w: sw}
	ctx := c.Request.Context()
	if err := h.s.Stream(ctx, StreamRequest{Sites: ids}, w, flush); err != nil {
		if w.failed || ctx.Err() != nil || errors.Is(err, context.Canceled) {
			// the client left (mid-query or mid-write): how every stream ends, not a fault
			slog.Debug("sdwan: stream ended: client gone", "err", err)
			return
		}
		slog.Warn("sdwan: stream ended", "err", err)
	}
}

// failWriter records that a write to the client failed.
type failWriter struct {
	w      io.Writer
	failed bool
}

func (f *failWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.failed = f.failed || err != nil
	return n, err
}

func (h *handlers) listEvents(c *gin.Context) {
	rest.List(c, h.pages, []string{"type", "site"}, func(p page.Params, q url.Values) ([]*event.Envelope, error) {
		return h.s.ListEvents(c.Request.Context(), p, q.Get("type"), q.Get("site"))
	}, func(e *event.Envelope) page.Key { return page.Key{UpdatedAt: e.CreatedAt, ID: e.ID} })
}

func (h *handlers) listPolicies(c *gin.Context) {
	rest.List(c, h.pages, []string{"type"}, func(p page.Params, q url.Values) ([]*Policy, error) {
		return h.s.ListPolicies(c.Request.Context(), p, q.Get("type"))
	}, func(p *Policy) page.Key { return page.Key{UpdatedAt: p.UpdatedAt, ID: p.ID} })
}

func (h *handlers) createPolicy(c *gin.Context) {
	var req CreatePolicyRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.CreatePolicy(c.Request.Context(), req, actor(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+p.ID)
	c.JSON(http.StatusCreated, p)
}

func (h *handlers) getPolicy(c *gin.Context) {
	p, err := h.s.GetPolicy(c.Request.Context(), c.Param("id"))
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
	v, err := h.s.AddVersion(c.Request.Context(), c.Param("id"), req, actor(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, v)
}

func (h *handlers) updatePolicy(c *gin.Context) {
	var req UpdatePolicyRequest
	if err := rest.DecodePatch(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.UpdatePolicy(c.Request.Context(), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// versionParam reads the {v} of a versions route, or answers 400 and reports false.
func versionParam(c *gin.Context) (int, bool) {
	v, err := strconv.Atoi(c.Param("v"))
	if err != nil || v < 1 {
		rest.Fail(c, apierr.BadRequest("version %q is not a version number", c.Param("v")))
		return 0, false
	}
	return v, true
}

// simulate streams the simulation: the status and headers go out before the replay starts,
// so an error after that ends the body with "complete": false (see SimulationRun.Stream).
func (h *handlers) simulate(c *gin.Context) {
	var req SimulateRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	v, ok := versionParam(c)
	if !ok {
		return
	}
	run, err := h.s.Simulate(c.Request.Context(), c.Param("id"), v, req, actor(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	w, flush := rest.StreamWriter(c, 0) // a client that stops reading frees its simulation slot
	if err := run.Stream(c.Request.Context(), w, flush); err != nil {
		slog.Warn("sdwan: simulation ended early", "simulation", run.Simulation().ID, "err", err)
	}
}

func (h *handlers) latestSimulation(c *gin.Context) {
	v, ok := versionParam(c)
	if !ok {
		return
	}
	sim, err := h.s.LatestSimulation(c.Request.Context(), c.Param("id"), v)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, sim)
}

func (h *handlers) getSimulation(c *gin.Context) {
	sim, err := h.s.GetSimulation(c.Request.Context(), c.Param("id"), c.Param("sim"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, sim)
}

func (h *handlers) publish(c *gin.Context) {
	var req PublishRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	res, err := h.s.Publish(c.Request.Context(), c.Param("id"), req, actor(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, res)
}

func (h *handlers) listChanges(c *gin.Context) {
	rest.List(c, h.pages, []string{"target"}, func(p page.Params, q url.Values) ([]*Change, error) {
		return h.s.ListChanges(c.Request.Context(), p, q.Get("target"))
	}, func(ch *Change) page.Key { return page.Key{UpdatedAt: ch.UpdatedAt, ID: ch.ID} })
}
