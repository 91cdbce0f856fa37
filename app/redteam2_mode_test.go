package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// decisionIn evaluates c, with its policy switched to mode, against a
// counter that is full: the decision a store gives when it evaluates the
// check under the wrong quota mode (the mode is not part of the
// fingerprint, so an enforce and a shadow check of one policy share a
// counter, and a store that keeps the last check of a key may evaluate
// the other's).
func decisionIn(t *testing.T, c domain.Check, mode domain.Mode) domain.Decision {
	t.Helper()
	p, err := c.Policy().WithMode(mode)
	require.NoError(t, err)
	other := domain.NewCheck(p, c.SubjectKey())
	now := domain.Instant(1_000_000)
	o := domain.Observation{Counter: domain.Counter{Used: p.Limit(), Start: now, Expires: now + 60_000_000}}
	var d domain.Decision
	var next domain.Counter
	_, err = domain.EvaluateCheck(&other, now, &o, &next, &d)
	require.NoError(t, err)
	return d
}

// TestRogueStoreDecisionOfTheOtherMode: a single-check path hands back
// its own Decision, and the limiter passed on any allowed, denied or
// shadow-denied one: a store that evaluated an enforce-mode check as a
// shadow one returned a shadow denial, which PermitsRequest reads as
// "let it through", so an over-limit request in enforce mode was let
// through. A decision whose outcome does not fit the check's mode (a
// shadow denial of an enforce check, a quota denial of a shadow check)
// is now an error matching domain.ErrBatchProtocol, as other answers the
// caller must not read as given are.
func TestRogueStoreDecisionOfTheOtherMode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	enforce := f.check("mallory")
	sp, err := f.policy.WithMode(domain.Shadow)
	require.NoError(t, err)
	shadow := domain.NewCheck(sp, f.hasher.KeyString(sp, "mallory"))
	for _, tc := range []struct {
		name  string
		check domain.Check
		wrong domain.Mode
		want  domain.Outcome
	}{
		{"an enforce check shadow-denied", enforce, domain.Shadow, domain.ShadowDenied},
		{"a shadow check denied", shadow, domain.Enforce, domain.Denied},
	} {
		d := decisionIn(t, tc.check, tc.wrong)
		require.Equal(t, tc.want, d.Outcome(), tc.name)
		s := rogueStore{
			single: func(context.Context, domain.Check) (domain.Decision, error) { return d, nil },
			admit:  func(context.Context, *domain.Batch) error { return nil },
		}
		for name, l := range rogueLimiters(t, s) {
			if name == "batches only" || name == "batches only observed" {
				continue // a batch's decisions are the domain's own
			}
			got, err := l.Check(context.Background(), tc.check)
			require.ErrorIs(t, err, domain.ErrBatchProtocol, "%s, %s", tc.name, name)
			require.True(t, ports.MayHaveConsumedQuota(err), "%s, %s", tc.name, name)
			require.False(t, got.PermitsRequest(), "%s, %s", tc.name, name)
		}
	}
}
