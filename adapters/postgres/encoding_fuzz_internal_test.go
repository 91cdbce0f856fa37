package postgres

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// FuzzDecodeTime decodes any bytes as a binary timestamptz and requires
// that a decoded time encodes back to the same bytes, that neither
// infinity nor a time beyond domain.Instant's range decodes, and that an
// instant in range survives encoding and decoding. appendServerTimeout is
// fed the same value as a time left: it always names at least 1 ms, never
// more than is left (rounded up to a millisecond) unless 1 ms is.
func FuzzDecodeTime(f *testing.F) {
	for _, us := range []int64{0, 1, -1, 1<<63 - 1, -1 << 63, 1<<63 - 1 - postgresEpoch, 1<<63 - postgresEpoch, 820_000_000_000_000} {
		f.Add(binary.BigEndian.AppendUint64(nil, uint64(us)))
	}
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := decodeTime(b)
		if len(b) != 8 {
			require.False(t, ok)
			return
		}
		us := int64(binary.BigEndian.Uint64(b))
		wantOK := us != 1<<63-1 && us != -1<<63 && us <= 1<<63-1-postgresEpoch
		require.Equal(t, wantOK, ok, "%d", us)
		if ok {
			arr := appendTimeArray(nil, []domain.Instant{got})
			require.Equal(t, b, arr[len(arr)-8:])
			require.Equal(t, domain.Instant(us+postgresEpoch), got)
		}
		// The same value as an instant, when encoding it does not wrap.
		if in := domain.Instant(us); int64(in) >= -1<<63+postgresEpoch {
			arr := appendTimeArray(nil, []domain.Instant{in})
			back, ok := decodeTime(arr[len(arr)-8:])
			if int64(in)-postgresEpoch != 1<<63-1 && int64(in)-postgresEpoch != -1<<63 {
				require.True(t, ok)
				require.Equal(t, in, back)
			}
		}

		left := time.Duration(us)
		deadline := time.Now().Add(left)
		text := string(appendServerTimeout(nil, deadline))
		require.True(t, strings.HasSuffix(text, "ms"), text)
		n, err := strconv.ParseInt(strings.TrimSuffix(text, "ms"), 10, 64)
		require.NoError(t, err, text)
		require.GreaterOrEqual(t, n, int64(1))
		if n > 1 {
			require.LessOrEqual(t, time.Duration(n-1)*time.Millisecond, left, text)
		}
	})
}

var hexRun8 = regexp.MustCompile(`[0-9A-Fa-f]{8,}`)

// FuzzInterpretError maps a server error with any field values, at each
// stage, through interpretError and interpretMaintenanceError, and
// requires the mapping the store's rules give (the step, whether quota may
// have been consumed or rows removed, whether it timed out) and that no
// printing of the result holds the fields the sanitizer drops or a hex
// run outside the server's code and severity.
func FuzzInterpretError(f *testing.F) {
	for _, code := range []string{"23505", "55P03", "57014", "25P03", "40001", "42P01", "08006", ""} {
		for st := range uint8(3) {
			f.Add(code, "ERROR", "message", `Key (subject_key)=(\x00112233445566778899aabbccddeeff)`, "SELECT runlimit_admit($1)", st, false)
		}
	}
	f.Add("XX000", "FATAL", "deadbeefcafebabe", "S3cr3t-pa55w0rd", "", uint8(2), true)
	f.Fuzz(func(t *testing.T, code, severity, message, detail, query string, st uint8, wrap bool) {
		st %= 3
		pgErr := &pgconn.PgError{Code: code, Severity: severity, Message: message, Detail: detail, Hint: detail, Where: query, InternalQuery: query, TableName: detail}
		var err error = pgErr
		if wrap {
			err = fmt.Errorf("round trip: %w", pgErr)
		}
		timeout := code == "57014" || code == "55P03" || code == "25P03"

		ae := interpretError(OpAdmit, stage(st), err)
		wantOp, wantMay := OpAdmit, false
		switch stage(st) {
		case stageBeforeCommit:
			wantOp = OpWrite // a server error: the write was refused
		case stageCommit:
			wantOp, wantMay = OpCommit, true
		}
		require.Equal(t, wantOp, ae.Op)
		require.Equal(t, wantMay, ae.MayHaveConsumed)
		require.Equal(t, wantMay, ports.MayHaveConsumedQuota(ae))
		require.Equal(t, timeout, ae.Timeout)
		require.Equal(t, timeout, errors.Is(ae, ErrTimeout))
		var dbErr *DatabaseError
		require.ErrorAs(t, ae, &dbErr)
		require.Equal(t, code, dbErr.Code)

		me := interpretMaintenanceError(opCleanup, stage(st), err)
		require.Equal(t, stage(st) == stageCommit, me.MayHaveRemoved)
		require.False(t, ports.MayHaveConsumedQuota(me))
		require.Equal(t, timeout, errors.Is(me, ErrTimeout))

		// What may be printed: the same errors from a server error
		// without the fields the sanitizer drops.
		var neutral error = &pgconn.PgError{Code: code, Severity: severity, Message: message}
		if wrap {
			neutral = fmt.Errorf("round trip: %w", neutral)
		}
		var kept string
		for _, v := range []any{interpretError(OpAdmit, stage(st), neutral), interpretMaintenanceError(opCleanup, stage(st), neutral)} {
			js, _ := json.Marshal(v)
			kept += fmt.Sprintf("%v %+v %#v %s", v, v, v, js)
		}
		for _, v := range []any{ae, me} {
			js, jerr := json.Marshal(v)
			require.NoError(t, jerr)
			prints := []string{fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), string(js)}
			for _, s := range []string{detail, query} {
				if len(s) < 4 || strings.Contains(kept, s) || strings.Contains(message, s) {
					continue
				}
				for _, p := range prints {
					require.NotContains(t, p, s)
				}
			}
			text := v.(error).Error()
			for _, own := range []string{severity, code} {
				if own != "" {
					text = strings.ReplaceAll(text, own, " ")
				}
			}
			require.False(t, hexRun8.MatchString(text), "%q", v.(error).Error())
			require.False(t, bytes.ContainsAny([]byte(text), "\x00\x1b"), "%q", text)
		}
	})
}
