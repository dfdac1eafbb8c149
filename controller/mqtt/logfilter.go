package mqtt

import (
	"context"
	"log/slog"
)

// mochiLogger wraps the logger given to mochi: mochi logs whole packets (attribute "pk") when it
// refuses one, and a CONNECT packet holds the client's password. The packet is dropped from
// the record, and mochi's per-packet errors go to debug level: the hooks already log refusals
// once, with what matters.
func mochiLogger(l *slog.Logger) *slog.Logger {
	return slog.New(&packetFilter{h: l.Handler()})
}

type packetFilter struct{ h slog.Handler }

func (f *packetFilter) Enabled(ctx context.Context, lvl slog.Level) bool {
	return f.h.Enabled(ctx, lvl)
}

func (f *packetFilter) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	if r.Message == "error processing packet" {
		out.Level = slog.LevelDebug
		if !f.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "pk" {
			out.AddAttrs(a)
		}
		return true
	})
	return f.h.Handle(ctx, out)
}

func (f *packetFilter) WithAttrs(as []slog.Attr) slog.Handler {
	keep := make([]slog.Attr, 0, len(as))
	for _, a := range as {
		if a.Key != "pk" {
			keep = append(keep, a)
		}
	}
	return &packetFilter{h: f.h.WithAttrs(keep)}
}

func (f *packetFilter) WithGroup(name string) slog.Handler {
	return &packetFilter{h: f.h.WithGroup(name)}
}
