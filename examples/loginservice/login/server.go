package login

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	"go.uber.org/fx"
)

type serverParams struct {
	fx.In

	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Listener   net.Listener
	Mux        *http.ServeMux
	Logger     *slog.Logger
}

// newServer serves the mux on the listener from OnStart, which runs after
// the runtime's OnStart (the server is built from what the runtime
// provides): the first request finds the store ready and the schema
// migrated. OnStop shuts the server down before the runtime closes.
func newServer(p serverParams) *http.Server {
	srv := &http.Server{
		Handler: abortOnPanic(p.Mux, p.Logger),
		// A login body is small: slow clients are cut off early, so that
		// they cannot hold connections open cheaply.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(p.Logger.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				if err := srv.Serve(p.Listener); !errors.Is(err, http.ErrServerClosed) {
					p.Logger.LogAttrs(context.Background(), slog.LevelError, "login: server stopped", slog.String("error", err.Error()))
					_ = p.Shutdowner.Shutdown(fx.ExitCode(1))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			select {
			case <-done:
			case <-ctx.Done():
			}
			return err
		},
	})
	return srv
}

// abortOnPanic logs a panic of next without the request's peer and aborts
// the response with http.ErrAbortHandler, which net/http ends the
// connection on without a record of its own: that record would start
// "http: panic serving" and the client's address.
//
// The record names the route, the panic (a runtime error's text, which
// holds indexes and types, never request data; of any other value only
// its type, which may be an error that quotes what it was given) and the
// panicking stack as functions and lines, without the argument words a
// goroutine dump prints, which can hold an address's bits.
func abortOnPanic(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v != http.ErrAbortHandler {
				what := fmt.Sprintf("%T", v)
				if rerr, ok := v.(runtime.Error); ok {
					what = rerr.Error()
				}
				logger.LogAttrs(r.Context(), slog.LevelError, "login: handler panicked",
					slog.String("route", r.Pattern), slog.String("panic", what), slog.String("stack", stack()))
			}
			panic(http.ErrAbortHandler)
		}()
		next.ServeHTTP(w, r)
	})
}

// stack returns the calling goroutine's stack from the panic down, one
// "function file:line" per line.
func stack() string {
	pcs := make([]uintptr, 32)
	// Skip runtime.Callers, stack and the deferred function.
	pcs = pcs[:runtime.Callers(3, pcs)]
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s %s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}
