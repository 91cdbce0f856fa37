package mapstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/mapstore"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// TestNothingPrintsKeysOrSubjects prints the store while it holds
// counters, its config and its errors, looking for the subjects and their
// subject keys: the counter keys it stores are masked for this process.
func TestNothingPrintsKeysOrSubjects(t *testing.T) {
	t.Parallel()
	cfg := mapstore.Config{Capacity: 10, Clock: func() time.Duration { return 0 }}
	store, err := mapstore.New(cfg)
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("Kq7#vZ2!mW9@pL4$xR8^tB1&yN6*cJ3%"))
	require.NoError(t, err)
	p := domain.MustPolicy("test.mapstore", "subject", 1, time.Minute)
	subjects := []string{"u7Qx.alice@host9.zz", "203.0.113.77"} // no word of a path or a message
	var checks []domain.Check
	for _, s := range subjects {
		checks = append(checks, domain.NewCheck(p, hasher.KeyString(p, s)))
	}
	b, err := domain.NewBatch(checks, 2)
	require.NoError(t, err)
	require.NoError(t, store.Admit(context.Background(), b))
	admitErr := store.Admit(context.Background(), b) // already driven
	require.ErrorAs(t, admitErr, new(*mapstore.AdmitError))
	_, capacityErr := mapstore.New(mapstore.Config{})

	var secrets [][]byte
	for i, c := range checks {
		k := c.SubjectKey().Bytes()
		secrets = append(secrets, []byte(subjects[i]), k[:])
	}
	for name, check := range map[string]func(t *testing.T){
		"Store":      func(t *testing.T) { leakcheck.Check(t, "Store", store, secrets...) },
		"Store dump": func(t *testing.T) { leakcheck.CheckDump(t, "Store", store, secrets...) },
		"Config":     func(t *testing.T) { leakcheck.Check(t, "Config", cfg, secrets...) },
		"AdmitError": func(t *testing.T) { leakcheck.Check(t, "AdmitError", admitErr, secrets...) },
		"ErrCapacity": func(t *testing.T) {
			require.ErrorIs(t, capacityErr, mapstore.ErrCapacity)
			leakcheck.Check(t, "ErrCapacity", capacityErr, secrets...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t)
		})
	}
}
