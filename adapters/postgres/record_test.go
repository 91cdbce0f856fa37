package postgres_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// record encodes a composite value in PostgreSQL's binary format; a nil
// field is NULL.
func record(count int, fields ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(count))
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, 20) // int8's type oid
		if f == nil {
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

func TestDecodeRecord(t *testing.T) {
	t.Parallel()
	one, two := []byte{1, 2, 3}, []byte{}
	fields := make([][]byte, 3)
	require.True(t, postgres.DecodeRecord(record(3, one, nil, two), fields))
	require.Equal(t, one, fields[0])
	require.Nil(t, fields[1], "NULL")
	require.NotNil(t, fields[2], "an empty value is not NULL")
	require.Empty(t, fields[2])

	for name, b := range map[string][]byte{
		"empty":           nil,
		"fewer fields":    record(2, one, two),
		"more fields":     record(4, one, two, one, two),
		"truncated value": record(3, one, nil, two)[:20],
		"trailing bytes":  append(record(3, one, nil, two), 0),
		"negative length": {0, 0, 0, 3, 0, 0, 0, 20, 0xFF, 0xFF, 0xFF, 0xFE},
	} {
		require.False(t, postgres.DecodeRecord(b, make([][]byte, 3)), name)
	}
}
