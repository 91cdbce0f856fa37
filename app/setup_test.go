package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// testSecret is the key secret of the tests' hashers.
const testSecret = "app-test-secret-of-at-least-32-bytes"

// loginPolicy allows 2 checks a minute.
func loginPolicy(t *testing.T, id string) domain.Policy {
	t.Helper()
	p, err := domain.ParsePolicy(id, "identity", 2, time.Minute)
	require.NoError(t, err)
	return p
}
