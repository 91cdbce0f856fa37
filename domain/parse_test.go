package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()

	p, err := domain.ParsePolicy("auth.login", "client", 40, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "auth.login", p.ID().String())
	require.Equal(t, "client", p.Scope().String())
	require.Equal(t, int64(40), p.Limit())
	require.Equal(t, time.Minute, p.Window())

	id, _ := domain.NewPolicyID("auth.login")
	scope, _ := domain.NewScopeID("client")
	same, err := domain.NewPolicy(id, scope, 40, time.Minute)
	require.NoError(t, err)
	require.Equal(t, same.Fingerprint(), p.Fingerprint(), "ParsePolicy must build the same policy as NewPolicy")

	tests := []struct {
		name      string
		id, scope string
		limit     int64
		window    time.Duration
		field     string
	}{
		{name: "bad policy id first", id: "", scope: "", limit: 0, window: 0, field: "policy id"},
		{name: "bad scope id before limit", id: "a", scope: "b c", limit: 0, window: 0, field: "scope id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := domain.ParsePolicy(tt.id, tt.scope, tt.limit, tt.window)
			var ie *domain.IdentifierError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tt.field, ie.Field)
		})
	}

	_, err = domain.ParsePolicy("a", "b", 0, time.Minute)
	var pe *domain.PolicyError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, domain.LimitOutOfRange, pe.Problem)
}

func TestMustPolicyPanicsOnInvalidInput(t *testing.T) {
	t.Parallel()

	require.NotPanics(t, func() { domain.MustPolicy("auth.login", "client", 1, time.Millisecond) })
	require.Panics(t, func() { domain.MustPolicy("auth.login", "client", 0, time.Minute) })
}
