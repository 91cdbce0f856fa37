package conformance

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bs "github.com/runlimit/runlimit/conformance/internal/brokenstores"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// A third party runs the suite inside its own test binary, against a store
// that may be broken in ways no guarantee anticipates: it panics with key
// bytes in the value, names keys in its errors, or blocks forever. The
// suite must then fail the store, naming the rule, without crashing the
// binary, without hanging it, and without printing the keys itself.

const (
	// hostileEnv names, in a child process, the hostile store's behaviour.
	hostileEnv = "RUNLIMIT_CONFORMANCE_HOSTILE"
	// hostileKeysEnv names the file the child's store writes, in hex, the
	// subject key of every check it was handed.
	hostileKeysEnv = "RUNLIMIT_CONFORMANCE_HOSTILE_KEYS"
)

// hostile is a correct store that misbehaves in one call, as mode says.
type hostile struct {
	*bs.Store
	mode string
	keys *os.File
	mu   *sync.Mutex
}

// record notes k, unless it is the zero key of an invalid check (whose
// Bytes are no subject's), and returns its bytes.
func (h hostile) record(k domain.SubjectKey) []byte {
	b := k.Bytes()
	if k.IsZero() {
		return b[:]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = fmt.Fprintf(h.keys, "%x\n", b)
	return b[:]
}

// misbehave does what mode asks of a call made with key b, or nothing.
func (h hostile) misbehave(ctx context.Context, b []byte) error {
	switch h.mode {
	case "error-names-key":
		return fmt.Errorf("row %x is locked", b)
	case "panic-string-with-key", "admitcheck-panics":
		panic("corrupt row " + string(b) + " (" + hex.EncodeToString(b) + ")")
	case "panic-error-with-key":
		panic(fmt.Errorf("corrupt row %x", b))
	case "blocks":
		// Ignores ctx, as a store stuck on a lock or a dead connection
		// without a deadline does.
		select {}
	}
	_ = ctx
	return nil
}

func (h hostile) Admit(ctx context.Context, b *domain.Batch) error {
	if h.mode != "admitcheck-panics" && b != nil && b.Ready() == nil {
		var k []byte
		for i := range b.Len() {
			k = h.record(b.Check(i).SubjectKey())
		}
		if err := h.misbehave(ctx, k); err != nil {
			return err
		}
	}
	return h.Store.Admit(ctx, b)
}

func (h hostile) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	if h.mode == "admitcheck-panics" {
		_ = h.misbehave(ctx, h.record(c.SubjectKey()))
	}
	return h.Store.AdmitCheck(ctx, c)
}

func (h hostile) Stats(ctx context.Context) (ports.Stats, error) {
	if h.mode == "stats-panics" {
		panic(errors.New("stats: corrupt partition"))
	}
	return h.Store.Stats(ctx)
}

// TestHostileStoreChild runs the suite against one hostile store. It runs
// only in the child processes of TestHostileStoresFailCleanly: it is meant
// to fail.
func TestHostileStoreChild(t *testing.T) {
	mode := os.Getenv(hostileEnv)
	if mode == "" {
		t.Skip("runs only as the child process of TestHostileStoresFailCleanly")
	}
	if mode == "blocks" {
		// Set before Run starts a case, so no goroutine reads it yet.
		callBound = 100 * time.Millisecond
	}
	keys, err := os.OpenFile(os.Getenv(hostileKeysEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { _ = keys.Close() })
	var mu sync.Mutex
	Run(t, func(_ testing.TB, opts Options) Instance {
		clock := new(ManualClock)
		s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: clock.Now})
		return Instance{Store: hostile{Store: s, mode: mode, keys: keys, mu: &mu}, Clock: clock}
	})
}

// TestHostileStoresFailCleanly runs the suite against each hostile store in
// a child process and requires it to fail the store under the rule it
// breaks, to end on its own (no panic, no test timeout), and to print none
// of the keys the store was handed.
func TestHostileStoresFailCleanly(t *testing.T) {
	t.Parallel()
	if os.Getenv(hostileEnv) != "" {
		t.Skip("already inside a child process")
	}
	const keyRule = "errors: no error a store returns may show a subject key"
	for _, tc := range []struct{ mode, rule string }{
		{"error-names-key", keyRule},
		{"panic-string-with-key", keyRule},
		{"panic-error-with-key", keyRule},
		{"admitcheck-panics", keyRule},
		{"stats-panics", "the store panicked"},
		{"blocks", blockedRule},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			keysFile := filepath.Join(t.TempDir(), "keys")
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestHostileStoreChild$", "-test.v", "-test.count=1", "-test.timeout=4m")
			cmd.Env = append(os.Environ(), hostileEnv+"="+tc.mode, hostileKeysEnv+"="+keysFile)
			b, err := cmd.CombinedOutput()
			out := string(b)
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "the suite must fail a hostile store")
			require.NotContains(t, out, "test timed out", "the suite hung on a store that %s", tc.mode)
			require.NotContains(t, out, "\npanic: ", "the suite crashed on a store that %s", tc.mode)
			require.Contains(t, out, tc.rule, "the suite must name the rule the store breaks")
			require.Contains(t, out, "--- FAIL: TestHostileStoreChild/", "the suite must fail its cases")
			written, err := os.ReadFile(keysFile)
			require.NoError(t, err)
			// The store shows a key as hex and as raw bytes, which %q and
			// testify's error chains print quoted.
			lower := strings.ToLower(out)
			unquoted := strings.Join(unquotedStrings(out), "\n")
			seen := map[string]bool{}
			for _, line := range strings.Fields(string(written)) {
				if seen[line] {
					continue
				}
				seen[line] = true
				raw, err := hex.DecodeString(line)
				require.NoError(t, err)
				// Not require.NotContains: it would print the output, key and all.
				require.False(t, strings.Contains(lower, line[:16]), "the suite printed, in hex, a key the store was handed")
				for _, text := range []string{out, unquoted} {
					require.False(t, strings.Contains(text, string(raw[:keyLeakWindow])),
						"the suite printed the bytes of a key the store was handed")
				}
			}
			if tc.mode != "stats-panics" {
				require.NotEmpty(t, seen, "the store was handed no key: the probe tested nothing")
			}
		})
	}
}
