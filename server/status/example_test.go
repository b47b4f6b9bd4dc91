package status_test

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server/status"
)

// Example shows how the server wires the status route: detect the board once,
// keep a thermal governor and a history, sample every 10 s in a goroutine it owns,
// and mount the handler built from the route's allow list.
func Example() {
	b, err := board.Detect("/")
	if err != nil {
		return
	}
	thermal := board.NewThermal(0, 0, slog.Default()) // 80 °C, resume at 75 °C
	started := time.Now()
	src := status.SourceFunc(func() status.Snapshot {
		return status.Snapshot{
			Time: time.Now(), Version: "dev", StartedAt: started,
			Board:   status.BoardInfoFrom(b),
			Sensors: board.ReadSensors("/", "/perm"),
			Thermal: thermal.State(),
			Memory:  status.ReadProcessMemory(),
			// Routes, Caches, FastCGI, Upstreams, PHPFPM: from the server's counters.
		}
	})
	hist := status.NewHistory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go hist.Run(ctx, status.SampleInterval, src, func(s *status.Snapshot) {
		if s.Sensors.TempC != nil {
			thermal.Update(*s.Sensors.TempC)
		}
	})
	allow, err := status.ParseAllow([]string{"127.0.0.0/8", "::1/128", "192.168.0.0/16"})
	if err != nil {
		return
	}
	h, err := status.New(status.Options{Allow: allow, Source: src, History: hist})
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/status", h)
	_ = mux // the server mounts it in its router
}
