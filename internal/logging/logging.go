package logging

import (
	"io"
	"os"

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

// New returns a logr.Logger writing to stderr; see NewTo.
func New(development bool) (logr.Logger, zap.AtomicLevel) {
	return NewTo(os.Stderr, development)
}

// NewTo returns a logr.Logger backed by zap, writing to w, and the level
// that controls it: JSON lines by default, human-readable console lines
// for development. Setting the level (see SetLevel) takes effect at once in
// every logger derived from the result. No sampling: an operator's log must
// not drop the one line that explains a failure.
func NewTo(w io.Writer, development bool) (logr.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	if development {
		enc = zap.NewDevelopmentEncoderConfig()
		encoder = zapcore.NewConsoleEncoder(enc)
	} else {
		encoder = zapcore.NewJSONEncoder(enc)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(zapcore.AddSync(w)), level)
	return zapr.NewLogger(zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w))))), level
}

// SetLevel applies an OperatorConfig log level name. Debug also enables the
// V(1) lines of the reconcilers.
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
