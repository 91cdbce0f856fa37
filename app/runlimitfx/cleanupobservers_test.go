package runlimitfx

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
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

// TestJoinedCleanupObserversEachGetTheirOwnContext: the module's telemetry
// joins a host's cleanup observer rather than replacing it; each ends with
// the context its own StartCleanup returned.
func TestJoinedCleanupObserversEachGetTheirOwnContext(t *testing.T) {
	t.Parallel()
	var log []string
	a, b := namer{"a", &log}, namer{"b", &log}
	require.True(t, joinCleanupObservers(nil, nil) == nil, "none is a nil interface")
	require.Equal(t, a, joinCleanupObservers(nil, a))

	j := joinCleanupObservers(a, nil, b)
	ctx := j.StartCleanup(context.Background(), "gate")
	j.EndCleanup(ctx, "gate", 3, errors.New("boom"))
	require.Equal(t, []string{"a.start:gate", "b.start:gate", "a.end:gate:a:boom", "b.end:gate:ab:boom"}, log)
}
