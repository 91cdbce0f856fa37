package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// TestClosedIsOneContract: once a Runtime is closed, its Ready and Start
// and its limiters' checks all answer with errors matching the one closed
// contract of ports, ports.ErrClosed, and wiring.ErrClosed still matches
// the Runtime's own answers. A host's probe and its request path test one
// sentinel.
func TestClosedIsOneContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) wiring.Config
	}{
		{"memory", memoryConfig},
		{"store opened by the runtime", func(t *testing.T) wiring.Config {
			return wiring.Config{
				KeySecret: wiring.NewSecret(testSecret),
				NewStoreFunc: func(context.Context) (ports.Store, error) {
					return memory.New(memory.Config{MaxKeys: 10})
				},
			}
		}},
		{"postgres with a gate", func(t *testing.T) wiring.Config {
			return wiring.Config{
				Backend: wiring.BackendPostgres, DatabaseURL: wiring.NewSecret(pgtest.New(t).URL),
				Gate: &memory.Config{MaxKeys: 10}, KeySecret: wiring.NewSecret(testSecret),
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, err := wiring.Open(ctx, tc.cfg(t))
			require.NoError(t, err)
			require.NoError(t, r.Close(ctx))

			p := loginPolicy(t, "auth.login")
			c := domain.NewCheck(p, r.KeyHasher().KeyString(p, "user"))
			answers := map[string]error{"Ready": r.Ready(ctx), "Start": r.Start(ctx)}
			_, answers["Check"] = r.Limiter().Check(ctx, c)
			if r.Gate() != nil {
				_, answers["Gate.Check"] = r.Gate().Check(ctx, c)
			}
			for name, err := range answers {
				require.ErrorIs(t, err, ports.ErrClosed, "%s after Close", name)
			}
			require.ErrorIs(t, answers["Ready"], wiring.ErrClosed)
			require.ErrorIs(t, answers["Start"], wiring.ErrClosed)
		})
	}
}
