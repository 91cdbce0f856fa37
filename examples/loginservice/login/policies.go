package login

import (
	"fmt"

	"github.com/runlimit/runlimit/domain"
)

// Policy ids and scopes. The gate's policies have ids of their own
// ("login.gate", "login.trial"): they live in a different store from the
// shared quota ("login"), and a distinct id keeps their counters from ever
// being confused with the shared ones, should both land in one store.
const (
	NetworkPolicyID = "login.gate"
	TrialPolicyID   = "login.trial"
	SharedPolicyID  = "login"
	NetworkScope    = "network"
	ClientScope     = "client"
	IdentityScope   = "identity"
)

// Policies are the service's four policies, built from [Limits].
type Policies struct {
	// Network is checked by the middleware, on the gate, before the body
	// is read.
	Network domain.Policy
	// Trial is Network's stricter candidate, in shadow mode, checked by a
	// second middleware. Zero when Limits.Trial is negative.
	Trial domain.Policy
	// Client and Identity are checked together, as one batch, on the
	// shared quota, once the body has named the identity.
	Client   domain.Policy
	Identity domain.Policy
}

// NewPolicies builds the policies of l, whose defaults must be filled in.
func NewPolicies(l Limits) (Policies, error) {
	var p Policies
	var err error
	for _, b := range []struct {
		dst       *domain.Policy
		id, scope string
		limit     int64
	}{
		{&p.Network, NetworkPolicyID, NetworkScope, l.Network},
		{&p.Client, SharedPolicyID, ClientScope, l.Client},
		{&p.Identity, SharedPolicyID, IdentityScope, l.Identity},
	} {
		if *b.dst, err = domain.ParsePolicy(b.id, b.scope, b.limit, l.Window); err != nil {
			return Policies{}, fmt.Errorf("login: %s/%s policy: %w", b.id, b.scope, err)
		}
	}
	if l.Trial > 0 {
		trial, err := domain.ParsePolicy(TrialPolicyID, NetworkScope, l.Trial, l.Window)
		if err != nil {
			return Policies{}, fmt.Errorf("login: %s/%s policy: %w", TrialPolicyID, NetworkScope, err)
		}
		if p.Trial, err = trial.WithMode(domain.Shadow); err != nil {
			return Policies{}, err
		}
	}
	return p, nil
}
