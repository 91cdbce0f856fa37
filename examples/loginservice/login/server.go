package login

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
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
		Handler: p.Mux,
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
