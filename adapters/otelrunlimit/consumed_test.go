package otelrunlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// commitError is a store error that knows whether its failed admission
// may have consumed quota, as a commit whose outcome is unknown does.
type commitError struct{ consumed bool }

func (e commitError) Error() string              { return "store: commit outcome unknown" }
func (e commitError) MayHaveConsumedQuota() bool { return e.consumed }

var _ ports.QuotaConsumer = commitError{}

// failingStore fails every admission with the errors it is given, in turn.
type failingStore struct{ errs chan error }

func (s failingStore) Admit(context.Context, *domain.Batch) error { return <-s.errs }

// TestErrorsSayWhetherQuotaMayHaveBeenConsumed: runlimit.admission.errors
// and the admission's span carry the store error's own answer to
// ports.MayHaveConsumedQuota, true as well as false, so that an operator
// can tell failures that may have spent quota from those that did not.
func TestErrorsSayWhetherQuotaMayHaveBeenConsumed(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	store := failingStore{errs: make(chan error, 3)}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: f.tel.Observer()})
	require.NoError(t, err)
	p := domain.MustPolicy("auth.login", "identity", 5, time.Minute)
	check := domain.NewCheck(p, f.hasher.KeyString(p, "alice@example.test"))
	ctx := context.Background()

	for _, consumed := range []bool{true, true, false} {
		store.errs <- commitError{consumed: consumed}
		_, err := limiter.Check(ctx, check)
		require.ErrorIs(t, err, commitError{consumed: consumed})
		require.Equal(t, consumed, ports.MayHaveConsumedQuota(err))
	}

	s := f.collect(t)
	require.Equal(t, map[string]int64{
		"runlimit.limiter=edge,runlimit.may_have_consumed_quota=true":  2,
		"runlimit.limiter=edge,runlimit.may_have_consumed_quota=false": 1,
	}, s.sums[otelrunlimit.MetricAdmissionErrors])
	require.Equal(t, map[string]int64{checkAttrs("edge", "auth.login", "identity", "failed"): 3},
		s.sums[otelrunlimit.MetricAdmissions])

	ended := f.spans.Ended()
	require.Len(t, ended, 3)
	for i, want := range []bool{true, true, false} {
		require.Equal(t, attribute.BoolValue(want), attrs(ended[i])[otelrunlimit.AttrMayHaveConsumedQuota], "span %d", i)
	}
}
