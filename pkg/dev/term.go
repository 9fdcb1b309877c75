package dev

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// termHandler writes one short line per record for a person at a terminal:
// the time, the game and instance it is about, the message, the rest as
// key=value; a line of the game's instance.log as its plain text. Debug records are kept: players joining and leaving are logged
// at that level.
type termHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

func newTermHandler(w io.Writer) *termHandler { return &termHandler{mu: &sync.Mutex{}, w: w} }

func (h *termHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *termHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *termHandler) WithGroup(string) slog.Handler { return h }

func (h *termHandler) Handle(_ context.Context, r slog.Record) error {
	var game, instance, gameLog string
	var rest []string
	add := func(a slog.Attr) bool {
		switch {
		case r.Message == "game log" && a.Key == "msg":
			gameLog = a.Value.String()
		case a.Key == "game":
			game = a.Value.String()
		case a.Key == "instance":
			instance = a.Value.String()
		default:
			v := a.Value.Resolve().String()
			if strings.ContainsAny(v, " \t\n\"") || v == "" {
				v = fmt.Sprintf("%q", v)
			}
			rest = append(rest, a.Key+"="+v)
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	var b strings.Builder
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b.WriteString(t.Format("15:04:05"))
	if game != "" {
		b.WriteString(" " + game)
		if instance != "" {
			b.WriteString(" " + instance)
		}
		b.WriteString(":")
	}
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString(" error:")
	case r.Level >= slog.LevelWarn:
		b.WriteString(" warning:")
	}
	if r.Message == "game log" {
		// instance.log(...) from the game's code: its text as it is.
		b.WriteString(" log: " + gameLog)
	} else {
		b.WriteString(" " + r.Message)
	}
	for _, kv := range rest {
		b.WriteString(" " + kv)
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}
