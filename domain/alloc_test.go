//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocation
// counts are only meaningful without it. These tests are not parallel:
// testing.AllocsPerRun refuses to run in a parallel test.

package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestKeyHasherDoesNotAllocate(t *testing.T) {
	f := setup(t)

	short := "user@example.test"
	long := strings.Repeat("s", 2000)
	longBytes := []byte(long)
	cases := map[string]func(){
		"short string": func() { _ = f.hasher.KeyString(f.policy, short) },
		"long string":  func() { _ = f.hasher.KeyString(f.policy, long) },
		"long bytes":   func() { _ = f.hasher.Key(f.policy, longBytes) },
	}
	for name, derive := range cases {
		derive() // fill the scratch pool
		require.Zero(t, testing.AllocsPerRun(100, derive), name)
	}
}

func TestBatchReuseDoesNotAllocate(t *testing.T) {
	f := setup(t)

	two := []domain.Check{f.check("a"), f.check("b")}
	one := []domain.Check{f.check("c")}
	b := newBatch(t, two...)
	var err error
	run := func() {
		// Full protocol runs of two sizes on the same memory.
		for _, checks := range [][]domain.Check{two, one} {
			if err = b.Reset(checks, 0); err != nil {
				return
			}
			for i := range checks {
				b.Observe(i, domain.Observation{})
			}
			if _, err = b.Evaluate(ms(1)); err != nil {
				return
			}
			if _, err = b.Decision(); err != nil {
				return
			}
		}
	}
	run()
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(100, run))
	require.NoError(t, err)
}

// TestResetSingleOnTheStackDoesNotAllocate drives a whole batch of one
// through a Batch declared as a local variable, as a store's single-check
// path does: neither the batch nor the check may move to the heap.
func TestResetSingleOnTheStackDoesNotAllocate(t *testing.T) {
	f := setup(t)
	c := f.check("a")
	var err error
	var d domain.Decision
	run := func() {
		var b domain.Batch
		if err = b.ResetSingle(&c); err != nil {
			return
		}
		b.Observe(0, domain.Observation{})
		if _, err = b.Evaluate(ms(1)); err != nil {
			return
		}
		d, _, err = b.DecisionOf(0)
	}
	run()
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, d.Outcome())
	require.Zero(t, testing.AllocsPerRun(100, run))
}
