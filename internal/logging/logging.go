package logging

import (
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Level names, as OperatorConfig spells them.
const (
	Debug = "Debug"
	Info  = "Info"
	Error = "Error"
)

// New returns a logr.Logger backed by zap and the level that controls it.
// JSON lines by default; development adds a human-readable console encoder.
// Setting the returned level (see SetLevel) takes effect at once in every
// logger derived from the result.
func New(development bool) (logr.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	var cfg zap.Config
	if development {
		cfg = zap.NewDevelopmentConfig()
	} else {
		cfg = zap.NewProductionConfig()
		// Sampling drops repeated lines; an operator's log must not lose the
		// one line that explains a failure.
		cfg.Sampling = nil
	}
	cfg.Level = level
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zl, err := cfg.Build()
	if err != nil {
		// The configuration above is static; failing to build it is a bug.
		panic(err)
	}
	return zapr.NewLogger(zl), level
}

// SetLevel applies an OperatorConfig log level name. Debug also enables the
// V(1) lines of controller-runtime and of the reconcilers.
func SetLevel(level zap.AtomicLevel, name string) {
	switch name {
	case Debug:
		level.SetLevel(zapcore.Level(-1))
	case Error:
		level.SetLevel(zapcore.ErrorLevel)
	default:
		level.SetLevel(zapcore.InfoLevel)
	}
}
