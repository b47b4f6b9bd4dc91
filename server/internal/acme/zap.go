package acme

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger sends certmagic's log (zap) to Arka's error log (slog). Its
// Info lines (locks, each step of an order) become Debug: Arka logs the
// outcomes itself.
func zapLogger(l *slog.Logger) *zap.Logger {
	return zap.New(&slogCore{log: l})
}

type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func level(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.log.Enabled(context.Background(), level(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(append([]zapcore.Field(nil), c.fields...), fs...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	attrs := make([]any, 0, 2*len(enc.Fields)+2)
	if e.LoggerName != "" {
		attrs = append(attrs, "certmagic", e.LoggerName)
	}
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	c.log.Log(context.Background(), level(e.Level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
