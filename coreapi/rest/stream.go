package rest

import (
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultStreamWriteTimeout is how long one write or flush of a streamed body may take.
const DefaultStreamWriteTimeout = 30 * time.Second

// StreamWriter returns c's response writer for a long streamed body (server-sent events, a
// simulation's answer) and its flush. Every write and flush must complete within timeout (0
// means DefaultStreamWriteTimeout): a client that stops reading while keeping its connection
// open (a suspended NOC tab, a stuck proxy) makes the next write fail once the socket buffers
// are full, which ends the stream, instead of pinning its goroutine, and whatever it holds (a
// simulation slot), until TCP gives up. The server has no WriteTimeout, which would end every
// stream after a fixed time.
func StreamWriter(c *gin.Context, timeout time.Duration) (io.Writer, func()) {
	if timeout <= 0 {
		timeout = DefaultStreamWriteTimeout
	}
	rc := http.NewResponseController(c.Writer)
	arm := func() { _ = rc.SetWriteDeadline(time.Now().Add(timeout)) } // unsupported: no deadline
	w := &deadlineWriter{w: c.Writer, arm: arm}
	return w, func() {
		arm()
		_ = rc.Flush()
	}
}

type deadlineWriter struct {
	w   io.Writer
	arm func()
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.arm()
	return d.w.Write(p)
}
