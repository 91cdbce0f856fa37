package wiring_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
)

// namedKey is the context key a namer puts its name under.
type namedKey struct{ name string }

// namer is a CleanupObserver that marks the context it returns with its
// name and logs what its EndCleanup saw.
type namer struct {
	name string
	log  *[]string
}

func (n namer) StartCleanup(ctx context.Context, store string) context.Context {
	*n.log = append(*n.log, n.name+".start:"+store)
	return context.WithValue(ctx, namedKey{n.name}, true)
}

func (n namer) EndCleanup(ctx context.Context, store string, removed int, err error) {
	var marks string
	for _, other := range []string{"a", "b"} {
		if ctx.Value(namedKey{other}) != nil {
			marks += other
		}
	}
	*n.log = append(*n.log, n.name+".end:"+store+":"+marks+":"+err.Error())
}

// TestJoinedCleanupObserversEachGetTheirOwnContext: joined observers,
// called through the join, each end with the context their own
// StartCleanup returned; nil ones are left out.
func TestJoinedCleanupObserversEachGetTheirOwnContext(t *testing.T) {
	t.Parallel()
	var log []string
	a, b := namer{"a", &log}, namer{"b", &log}
	require.True(t, wiring.JoinCleanupObservers(nil, nil) == nil, "none is a nil interface")
	require.True(t, wiring.JoinCleanupObservers((*cleanupRecorder)(nil)) == nil, "a nil pointer is none")
	require.Equal(t, a, wiring.JoinCleanupObservers(nil, a))

	j := wiring.JoinCleanupObservers(a, nil, wiring.JoinCleanupObservers(b))
	ctx := j.StartCleanup(context.Background(), "gate")
	j.EndCleanup(ctx, "gate", 3, errors.New("boom"))
	require.Equal(t, []string{"a.start:gate", "b.start:gate", "a.end:gate:a:boom", "b.end:gate:ab:boom"}, log)
}

// TestJoinedCleanupObserversTakeANilContext: a host calling the join
// directly with a nil context used to panic in EndCleanup (and in
// StartCleanup when no observer replaced it); the join treats it as
// context.Background, as the otelrunlimit observer does.
func TestJoinedCleanupObserversTakeANilContext(t *testing.T) {
	t.Parallel()
	var log []string
	j := wiring.JoinCleanupObservers(namer{"a", &log}, namer{"b", &log})
	var nilCtx context.Context
	require.NotPanics(t, func() {
		ctx := j.StartCleanup(nilCtx, "gate")
		require.NotNil(t, ctx)
		j.EndCleanup(ctx, "gate", 1, errors.New("boom"))
		j.EndCleanup(nilCtx, "gate", 1, errors.New("boom"))
	})
	require.Equal(t, []string{"a.start:gate", "b.start:gate", "a.end:gate:a:boom", "b.end:gate:ab:boom",
		"a.end:gate::boom", "b.end:gate::boom"}, log)
}
