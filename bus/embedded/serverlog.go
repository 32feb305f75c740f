package embedded

import (
	"fmt"
	"log/slog"
)

// serverLogger adapts nats-server's Logger to slog.
type serverLogger struct{ l *slog.Logger }

func (s serverLogger) Noticef(format string, v ...any) {
	s.l.Info(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLogger) Warnf(format string, v ...any) {
	s.l.Warn(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLogger) Fatalf(format string, v ...any) {
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats-server", "fatal", true)
}
func (s serverLogger) Errorf(format string, v ...any) {
	s.l.Error(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLogger) Debugf(format string, v ...any) {
	s.l.Debug(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (s serverLogger) Tracef(format string, v ...any) {
	s.l.Debug(fmt.Sprintf(format, v...), "component", "nats-server", "trace", true)
}
