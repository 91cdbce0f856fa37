package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// TestNothingPrintsKeysOrSubjects prints the store while it holds entries,
// when a shard is poisoned and once closed, and every error, stat and
// config it returns, looking for subjects, subject keys, the secret and the
// hasher's keyed state.
func TestNothingPrintsKeysOrSubjects(t *testing.T) {
	t.Parallel()
	clock := new(testkit.TrapClock)
	f := setup(t, memory.Config{MaxKeys: 6, Shards: 2, Clock: clock})
	ctx := context.Background()
	p := policy(2, time.Minute)
	subjects := append(f.subjectsOnShard(t, p, 0, 4), f.subjectsOnShard(t, p, 1, 2)...)
	var checks []domain.Check
	for _, s := range subjects {
		checks = append(checks, f.check(p, s))
	}
	for _, c := range checks[:2] {
		f.allow(t, c)
	}
	f.allow(t, checks[4])
	stats, err := f.store.Stats(ctx)
	require.NoError(t, err)

	cases := []leakcheck.Case{leakcheck.Value("Store with entries", f.store), leakcheck.Value("Stats", stats)}
	_, err = f.limiter.CheckAll(ctx, checks[:4]) // four on a shard of three
	require.ErrorAs(t, err, new(*memory.ShardOverflowError))
	cases = append(cases, leakcheck.Value("ShardOverflowError", err))

	clock.Arm(true)
	require.Panics(t, func() { _, _ = f.limiter.Check(ctx, checks[5]) })
	clock.Arm(false)
	_, err = f.limiter.Check(ctx, checks[5])
	require.ErrorAs(t, err, new(*memory.PoisonedShardError))
	cases = append(cases, leakcheck.Value("PoisonedShardError", err), leakcheck.Value("Store with a poisoned shard", f.store))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.limiter.Check(cancelled, checks[0])
	require.ErrorAs(t, err, new(*memory.OpError))
	cases = append(cases, leakcheck.Value("OpError of a done context", err))
	_, err = f.store.CleanupExpired(ctx, -1)
	cases = append(cases, leakcheck.Value("OpError of a negative max", err))
	var nilCtx context.Context
	_, err = f.store.AdmitCheck(nilCtx, checks[0])
	require.ErrorIs(t, err, ports.ErrNilContext)
	cases = append(cases, leakcheck.Value("OpError of a nil context", err))

	_, err = memory.New(memory.Config{MaxKeys: -1})
	require.ErrorIs(t, err, memory.ErrInvalidConfig)
	// Stopped, so that printers reading its fields without atomics do not
	// race with its goroutine.
	coarse := memory.NewCoarseClock()
	coarse.Stop()
	cases = append(cases,
		leakcheck.Value("ConfigError", err),
		leakcheck.Value("Config", memory.Config{MaxKeys: 1, Clock: clock}),
		leakcheck.Value("ManualClock", memory.NewManualClock()),
		leakcheck.Value("CoarseClock", coarse),
		leakcheck.Value("ErrClosed", memory.ErrClosed),
		leakcheck.Value("ErrPoisoned", memory.ErrPoisoned),
		leakcheck.Value("ErrNegativeMax", memory.ErrNegativeMax),
		leakcheck.Value("nil Store", (*memory.Store)(nil)),
	)

	require.NoError(t, f.store.Close())
	_, err = f.limiter.Check(ctx, checks[0])
	require.ErrorIs(t, err, memory.ErrClosed)
	cases = append(cases, leakcheck.Value("OpError of a closed store", err), leakcheck.Value("closed Store", f.store))

	secrets := append([][]byte{testSecret}, leakcheck.KeyedStates(t, testSecret)...)
	for i, c := range checks {
		k := c.SubjectKey().Bytes()
		secrets = append(secrets, k[:], []byte(subjects[i]))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, secrets...)
		})
	}
}
