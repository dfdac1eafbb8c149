package sink

import (
	"testing"

	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

func TestMain(m *testing.M) { influxtest.Main(m) }
