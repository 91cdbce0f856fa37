package memory_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// keyForms returns ways a key's bytes could show up in printed text.
func keyForms(k domain.CounterKey) []string {
	b := k.Bytes()
	var forms []string
	for _, part := range [][]byte{b[:32], b[32:]} {
		forms = append(forms,
			hex.EncodeToString(part),
			strings.ToUpper(hex.EncodeToString(part)),
			string(part),
			base64.StdEncoding.EncodeToString(part),
			strings.Trim(fmt.Sprint(part[:8]), "[]"),               // decimal, as %v prints a byte array
			strings.Trim(fmt.Sprintf("%#v", part[:8]), "[]byte{}"), // 0x.. as %#v prints it
		)
	}
	return forms
}

func TestPrintedValuesNeverContainKeyBytes(t *testing.T) {
	t.Parallel()
	clock := new(trapClock)
	f := setup(t, memory.Config{MaxKeys: 6, Shards: 2, Clock: clock})
	ctx := context.Background()
	p := policy(2, time.Minute)
	checks := append(f.onShard(t, p, 0, 4), f.onShard(t, p, 1, 2)...)
	for _, c := range checks[:2] {
		f.allow(t, c)
	}
	f.allow(t, checks[4])

	// Values are printed as soon as they exist: the store is printed while
	// it holds entries, before it is closed.
	var printed []string
	record := func(values ...any) {
		for _, v := range values {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
				printed = append(printed, fmt.Sprintf("%T "+verb, v, v))
			}
		}
	}
	record(f.store)
	_, err := f.limiter.CheckAll(ctx, checks[:4]) // four on a shard of three
	require.ErrorAs(t, err, new(*memory.ShardOverflowError))
	record(err)

	clock.armed.Store(true)
	require.Panics(t, func() { _, _ = f.limiter.Check(ctx, checks[5]) })
	clock.armed.Store(false)
	_, err = f.limiter.Check(ctx, checks[5])
	require.ErrorAs(t, err, new(*memory.PoisonedShardError))
	record(err, f.store)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.limiter.Check(cancelled, checks[0])
	require.ErrorAs(t, err, new(*memory.OpError))
	record(err)

	st, err := f.store.Stats(ctx)
	require.NoError(t, err)
	record(st, memory.Config{MaxKeys: 1, Clock: clock})

	_, err = memory.New(memory.Config{MaxKeys: -1})
	record(err)
	require.NoError(t, f.store.Close())
	_, err = f.limiter.Check(ctx, checks[0])
	require.ErrorIs(t, err, memory.ErrClosed)
	record(err)

	for _, text := range printed {
		for _, c := range checks {
			for _, form := range keyForms(c.CounterKey()) {
				require.NotContains(t, text, form)
			}
		}
	}
}
