package postgres

import (
	"encoding/binary"
	"strconv"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// Parameters and results travel in PostgreSQL's binary format, encoded and
// decoded here: a general-purpose encoder cost more client CPU than the rest
// of an admission.

// binaryFormat, as a format list of one, puts every parameter or result
// column in binary format.
var binaryFormat = []int16{1}

// postgresEpoch is 2000-01-01 00:00:00 UTC, the origin of PostgreSQL's
// binary timestamps, in Unix microseconds (the origin of domain.Instant).
const postgresEpoch = 946_684_800_000_000

// Type OIDs of array elements.
const (
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidText        = 25
	oidTimestamptz = 1184
)

// appendArrayHeader starts a one-dimensional array of n elements of type
// oid; each element follows as its length and bytes. An empty array has no
// dimension.
func appendArrayHeader(b []byte, oid uint32, n int) []byte {
	if n == 0 {
		return appendEmptyArray(b, oid)
	}
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // no NULL element
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

func appendEmptyArray(b []byte, oid uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint32(b, oid)
}

func appendByteaArray(b []byte, v [][]byte) []byte {
	b = appendArrayHeader(b, oidBytea, len(v))
	for _, e := range v {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func appendTextArray(b []byte, v []string) []byte {
	b = appendArrayHeader(b, oidText, len(v))
	for _, e := range v {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func appendInt8Array(b []byte, v []int64) []byte {
	b = appendArrayHeader(b, oidInt8, len(v))
	for _, e := range v {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(e))
	}
	return b
}

func appendInt2Array(b []byte, v []int16) []byte {
	b = appendArrayHeader(b, oidInt2, len(v))
	for _, e := range v {
		b = binary.BigEndian.AppendUint32(b, 2)
		b = binary.BigEndian.AppendUint16(b, uint16(e))
	}
	return b
}

func appendTimeArray(b []byte, v []domain.Instant) []byte {
	b = appendArrayHeader(b, oidTimestamptz, len(v))
	for _, e := range v {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(int64(e)-postgresEpoch))
	}
	return b
}

func decodeInt8(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

func decodeInt2(b []byte) (int16, bool) {
	if len(b) != 2 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(b)), true
}

// decodeLedgerCount decodes a ledger row's count, which the ledger's
// constraints keep within 0 to MaxRowsPerShard: a count outside them is
// not a count, and a negative one would leave a full shard room.
func decodeLedgerCount(b []byte) (int64, bool) {
	n, ok := decodeInt8(b)
	return n, ok && n >= 0 && n <= MaxRowsPerShard
}

// decodeTime decodes a binary timestamptz. Infinite timestamps, which the
// table's constraints forbid, are not a time.
func decodeTime(b []byte) (domain.Instant, bool) {
	us, ok := decodeInt8(b)
	if !ok || us == 1<<63-1 || us == -1<<63 || us > 1<<63-1-postgresEpoch {
		return 0, false
	}
	return domain.Instant(us + postgresEpoch), true
}

// appendServerTimeout appends a statement or lock timeout that ends by
// deadline to b, in the form set_config accepts: what is left until then,
// less a margin so that the server's timeout usually fires before the
// deadline and gives the caller its answer, in whole milliseconds rounded
// up, so that a tight deadline is never cut short by rounding. The margin
// is a tenth of what is left, up to a quarter of a second: on a loaded
// machine the server's answer to its own timeout can take a good part of
// that to arrive, and a budget that ends first costs the connection.
func appendServerTimeout(b []byte, deadline time.Time) []byte {
	left := time.Until(deadline)
	left -= serverTimeoutMargin(left)
	ms := (left + time.Millisecond - 1) / time.Millisecond
	b = strconv.AppendInt(b, max(int64(ms), 1), 10)
	return append(b, "ms"...)
}

// serverTimeoutMargin is how long before a deadline left away the server's
// timeouts set from it strike: a tenth of the time left, at most 250 ms,
// so that the server usually ends a slow statement itself before the
// client-side deadline does.
func serverTimeoutMargin(left time.Duration) time.Duration {
	return min(left/10, 250*time.Millisecond)
}
