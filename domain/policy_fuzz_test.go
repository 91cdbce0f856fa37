package domain_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// FuzzParsePolicy builds a policy, a subject key and a check from values
// of any range and compares them with the specification written out
// plainly: the identifier errors come first, then the limit's, then the
// window's, each a typed error; a policy built keeps its limit and window,
// its fingerprint is the SHA-256 of the spec's byte layout, its subject
// keys are HMAC-SHA-256 of the spec's message under the secret, and a
// check's cost must be 1..limit.
func FuzzParsePolicy(f *testing.F) {
	ms := int64(time.Millisecond)
	for _, s := range []struct {
		id, scope     string
		limit, window int64
		cost          int64
	}{
		{"auth.login", "client", 5, int64(time.Minute), 1},
		{"p", "s", 1, ms, 1},
		{"p", "s", domain.MaxLimit, int64(domain.MaxWindow), domain.MaxLimit},
		{"p", "s", 0, ms, 1},
		{"p", "s", -1 << 63, -1 << 63, -1 << 63},
		{"p", "s", 1, 0, 0},
		{"p", "s", 1, ms + 1, 2},
		{"p", "s", 1, int64(domain.MaxWindow) + ms, 1},
		{"p", "s", 1, 1<<63 - 1, 1},
		{"", "s", 0, 0, 0},
		{"p/ä", "s", 1, ms, 1},
		{"p", "s\x00", 1, ms, 1},
	} {
		f.Add(s.id, s.scope, s.limit, s.window, s.cost, []byte("subject"), []byte(testSecret))
	}
	f.Fuzz(func(t *testing.T, id, scope string, limit, window, cost int64, subject, secret []byte) {
		p, err := domain.ParsePolicy(id, scope, limit, time.Duration(window))
		_, idErr := domain.NewPolicyID(id)
		_, scopeErr := domain.NewScopeID(scope)
		var pe *domain.PolicyError
		switch {
		case idErr != nil:
			require.Equal(t, idErr.Error(), err.Error())
			return
		case scopeErr != nil:
			require.Equal(t, scopeErr.Error(), err.Error())
			return
		case limit < 1:
			require.ErrorAs(t, err, &pe)
			require.Equal(t, domain.LimitOutOfRange, pe.Problem)
			require.Equal(t, limit, pe.Limit)
		case window <= 0:
			require.ErrorAs(t, err, &pe)
			require.Equal(t, domain.WindowNotPositive, pe.Problem)
		case window%ms != 0:
			require.ErrorAs(t, err, &pe)
			require.Equal(t, domain.WindowNotWholeMilliseconds, pe.Problem)
		case window > int64(domain.MaxWindow):
			require.ErrorAs(t, err, &pe)
			require.Equal(t, domain.WindowTooLarge, pe.Problem)
		default:
			require.NoError(t, err)
		}
		if err != nil {
			require.ErrorIs(t, err, domain.ErrInvalidPolicy)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.True(t, p.IsZero())
			return
		}
		require.Equal(t, limit, p.Limit())
		require.Equal(t, time.Duration(window), p.Window())
		require.Equal(t, id, p.ID().String())
		require.Equal(t, scope, p.Scope().String())

		msg := []byte("runlimit/fixed-window-policy/v1\x00" + id + "\x00" + scope + "\x00")
		msg = binary.BigEndian.AppendUint64(msg, uint64(limit))
		msg = binary.BigEndian.AppendUint64(msg, uint64(window/ms))
		require.Equal(t, domain.Fingerprint(sha256.Sum256(msg)), p.Fingerprint())

		hasher, err := domain.NewKeyHasher(secret)
		if len(secret) < domain.MinSecretLength {
			require.Error(t, err)
			require.Equal(t, "runlimit: invalid input: key secret must be at least 32 bytes", err.Error())
			return
		}
		require.NoError(t, err)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte("runlimit/subject-key/v1\x00" + id + "\x00" + scope + "\x00"))
		mac.Write(subject)
		key := hasher.Key(p, subject)
		require.Equal(t, [32]byte(mac.Sum(nil)), key.Bytes())
		require.Equal(t, key, hasher.KeyString(p, string(subject)))
		require.NotContains(t, fmt.Sprintf("%v %+v %#v %x %s", key, key, key, key, hasher), fmt.Sprintf("%x", key.Bytes()))

		c, err := domain.NewCheckCost(p, key, cost)
		if cost < 1 || cost > limit {
			var ce *domain.CheckError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, domain.CostOutOfRange, ce.Problem)
			require.True(t, errors.Is(err, domain.ErrInvalidInput))
			return
		}
		require.NoError(t, err)
		require.Equal(t, cost, c.Cost())
		require.Equal(t, domain.NewCounterKey(p.Fingerprint(), key), c.CounterKey())
	})
}
