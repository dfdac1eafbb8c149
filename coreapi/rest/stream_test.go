package rest_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/rest"
)

// TestStreamWriterStalledClient: a client that keeps its connection open but stops reading
// must make the streaming handler's writes fail (so it returns) rather than block it forever.
// Without a deadline the handler blocks in Write once the socket buffers are full.
func TestStreamWriterStalledClient(t *testing.T) {
	gin.SetMode(gin.TestMode)
	ended := make(chan error, 1)
	r := gin.New()
	r.GET("/stream", func(c *gin.Context) {
		w, flush := rest.StreamWriter(c, 300*time.Millisecond)
		c.Status(http.StatusOK)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
			flush()
		}
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing from here on.
	select {
	case err := <-ended:
		t.Logf("the stream ended with %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the handler is still blocked writing to a client that stopped reading")
	}
}
