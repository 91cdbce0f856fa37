package ports_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// consumer is a store error that knows whether it consumed quota.
type consumer struct{ consumed bool }

func (e consumer) Error() string              { return "store failed" }
func (e consumer) MayHaveConsumedQuota() bool { return e.consumed }

// invalidConsumer claims to be invalid input and to have consumed: invalid
// input never reaches storage, so that claim cannot be true.
type invalidConsumer struct{}

func (invalidConsumer) Error() string              { return "invalid" }
func (invalidConsumer) Is(target error) bool       { return target == domain.ErrInvalidInput }
func (invalidConsumer) MayHaveConsumedQuota() bool { return true }

// configConsumer claims to be a configuration error and to have
// consumed: nothing is built from an invalid configuration, so that claim
// cannot be true.
type configConsumer struct{}

func (configConsumer) Error() string              { return "bad config" }
func (configConsumer) Is(target error) bool       { return target == ports.ErrInvalidConfig }
func (configConsumer) MayHaveConsumedQuota() bool { return true }

func TestMayHaveConsumedQuota(t *testing.T) {
	t.Parallel()

	_, identifierErr := domain.NewPolicyID("")
	_, batchErr := domain.NewBatch(nil, 0)
	checkErr := domain.Check{}.Validate()

	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"invalid input sentinel", domain.ErrInvalidInput, false},
		{"invalid identifier", identifierErr, false},
		{"invalid check", checkErr, false},
		{"invalid batch", batchErr, false},
		{"wrapped invalid input", fmt.Errorf("limiter: %w", checkErr), false},
		{"invalid input wins over a consumer's claim", invalidConsumer{}, false},
		{"store error that did not consume", consumer{consumed: false}, false},
		{"store error that may have consumed", consumer{consumed: true}, true},
		{"wrapped store error that did not consume", fmt.Errorf("admit: %w", consumer{consumed: false}), false},
		{"joined store error that may have consumed", errors.Join(errors.New("commit"), consumer{consumed: true}), true},
		{"unknown error", errors.New("connection reset"), true},
		{"context cancelled", context.Canceled, true},
		{"broken batch protocol", domain.ErrBatchProtocol, true},
		{"corrupt stored counter, nothing persisted", &domain.CorruptCounterError{Index: 1}, false},
		{"invalid config sentinel", ports.ErrInvalidConfig, false},
		{"wrapped invalid config", fmt.Errorf("store: %w: MaxKeys is 0", ports.ErrInvalidConfig), false},
		{"joined invalid config", errors.Join(errors.New("open"), ports.ErrInvalidConfig), false},
		{"invalid config wins over a consumer's claim", configConsumer{}, false},
		{"closed store", ports.ErrClosed, false},
		{"wrapped closed store", fmt.Errorf("runtime: %w", ports.ErrClosed), false},
		{"a closed store's error that claims to have consumed", errors.Join(ports.ErrClosed, consumer{consumed: true}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, ports.MayHaveConsumedQuota(tc.err))
		})
	}
}

// The shared contracts are distinct, and only a negative cleanup maximum
// is the caller's mistake.
func TestSharedContracts(t *testing.T) {
	t.Parallel()
	sentinels := []error{ports.ErrClosed, ports.ErrInvalidConfig, ports.ErrNegativeMax}
	for i, a := range sentinels {
		for j, b := range sentinels {
			require.Equal(t, i == j, errors.Is(a, b), "%v against %v", a, b)
		}
	}
	require.ErrorIs(t, ports.ErrNegativeMax, domain.ErrInvalidInput)
	require.NotErrorIs(t, ports.ErrClosed, domain.ErrInvalidInput)
	require.False(t, ports.MayHaveConsumedQuota(ports.ErrNegativeMax))
}

func TestErrNotBuilt(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, ports.ErrNotBuilt, ports.ErrInvalidConfig)
	require.ErrorIs(t, ports.ErrNotBuilt, domain.ErrInvalidInput)
	require.NotErrorIs(t, ports.ErrNotBuilt, ports.ErrClosed)
	require.NotErrorIs(t, ports.ErrNotBuilt, ports.ErrNilContext)
	require.False(t, ports.MayHaveConsumedQuota(ports.ErrNotBuilt))
	require.False(t, ports.MayHaveConsumedQuota(fmt.Errorf("wrapped: %w", ports.ErrNotBuilt)))
}

// ptrConsumer is a store error whose methods dereference their receiver.
type ptrConsumer struct{ consumed bool }

func (e *ptrConsumer) Error() string              { return fmt.Sprint("store failed: ", e.consumed) }
func (e *ptrConsumer) MayHaveConsumedQuota() bool { return e.consumed }

// TestMayHaveConsumedQuotaOfANilPointer: an error that is a nil pointer in
// the interface, alone or wrapped, used to panic in its own
// MayHaveConsumedQuota. It is an unknown failure.
func TestMayHaveConsumedQuotaOfANilPointer(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"nil pointer": (*ptrConsumer)(nil),
		"wrapped":     fmt.Errorf("admit: %w", (*ptrConsumer)(nil)),
	} {
		require.NotPanics(t, func() { require.True(t, ports.MayHaveConsumedQuota(err), name) }, name)
	}
	require.False(t, ports.MayHaveConsumedQuota(&ptrConsumer{}), "a real one still answers")
}
