package callerctx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/callerctx"
)

type key struct{}

func TestBind(t *testing.T) {
	t.Parallel()
	t.Run("a derived context is kept as it is", func(t *testing.T) {
		t.Parallel()
		caller, cancel := context.WithCancel(context.Background())
		defer cancel()
		chosen := context.WithValue(caller, key{}, 1)
		got, release := callerctx.Bind(caller, chosen)
		defer release()
		require.Equal(t, chosen, got)
	})
	t.Run("a caller that never ends imposes nothing", func(t *testing.T) {
		t.Parallel()
		chosen, cancel := context.WithCancel(context.Background())
		defer cancel()
		got, release := callerctx.Bind(context.Background(), chosen)
		defer release()
		require.Equal(t, chosen, got)
	})
	t.Run("a passed deadline stays a deadline", func(t *testing.T) {
		t.Parallel()
		deadline := time.Now().Add(-time.Second)
		caller, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		got, release := callerctx.Bind(caller, context.WithValue(context.Background(), key{}, 1))
		defer release()
		require.ErrorIs(t, got.Err(), context.DeadlineExceeded)
		<-got.Done()
		require.ErrorIs(t, context.Cause(got), context.DeadlineExceeded)
		d, ok := got.Deadline()
		require.True(t, ok)
		require.True(t, d.Equal(deadline))
		require.Equal(t, 1, got.Value(key{}))
	})
	t.Run("a caller cancelled later ends the bound context", func(t *testing.T) {
		t.Parallel()
		caller, cancel := context.WithCancel(context.Background())
		got, release := callerctx.Bind(caller, context.WithValue(context.Background(), key{}, 1))
		defer release()
		require.NoError(t, got.Err())
		cancel()
		<-got.Done()
		require.ErrorIs(t, got.Err(), context.Canceled)
	})
	t.Run("the chosen context's own end and earlier deadline count", func(t *testing.T) {
		t.Parallel()
		caller, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		defer cancel()
		early := time.Now().Add(time.Minute)
		chosen, stop := context.WithDeadline(context.Background(), early)
		got, release := callerctx.Bind(caller, chosen)
		defer release()
		d, ok := got.Deadline()
		require.True(t, ok)
		require.True(t, d.Equal(early))
		stop()
		<-got.Done()
		require.ErrorIs(t, got.Err(), context.Canceled)
	})
}
