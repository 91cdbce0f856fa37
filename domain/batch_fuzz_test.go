package domain_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// FuzzBatch builds batches of up to 100 checks, drawn from 4 policies in
// either quota mode and 32 subjects, with an invalid (zero) check among them
// at will, under any maximum, and compares the result with the
// specification's validation written out plainly: an empty batch, then one
// over the maximum (32 when the maximum is not positive), then, walking in
// caller order, an invalid check, a check in another mode than the first,
// and a check whose counter key an earlier one has, naming the first such
// earlier check. A valid batch holds the checks in order, ready. A Batch
// that was reset before, to any batch or to a single check, gives the same
// answer as a new one, and a batch of one valid check reset with
// ResetSingle holds the same check.
func FuzzBatch(f *testing.F) {
	f.Add([]byte{}, 0, []byte{1})
	f.Add([]byte{0, 1, 2, 3}, 0, []byte{})
	f.Add([]byte{0, 0x80}, 0, []byte{})              // one policy in both modes: mixed modes first
	f.Add([]byte{0x80, 0x80}, 0, []byte{})           // shadow duplicates
	f.Add([]byte{5, 6, 5 | 0x80, 5}, 3, []byte(nil)) // the mode error comes before the duplicate
	f.Add([]byte{5, 0xff, 5}, 0, []byte(nil))        // an invalid check before the duplicate
	f.Add([]byte{0xff}, 1, []byte{0, 1, 2})
	long := make([]byte, 90)
	for i := range long {
		long[i] = byte(i % 0x7f)
	}
	f.Add(long, 100, long[:40])
	f.Add(append(long[:70:70], long[3]), 127, []byte{0x80})
	f.Add(long, 89, []byte(nil))

	hasher, err := domain.NewKeyHasher(testSecret)
	require.NoError(f, err)
	var policies [4][2]domain.Policy // [policy][mode]
	for i := range policies {
		p, err := domain.ParsePolicy("fuzz.batch", "p"+strconv.Itoa(i), int64(i+1), time.Second)
		require.NoError(f, err)
		policies[i][0] = p
		policies[i][1], err = p.WithMode(domain.Shadow)
		require.NoError(f, err)
	}
	// checkOf turns a byte into a check: 0xff is the zero (invalid) check;
	// otherwise the low 5 bits pick the subject, the next 2 the policy and
	// the top bit shadow mode.
	checkOf := func(b byte) domain.Check {
		if b == 0xff {
			return domain.Check{}
		}
		p := policies[b>>5&3][b>>7]
		return domain.NewCheck(p, hasher.KeyString(p, "subject "+strconv.Itoa(int(b&31))))
	}
	checksOf := func(spec []byte) []domain.Check {
		checks := make([]domain.Check, len(spec))
		for i, b := range spec {
			checks[i] = checkOf(b)
		}
		return checks
	}
	f.Fuzz(func(t *testing.T, spec []byte, maxSize int, prior []byte) {
		if len(spec) > 100 || len(prior) > 100 {
			return
		}
		maxSize %= 128
		checks := checksOf(spec)

		// The specification, in order.
		var want *domain.BatchError
		n, limit := len(spec), maxSize
		if limit < 1 {
			limit = domain.DefaultMaxBatchSize
		}
		switch {
		case n == 0:
			want = &domain.BatchError{Problem: domain.BatchEmpty}
		case n > limit:
			want = &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: limit}
		default:
		walk:
			for i, b := range spec {
				switch {
				case b == 0xff:
					want = &domain.BatchError{Problem: domain.BatchInvalidCheck, Size: n, Index: i}
					break walk
				case b>>7 != spec[0]>>7:
					want = &domain.BatchError{Problem: domain.BatchMixedModes, Size: n, Index: i, First: 0}
					break walk
				}
				// Mode is not part of the counter key.
				for j := range i {
					if spec[j]&0x7f == b&0x7f {
						want = &domain.BatchError{Problem: domain.BatchDuplicateKey, Size: n, Index: i, First: j}
						break walk
					}
				}
			}
		}

		fresh, err := domain.NewBatch(checks, maxSize)
		reused := new(domain.Batch)
		if len(prior) == 1 && prior[0] != 0xff {
			c := checkOf(prior[0])
			require.NoError(t, reused.ResetSingle(&c))
		} else {
			_ = reused.Reset(checksOf(prior), 0)
		}
		reusedErr := reused.Reset(checks, maxSize)

		for _, got := range []error{err, reusedErr} {
			if want == nil {
				require.NoError(t, got)
				continue
			}
			var be *domain.BatchError
			require.ErrorAs(t, got, &be)
			require.True(t, errors.Is(got, domain.ErrInvalidBatch))
			require.True(t, errors.Is(got, domain.ErrInvalidInput))
			if want.Problem == domain.BatchInvalidCheck {
				require.ErrorIs(t, be.Err, domain.ErrInvalidCheck)
				be = &domain.BatchError{Problem: be.Problem, Size: be.Size, Index: be.Index}
			}
			require.Equal(t, want, be, "%x max %d", spec, maxSize)
			require.Error(t, reused.Ready(), "a batch that failed to reset is not ready")
		}
		if want != nil {
			require.Nil(t, fresh)
			return
		}
		for _, b := range []*domain.Batch{fresh, reused} {
			require.NoError(t, b.Ready())
			require.Equal(t, n, b.Len())
			require.Equal(t, checks[0].Policy().Mode(), b.Mode())
			for i := range checks {
				require.Equal(t, checks[i].CounterKey(), b.Key(i))
				require.Equal(t, checks[i].Cost(), b.Check(i).Cost())
			}
		}
		if n == 1 {
			require.NoError(t, reused.ResetSingle(&checks[0]))
			require.NoError(t, reused.Ready())
			require.Equal(t, 1, reused.Len())
			require.Equal(t, checks[0].CounterKey(), reused.Key(0))
		}
	})
}
