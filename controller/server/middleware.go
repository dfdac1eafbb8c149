package server

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// family names the API family of a path, for metrics.
func family(path string) string {
	switch {
	case strings.HasPrefix(path, "/v1/"):
		return "core"
	case strings.HasPrefix(path, "/sd-wan/v1/"):
		return "sdwan"
	case strings.HasPrefix(path, "/ai-gateway/v1/"):
		return "aigw"
	}
	return "other"
}

// methodLabel is the method as a metric label: any token is a valid HTTP method, so anything
// but the standard ones counts as "other" (a client must not create series at will).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

func (s *Server) httpMetrics() gin.HandlerFunc {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgewan_http_requests_total", Help: "API requests by family, route, method and status code.",
	}, []string{"family", "route", "method", "code"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "edgewan_http_request_duration_seconds", Help: "API request handling time by family.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 3, 10),
	}, []string{"family"})
	s.registry.MustRegister(reqs, dur)
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched" // unknown paths must not create a series each
		}
		fam := family(route)
		reqs.WithLabelValues(fam, route, methodLabel(c.Request.Method), strconv.Itoa(c.Writer.Status())).Inc()
		dur.WithLabelValues(fam).Observe(time.Since(start).Seconds())
	}
}

// accessLog logs each request at debug level, and server errors at warn. Headers are never
// logged: they carry tokens.
func accessLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		lvl := slog.LevelDebug
		if c.Writer.Status() >= 500 {
			lvl = slog.LevelWarn
		}
		slog.Log(c.Request.Context(), lvl, "request", "request_id", rest.GetRequestID(c), "method", c.Request.Method,
			"path", c.Request.URL.Path, "status", c.Writer.Status(), "duration", time.Since(start), "client", c.ClientIP())
	}
}

// ipLimit rate-limits unauthenticated routes (the agents' claim) per client address.
func ipLimit(l *ratelimit.Limiter) gin.HandlerFunc {
	return func(c *gin.Context) {
		d := l.Allow("ip:"+c.ClientIP(), time.Now())
		if !d.OK {
			for h, v := range d.Headers() {
				c.Header(h, v)
			}
			rest.FailWith(c, http.StatusTooManyRequests, apierr.CodeRateLimited, "too many requests from this address; retry after %s seconds", d.Headers()[ratelimit.HeaderRetry])
			return
		}
		c.Next()
	}
}

// maxRequestHead bounds the request line and headers (bytes, as the client sent them, near
// enough). http.Server's MaxHeaderBytes is set well above it, so a request over it reaches this
// middleware and gets the error body and a request ID instead of Go's bare text/plain 431.
const (
	maxRequestHead = 64 << 10
	maxHeaderBytes = 2 << 20
)

// headLimit refuses a request whose request line and headers are over maxRequestHead.
func headLimit() gin.HandlerFunc {
	return func(c *gin.Context) {
		n := len(c.Request.Method) + len(c.Request.RequestURI) + len(c.Request.Proto) + 4
		for k, vs := range c.Request.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > maxRequestHead {
			c.Header("Connection", "close")
			rest.FailWith(c, http.StatusRequestHeaderFieldsTooLarge, apierr.CodeHeaderTooLarge,
				"the request line and headers are %d bytes; the limit is %d", n, maxRequestHead)
			return
		}
		c.Next()
	}
}
