// Command loginservice is a small web service with a POST /login endpoint
// behind Runlimit: a middleware counts the client network before the body
// is read, and the handler counts the client and the identity as one batch
// before it looks at the password. GET /metrics serves what Runlimit
// counted, for Prometheus. See README.md beside this file.
//
//	go run ./examples/loginservice                     # quota in memory
//	RUNLIMIT_DATABASE_URL=postgres://... RUNLIMIT_KEY_SECRET=... \
//		RUNLIMIT_MIGRATE=true go run ./examples/loginservice # PostgreSQL
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/examples/loginservice/promfx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stderr, nil)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "loginservice:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done or the service stops itself. listening,
// when set, is told the address once requests are served.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer, listening func(net.Addr)) error {
	s, err := parseSettings(args, lookup, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: s.level}))
	s.config.Logger = logger
	if s.ephemeralSecret {
		logger.Warn("loginservice: RUNLIMIT_KEY_SECRET is not set: using a random key secret for this process (fine for the memory store, whose counters end with the process)")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // until the server owns it; closing twice is harmless

	app := fx.New(
		login.Options(s.config, ln),
		// GET /metrics, and the meter provider that Runlimit's module
		// records admissions, latency, headroom and cleanup into.
		promfx.Module,
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: logger}
			l.UseLogLevel(slog.LevelDebug) // fx's wiring steps are noise at info
			return l
		}),
	)
	startCtx, cancel := context.WithTimeout(ctx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	logger.Info("loginservice: listening", slog.String("addr", ln.Addr().String()), slog.String("backend", backendOf(s.config)))
	if listening != nil {
		listening(ln.Addr())
	}
	var code int
	select {
	case <-ctx.Done():
	case sig := <-app.Wait():
		code = sig.ExitCode
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := app.Stop(stopCtx); err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("stopped with exit code %d", code)
	}
	return nil
}

// backendOf says where the quota is kept.
func backendOf(cfg login.Config) string {
	if cfg.Runtime.DatabaseURL.IsZero() && cfg.Runtime.Backend != wiring.BackendPostgres {
		return "memory"
	}
	return "postgres, memory gate in front"
}
