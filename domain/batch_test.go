package domain_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// distinctChecks returns n valid checks with distinct counter keys.
func (f fixture) distinctChecks(n int) []domain.Check {
	checks := make([]domain.Check, n)
	for i := range checks {
		checks[i] = f.check(fmt.Sprintf("subject-%d", i))
	}
	return checks
}

func TestBatchAccepts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := newPolicy(t, "auth.login", "client", 40, time.Minute)

	cases := []struct {
		name    string
		checks  []domain.Check
		maxSize int
	}{
		{"one check", f.distinctChecks(1), 0},
		{"exactly the configured maximum", f.distinctChecks(3), 3},
		{"exactly the default maximum", f.distinctChecks(domain.DefaultMaxBatchSize), 0},
		{"negative maximum means the default", f.distinctChecks(domain.DefaultMaxBatchSize), -1},
		{"same subject key under two policies", []domain.Check{
			domain.NewCheck(f.policy, f.key("s")),
			domain.NewCheck(other, f.key("s")),
		}, 0},
		{"all shadow", []domain.Check{
			domain.NewCheck(withMode(t, f.policy, domain.Shadow), f.key("a")),
			domain.NewCheck(withMode(t, other, domain.Shadow), f.key("b")),
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := domain.NewBatch(tc.checks, tc.maxSize)
			require.NoError(t, err)
			require.Equal(t, len(tc.checks), b.Len())
			require.Equal(t, tc.checks[0].Policy().Mode(), b.Mode())
			for i, c := range tc.checks {
				require.Equal(t, c, b.Check(i))
				require.Equal(t, c.CounterKey(), b.Key(i))
			}
		})
	}
}

func TestBatchRejects(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shadow := withMode(t, f.policy, domain.Shadow)
	zeroKey := domain.NewCheck(f.policy, domain.SubjectKey{})

	// with returns the distinct checks a, b, c, ... with some replaced.
	with := func(n int, replace map[int]domain.Check) []domain.Check {
		checks := f.distinctChecks(n)
		for i, c := range replace {
			checks[i] = c
		}
		return checks
	}
	costly, err := domain.NewCheckCost(f.policy, f.key("subject-0"), 3)
	require.NoError(t, err)
	// A policy built again with the same identity is another value with
	// the same fingerprint: its checks share counters with f.policy's.
	twin := newPolicy(t, f.policy.ID().String(), f.policy.Scope().String(), f.policy.Limit(), f.policy.Window())
	require.Equal(t, f.policy.Fingerprint(), twin.Fingerprint())
	// Batches above 64 checks find duplicates by hashing rather than by
	// comparing each check with every earlier one; these cases hold both.
	const large = 500

	cases := []struct {
		name    string
		checks  []domain.Check
		maxSize int
		want    domain.BatchError
		text    string
	}{
		{
			name: "nil", checks: nil,
			want: domain.BatchError{Problem: domain.BatchEmpty},
			text: "runlimit: invalid batch: no checks",
		},
		{
			name: "empty", checks: []domain.Check{},
			want: domain.BatchError{Problem: domain.BatchEmpty},
		},
		{
			name: "configured maximum plus one", checks: f.distinctChecks(4), maxSize: 3,
			want: domain.BatchError{Problem: domain.BatchTooLarge, Size: 4, Max: 3},
			text: "runlimit: invalid batch: 4 checks, at most 3 allowed",
		},
		{
			name: "default maximum plus one", checks: f.distinctChecks(domain.DefaultMaxBatchSize + 1),
			want: domain.BatchError{Problem: domain.BatchTooLarge, Size: 33, Max: 32},
		},
		{
			name: "mixed modes name the index", checks: with(3, map[int]domain.Check{2: domain.NewCheck(shadow, f.key("x"))}),
			want: domain.BatchError{Problem: domain.BatchMixedModes, Size: 3, Index: 2, First: 0},
			text: "runlimit: invalid batch: check 2 has a different quota mode than check 0",
		},
		{
			name: "mixed modes when the first is shadow", checks: with(2, map[int]domain.Check{0: domain.NewCheck(shadow, f.key("x"))}),
			want: domain.BatchError{Problem: domain.BatchMixedModes, Size: 2, Index: 1, First: 0},
		},
		{
			name: "duplicate key names both indexes", checks: with(4, map[int]domain.Check{3: f.check("subject-1")}),
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 4, Index: 3, First: 1},
			text: "runlimit: invalid batch: checks 1 and 3 share a counter key",
		},
		{
			name: "duplicate key under an equal policy", checks: with(3, map[int]domain.Check{2: domain.NewCheck(twin, f.key("subject-0"))}),
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 3, Index: 2, First: 0},
		},
		{
			name: "large batch: duplicate key names both indexes", checks: with(large, map[int]domain.Check{large - 1: f.check("subject-7")}), maxSize: large,
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: large, Index: large - 1, First: 7},
		},
		{
			name: "large batch: duplicate key under an equal policy", checks: with(large, map[int]domain.Check{300: domain.NewCheck(twin, f.key("subject-299"))}), maxSize: large,
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: large, Index: 300, First: 299},
		},
		{
			name: "large batch: the first of several duplicates", checks: with(large, map[int]domain.Check{
				200: f.check("subject-3"), 100: f.check("subject-2"), 400: costly}), maxSize: large,
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: large, Index: 100, First: 2},
		},
		{
			name: "large batch: same subject under another policy is no duplicate, a mode mismatch after it is found", checks: with(large, map[int]domain.Check{
				450: domain.NewCheck(shadow, f.key("x"))}), maxSize: large,
			want: domain.BatchError{Problem: domain.BatchMixedModes, Size: large, Index: 450, First: 0},
		},
		{
			name: "large batch: duplicate before an invalid check", checks: with(large, map[int]domain.Check{
				65: f.check("subject-64"), 66: zeroKey}), maxSize: large,
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: large, Index: 65, First: 64},
		},
		{
			name: "duplicate key with another cost", checks: with(2, map[int]domain.Check{1: costly}),
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 2, Index: 1, First: 0},
		},
		{
			name: "same counter key in another mode is a mode error first", checks: []domain.Check{f.check("s"), domain.NewCheck(shadow, f.key("s"))},
			want: domain.BatchError{Problem: domain.BatchMixedModes, Size: 2, Index: 1, First: 0},
		},
		// Order: size before anything found by the walk.
		{
			name: "oversized with duplicates reports the size", checks: with(4, map[int]domain.Check{1: f.check("subject-0")}), maxSize: 3,
			want: domain.BatchError{Problem: domain.BatchTooLarge, Size: 4, Max: 3},
		},
		{
			name: "oversized with an invalid check reports the size", checks: with(4, map[int]domain.Check{0: {}}), maxSize: 3,
			want: domain.BatchError{Problem: domain.BatchTooLarge, Size: 4, Max: 3},
		},
		// Order: the walk reports the first problem in caller order.
		{
			name: "duplicate at 1 before a mode mismatch at 2", checks: with(3, map[int]domain.Check{1: f.check("subject-0"), 2: domain.NewCheck(shadow, f.key("x"))}),
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 3, Index: 1, First: 0},
		},
		{
			name: "mode mismatch at 1 before a duplicate at 2", checks: with(3, map[int]domain.Check{1: domain.NewCheck(shadow, f.key("x")), 2: f.check("subject-0")}),
			want: domain.BatchError{Problem: domain.BatchMixedModes, Size: 3, Index: 1, First: 0},
		},
		{
			name: "duplicate at 1 before an invalid check at 2", checks: with(3, map[int]domain.Check{1: f.check("subject-0"), 2: zeroKey}),
			want: domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 3, Index: 1, First: 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := domain.NewBatch(tc.checks, tc.maxSize)
			require.Nil(t, b)
			requireBatchError(t, err, tc.want)
			if tc.text != "" {
				require.EqualError(t, err, tc.text)
			}
		})
	}
}

func TestBatchInvalidCheck(t *testing.T) {
	t.Parallel()
	f := setup(t)

	checks := f.distinctChecks(4)
	checks[2] = domain.NewCheck(f.policy, domain.SubjectKey{})
	checks[3] = domain.Check{} // later problems are not reached

	_, err := domain.NewBatch(checks, 0)
	require.ErrorIs(t, err, domain.ErrInvalidBatch)
	require.ErrorIs(t, err, domain.ErrInvalidCheck)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	var be *domain.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, domain.BatchInvalidCheck, be.Problem)
	require.Equal(t, 2, be.Index)
	require.Equal(t, 4, be.Size)
	var ce *domain.CheckError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, domain.CheckZeroKey, ce.Problem)
	require.Same(t, ce, be.Err)
	require.EqualError(t, err, "runlimit: invalid batch: check 2: runlimit: invalid check: zero subject key (derive one with a KeyHasher)")

	// An invalid first check is found before its mode is compared.
	_, err = domain.NewBatch([]domain.Check{{}, f.check("a")}, 0)
	requireBatchError(t, err, domain.BatchError{Problem: domain.BatchInvalidCheck, Size: 2, Index: 0, Err: &domain.CheckError{Problem: domain.CheckZeroPolicy}})
}

func TestBatchResetReusesTheBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)

	b := newBatch(t, f.distinctChecks(3)...)
	require.Equal(t, 3, b.Len())

	// A failed Reset leaves the batch unusable for a store...
	dup := []domain.Check{f.check("a"), f.check("a")}
	requireBatchError(t, b.Reset(dup, 0), domain.BatchError{Problem: domain.BatchDuplicateKey, Size: 2, Index: 1, First: 0})
	_, err := b.Evaluate(0)
	require.ErrorIs(t, err, domain.ErrBatchProtocol)

	// ...and a later Reset makes it whole again, with the new checks only.
	checks := []domain.Check{f.check("x"), f.check("y")}
	require.NoError(t, b.Reset(checks, 0))
	require.Equal(t, 2, b.Len())
	for i, c := range checks {
		require.Equal(t, c, b.Check(i))
		require.Equal(t, c.CounterKey(), b.Key(i))
	}
	commit, err := observeAndEvaluate(t, b, ms(10), domain.Observation{}, domain.Observation{})
	require.NoError(t, err)
	require.True(t, commit)

	// A reset after an evaluation starts a fresh protocol run.
	require.NoError(t, b.Reset(checks[:1], 0))
	_, err = b.Decision()
	require.ErrorIs(t, err, domain.ErrBatchProtocol)
	commit, err = observeAndEvaluate(t, b, ms(10), domain.Observation{})
	require.NoError(t, err)
	require.True(t, commit)
	bd, err := b.Decision()
	require.NoError(t, err)
	require.Equal(t, 1, bd.Size())
	require.Len(t, bd.Decisions(), 1)
}

func requireBatchError(t *testing.T, err error, want domain.BatchError) {
	t.Helper()
	require.ErrorIs(t, err, domain.ErrInvalidBatch)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	var be *domain.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, want, *be)
}

func BenchmarkBatchReset(b *testing.B) {
	f := setup(b)
	other := newPolicy(b, "auth.login", "client", 40, time.Minute)
	// Distinct subjects per iteration, as requests bring them.
	const subjects = 1024
	pairs := make([][2]domain.Check, subjects)
	for i := range pairs {
		s := fmt.Sprintf("user%06d@example.test", i)
		pairs[i] = [2]domain.Check{f.check(s), domain.NewCheck(other, f.hasher.KeyString(other, s))}
	}
	require.NotEqual(b, pairs[0][0].CounterKey(), pairs[1][0].CounterKey())

	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			batch := new(domain.Batch)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := batch.Reset(pairs[i%subjects][:n], 0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	// Large batches, for hosts that allow them: one request's validation
	// must grow with its size, not with its square.
	for _, n := range []int{64, 65, 1024, 16384} {
		checks := f.distinctChecks(n)
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			batch := new(domain.Batch)
			b.ReportAllocs()
			for b.Loop() {
				if err := batch.Reset(checks, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBatchReady(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var nilBatch *domain.Batch
	require.ErrorIs(t, nilBatch.Ready(), domain.ErrInvalidInput, "a nil batch")
	var be *domain.BatchError
	require.ErrorAs(t, nilBatch.Ready(), &be)
	require.Equal(t, domain.BatchNotPrepared, be.Problem)
	require.ErrorIs(t, new(domain.Batch).Ready(), domain.ErrInvalidInput, "a batch never reset")

	b := newBatch(t, f.check("a"), f.check("b"))
	require.NoError(t, b.Ready(), "a prepared batch")
	b.Observe(0, domain.Observation{})
	require.ErrorIs(t, b.Ready(), domain.ErrBatchProtocol, "a batch a store has begun to observe")
	b.Observe(1, domain.Observation{})
	_, err := b.Evaluate(0)
	require.NoError(t, err)
	require.ErrorIs(t, b.Ready(), domain.ErrBatchProtocol, "an evaluated batch")
	require.NotErrorIs(t, b.Ready(), domain.ErrInvalidInput)

	require.Error(t, b.Reset(nil, 0))
	require.ErrorIs(t, b.Ready(), domain.ErrInvalidInput, "a batch whose Reset failed")
	require.NoError(t, b.Reset([]domain.Check{f.check("c")}, 0))
	require.NoError(t, b.Ready(), "a batch prepared again")
}
