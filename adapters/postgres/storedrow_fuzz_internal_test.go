package postgres

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// FuzzStoredRow hands an admission of one to four checks the rows of round
// trip 1 as a server could send them, field by field of any bytes: stored
// counters (for any check index), ledger rows (for any shard) and clock
// samples, NULLs and fields of the wrong length among them. Whatever they
// hold, decoding and evaluation never panic, and the admission commits
// only when every row it read satisfies the table's constraints and the
// policy (used 1 to the limit, a finite window no longer than the
// policy's that starts before it ends), every new key's ledger row was
// read, holds a count the ledger's constraints allow (0 to 65,536) and
// leaves that key a slot. What it then writes is a valid active counter
// that encodes and decodes back to itself. A stored row the domain rejects
// fails the admission closed with a corrupt-counter error unless an
// earlier check was denied.
func FuzzStoredRow(f *testing.F) {
	ts := func(us int64) []byte { return binary.BigEndian.AppendUint64([]byte{1}, uint64(us)) }
	// Rows in the reader's encoding (see storedRows): kind byte, then
	// fields, each a tag byte and, for tag 1, eight bytes.
	i8 := func(v int64) []byte { return binary.BigEndian.AppendUint64([]byte{1}, uint64(v)) }
	join := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	const t0 = 820_000_000_000_000 // 2026 in PostgreSQL's microseconds
	counter := func(i byte, used, start, end int64) []byte {
		return join([]byte{0, i}, i8(used), ts(start), ts(end))
	}
	clock := join([]byte{2}, ts(t0))
	// One check: used, started, expires, shard rows, clock.
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join(i8(3), ts(t0-1000), ts(t0+1000), []byte{0}, ts(t0)))
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join([]byte{0, 0, 0}, i8(0), ts(t0)))
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join([]byte{0, 0, 0}, i8(-1), ts(t0)))
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join([]byte{0, 0, 0}, i8(1<<20), ts(t0)))
	// The Unix epoch in PostgreSQL's microseconds: a row of used 0 there
	// decodes as no counter at all.
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join(i8(0), ts(-postgresEpoch), ts(-postgresEpoch), []byte{0}, ts(t0)))
	f.Add(uint8(1), int64(5), int64(60_000), uint16(4096), join(i8(6), ts(t0-1000), ts(t0+1000), []byte{0}, ts(t0)))
	f.Add(uint8(1), int64(5), int64(1), uint16(1), join(i8(1), ts(t0), ts(t0+1001), []byte{0}, ts(math.MaxInt64-postgresEpoch)))
	// Many checks: counters, ledger rows of the checks' shards, the clock.
	f.Add(uint8(3), int64(5), int64(60_000), uint16(2), join(counter(1, 2, t0-5, t0+5), []byte{1, 1}, i8(1), []byte{1, 2}, i8(0), clock))
	f.Add(uint8(3), int64(5), int64(60_000), uint16(2), join(counter(9, 2, t0-5, t0+5), clock))
	f.Add(uint8(2), int64(5), int64(60_000), uint16(2), join(counter(1, 0, -postgresEpoch, -postgresEpoch), []byte{1, 1}, i8(-7), clock))
	f.Add(uint8(4), int64(1), int64(1), uint16(65535), join([]byte{1, 0}, i8(65536), []byte{1, 1}, i8(math.MaxInt64), []byte{3, 9, 9}, clock))

	hasher, err := domain.NewKeyHasher([]byte("runlimit postgres stored-row fuzzing, 32+ bytes"))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, n uint8, limit, windowMs int64, rowsPerShard uint16, data []byte) {
		n = (n+3)%4 + 1 // 1 to 4, as given
		limit = max(limit, 1)
		if limit > 1<<20 {
			limit = limit%(1<<20) + 1
		}
		window := time.Duration(windowMs%(1<<40)) * time.Millisecond
		if window <= 0 {
			window = time.Millisecond - window // any positive whole ms
		}
		p, err := domain.ParsePolicy("fuzz.stored", "row", limit, window)
		require.NoError(t, err)
		checks := make([]domain.Check, n)
		for i := range checks {
			c, err := domain.NewCheckCost(p, hasher.KeyString(p, "subject "+strconv.Itoa(i)), int64(i)%limit+1)
			require.NoError(t, err)
			checks[i] = c
		}
		b, err := domain.NewBatch(checks, 0)
		require.NoError(t, err)
		rps := int(rowsPerShard)%MaxRowsPerShard + 1
		a := newAdmission(nil)
		require.NoError(t, a.prepare(b, rps))
		a.batch = b

		// Decode as readLocked does, keeping beside it what each field
		// held, read independently.
		var (
			now     domain.Instant
			sampled bool
			bad     error
			stored  = map[int][3][]byte{} // check index: used, started, expires
			ledger  = map[int16][]byte{}
		)
		r := &fieldReader{data: data}
		if n == 1 {
			v := [][]byte{r.field(), r.field(), r.field(), r.field(), r.field()}
			bad = a.decodeReadOne(v, &now, &sampled)
			if bad == nil && v[0] != nil {
				stored[0] = [3][]byte{v[0], v[1], v[2]}
			} else if bad == nil {
				ledger[a.shards[0]] = v[3]
			}
		} else {
			for rows := 0; r.more() && rows < 16; rows++ {
				v := r.row(a.shards)
				err := a.decodeRow(v, &now, &sampled)
				if err != nil && bad == nil {
					bad = err
				}
				if err != nil || len(v) != 5 || len(v[0]) != 2 || len(v[1]) != 8 {
					continue
				}
				idx := int64(binary.BigEndian.Uint64(v[1]))
				switch int16(binary.BigEndian.Uint16(v[0])) {
				case partCounter:
					stored[int(idx-1)] = [3][]byte{v[2], v[3], v[4]}
				case partLedger:
					// The first row of a shard is the one the admission uses.
					if _, seen := ledger[int16(idx)]; !seen {
						ledger[int16(idx)] = v[2]
					}
				}
			}
		}
		if bad != nil || !sampled {
			return // readLocked fails the admission: nothing is evaluated
		}
		commit, err := a.evaluate(now, rps)
		if err != nil {
			require.False(t, commit)
			var ae *AdmissionError
			require.ErrorAs(t, err, &ae)
			require.False(t, ae.MayHaveConsumed)
			require.True(t, errors.Is(err, ErrLedger) || errors.Is(err, domain.ErrCorruptCounter), "%v", err)
		}

		// The first check in caller order whose row breaks the rules is
		// reported, unless an earlier one was denied.
		firstBad := -1
		for i := range checks {
			if row, ok := stored[i]; ok && !validRow(row, limit, window) {
				firstBad = i
				break
			}
		}
		if firstBad >= 0 {
			require.False(t, commit, "a row that breaks the table's rules was admitted")
			var ce *domain.CorruptCounterError
			if err == nil {
				bd, derr := b.Decision()
				require.NoError(t, derr)
				i, _, denied := bd.Denied()
				require.True(t, denied)
				require.Less(t, i, firstBad, "check %d was judged past the corrupt row of check %d", i, firstBad)
			} else if errors.As(err, &ce) {
				require.Equal(t, firstBad, ce.Index)
			}
		}
		if !commit {
			return
		}

		// Committed: every new key found its ledger row, within the
		// ledger's constraints, and a slot in it.
		newOn := map[int16]int64{}
		for i := range checks {
			if _, ok := stored[i]; ok {
				continue
			}
			sh := a.shards[i]
			raw, ok := ledger[sh]
			require.True(t, ok, "check %d: no ledger row read for shard %d", i, sh)
			require.Len(t, raw, 8)
			count := int64(binary.BigEndian.Uint64(raw))
			require.True(t, count >= 0 && count <= MaxRowsPerShard, "check %d: ledger count %d admitted", i, count)
			require.Less(t, count+newOn[sh], int64(rps), "check %d: its shard is full", i)
			newOn[sh]++
		}
		if in := int64(now); in < -1<<62 || in > 1<<62 {
			return // beyond any clock a server keeps, now+window saturates
		}
		require.Len(t, a.updates.fps, len(stored))
		require.Len(t, a.inserts.fps, int(n)-len(stored))
		for i := range checks {
			next := b.Next(i)
			require.True(t, next.Used >= 1 && next.Used <= limit, "check %d: used %d", i, next.Used)
			require.Less(t, next.Start, next.Expires)
			require.LessOrEqual(t, next.Expires.Sub(next.Start), window)
			require.Less(t, now, next.Expires, "check %d: written expired", i)
			// What is written reads back as itself.
			enc := appendTimeArray(appendTimeArray(appendInt8Array(nil, []int64{next.Used}), []domain.Instant{next.Start}), []domain.Instant{next.Expires})
			const elem = 20 + 4 + 8 // array header, length, value
			used, ok1 := decodeInt8(enc[20+4 : elem])
			start, ok2 := decodeTime(enc[elem+20+4 : 2*elem])
			end, ok3 := decodeTime(enc[2*elem+20+4 : 3*elem])
			require.True(t, ok1 && ok2 && ok3)
			require.Equal(t, next, domain.Counter{Used: used, Start: start, Expires: end})
		}
	})
}

// validRow reports whether a stored row's used, started and expires
// fields, in binary format, satisfy the table's constraints and a policy
// of limit and window: eight bytes each, finite times, start before end,
// a window no longer than the policy's, 1 to limit used. It reads the
// bytes itself, in whole microseconds since PostgreSQL's epoch.
func validRow(row [3][]byte, limit int64, window time.Duration) bool {
	for _, f := range row {
		if len(f) != 8 {
			return false
		}
	}
	used := int64(binary.BigEndian.Uint64(row[0]))
	start := int64(binary.BigEndian.Uint64(row[1]))
	end := int64(binary.BigEndian.Uint64(row[2]))
	for _, us := range []int64{start, end} {
		// Infinity, and a time past domain.Instant's range.
		if us == math.MaxInt64 || us == math.MinInt64 || us > math.MaxInt64-postgresEpoch {
			return false
		}
	}
	return used >= 1 && used <= limit && start < end && uint64(end)-uint64(start) <= uint64(window/time.Microsecond)
}

// fieldReader turns fuzz bytes into round trip 1's rows. A field is a tag
// byte: 0 is NULL, 1 is the next eight bytes, 2 is a small signed integer
// (the next byte) as eight bytes, 3 is raw bytes (a length byte, up to 15,
// and the bytes); any other tag is an empty field. Bytes past the end read
// as zeros.
type fieldReader struct{ data []byte }

func (r *fieldReader) more() bool { return len(r.data) > 0 }

func (r *fieldReader) take(n int) []byte {
	b := make([]byte, n)
	r.data = r.data[copy(b, r.data):]
	return b
}

func (r *fieldReader) field() []byte {
	switch r.take(1)[0] % 5 {
	case 0:
		return nil
	case 1:
		return r.take(8)
	case 2:
		return binary.BigEndian.AppendUint64(nil, uint64(int64(int8(r.take(1)[0]))))
	case 3:
		return r.take(int(r.take(1)[0] % 16))
	}
	return []byte{}
}

// row reads one row of sqlReadMany: a kind byte, then for kind 0 a
// counter row (a check number, 0 to 255, and used, started, expires),
// kind 1 a ledger row of the shard of check k (a byte) and its count,
// kind 2 the clock row, and for any other kind five raw fields.
func (r *fieldReader) row(shards []int16) [][]byte {
	part := func(p int16, i int64) [][]byte {
		return [][]byte{binary.BigEndian.AppendUint16(nil, uint16(p)), binary.BigEndian.AppendUint64(nil, uint64(i))}
	}
	switch kind := r.take(1)[0]; kind {
	case 0:
		return append(part(partCounter, int64(r.take(1)[0])), r.field(), r.field(), r.field())
	case 1:
		sh := shards[int(r.take(1)[0])%len(shards)]
		return append(part(partLedger, int64(sh)), r.field(), nil, nil)
	case 2:
		return append(part(partClock, 0), nil, r.field(), nil)
	}
	return [][]byte{r.field(), r.field(), r.field(), r.field(), r.field()}
}
