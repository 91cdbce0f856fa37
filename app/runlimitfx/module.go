package runlimitfx

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// Module wires Runlimit into an fx application. It needs a [wiring.Config]
// in the graph (fx.Supply or a constructor of the host's) and provides:
//
//   - *[wiring.Runtime], whose Gate is the memory gate of Config.Gate;
//   - *[app.Limiter] and [ports.Limiter], the limiter over the shared quota;
//   - [domain.KeyHasher], built from the secret in Config.SecretEnv.
//
// With the postgres backend and neither Config.DatabaseURL nor Config.Pool
// set, the Runtime borrows the *pgxpool.Pool of the graph, if there is one,
// and never closes it.
//
// Building the Runtime touches no network. The lifecycle does the rest:
// OnStart applies the schema if Config.Migrate is set, checks that the store
// answers and starts the cleanup loop; OnStop stops the loop and closes what
// the Runtime opened, as [wiring.Runtime.Close] does. A failed OnStart closes it
// at once, since fx runs no OnStop for a hook whose OnStart failed.
var Module = fx.Module("runlimit",
	fx.Provide(
		provideRuntime,
		(*wiring.Runtime).Limiter,
		func(r *wiring.Runtime) ports.Limiter { return r.Limiter() },
		(*wiring.Runtime).KeyHasher,
	),
)

// moduleIn is what [Module] takes from the graph.
type moduleIn struct {
	fx.In

	Config    wiring.Config
	Pool      *pgxpool.Pool `optional:"true"`
	Lifecycle fx.Lifecycle
}

func provideRuntime(in moduleIn) (*wiring.Runtime, error) {
	cfg := in.Config
	if cfg.Backend == wiring.BackendPostgres && cfg.DatabaseURL.IsZero() && cfg.Pool == nil {
		cfg.Pool = in.Pool
	}
	r, err := wiring.New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	in.Lifecycle.Append(fx.Hook{OnStart: r.Start, OnStop: r.Close})
	return r, nil
}
