package mqtt_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
)

// BenchmarkIdleBrokerHousekeeping measures what mochi's once-a-second housekeeping costs a
// broker that holds 10,000 client sessions and 40,000 retained messages (what 10,000 sites keep:
// policy, decisions, stored watermark and the agent's status) with no traffic at all: its event
// loop copies every client and every retained message each second (Clients.GetAll twice,
// Retained.GetAll) under their locks. Reports MB allocated and CPU per second.
//
//	go test -run '^$' -bench BenchmarkIdleBrokerHousekeeping -benchtime 1x ./controller/mqtt/
func BenchmarkIdleBrokerHousekeeping(b *testing.B) {
	const sites = 10000
	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: quietLogger()})
	for i := range sites {
		srv.Clients.Add(srv.NewClient(nil, "bench", fmt.Sprintf("dev-%d", i), false))
	}
	if err := srv.Serve(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for i := range 4 * sites {
		if err := srv.Publish(fmt.Sprintf("edgewan/v1/site-%d/k%d", i/4, i%4), []byte(`{"v":1}`), true, 1); err != nil {
			b.Fatal(err)
		}
	}
	const span = 5 * time.Second
	var mb, cpu float64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		var r0, r1 syscall.Rusage
		runtime.ReadMemStats(&m0)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		time.Sleep(span) // measuring what happens while nothing else does
		runtime.ReadMemStats(&m1)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		mb += float64(m1.TotalAlloc-m0.TotalAlloc) / 1e6 / span.Seconds()
		cpu += float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / 1e6 / span.Seconds()
	}
	b.ReportMetric(mb/float64(b.N), "MB/s")
	b.ReportMetric(cpu/float64(b.N), "cpu-ms/s")
}
