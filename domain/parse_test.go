package domain_test

import (
	"fmt"
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

func TestPolicyEqualComparesMeaning(t *testing.T) {
	t.Parallel()

	a := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	b := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	require.True(t, a.Equal(b), "two policies built from the same values are equal")
	require.False(t, a.Equal(domain.MustPolicy("auth.login", "client", 41, time.Minute)))
	shadow, err := a.WithMode(domain.Shadow)
	require.NoError(t, err)
	require.False(t, a.Equal(shadow), "the mode is part of equality, though not of the fingerprint")
	require.Equal(t, a.Fingerprint(), shadow.Fingerprint())
	require.True(t, domain.Policy{}.Equal(domain.Policy{}))
	require.False(t, a.Equal(domain.Policy{}))
	require.False(t, domain.Policy{}.Equal(a))
}

func TestPolicyString(t *testing.T) {
	t.Parallel()

	p := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	require.Equal(t, "auth.login/client: 40 per 1m0s (enforce)", p.String())
	require.Equal(t, p.String(), fmt.Sprintf("%#v", p))
	require.Equal(t, "Policy(zero)", domain.Policy{}.String())
}
