package httplimit_test

import (
	"encoding/binary"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// FuzzDraft11Fields writes the RateLimit fields for up to 40 quotas of any
// names and numbers, and reads them back with a strict parser of RFC 9651
// Lists that knows nothing of the writer. Each field is absent or one line
// of printable ASCII, a List of Items that are sf-strings with exactly the
// parameters the draft gives them (q and w; r and t), each an sf-integer of
// at most 15 digits. The names are the quotas' names, unescaped whole, each
// once, in the order the documentation gives; the numbers are the quotas'
// own, rounded and bounded as documented. A name's raw bytes are thus never
// outside its quotes. Retry-After, for a rejection of these quotas, is
// never earlier than the t of an exhausted enforcing quota, nor later than
// the longest wait among them and the denial.
func FuzzDraft11Fields(f *testing.F) {
	for _, qs := range [][]httplimit.Quota{
		{{Name: "auth.login/identity", Limit: 8, Window: time.Minute, Cost: 1, Known: true, Reset: 37 * time.Second}},
		{
			{Name: "evil\r\nSet-Cookie: x=1", Limit: 1, Window: time.Second, Known: true},
			{Name: `a", "b";q=1`, Limit: 5, Window: time.Second, Known: true, Remaining: 4},
			{Name: `\"`, Limit: 2, Window: time.Hour},
			{Name: "caf\u00e9", Limit: 3, Window: time.Minute, Known: true},
		},
		{
			{Name: "x", Limit: 1<<63 - 1, Window: 1<<63 - 1, Cost: 1, Known: true, Remaining: 1<<63 - 1, Reset: 1<<63 - 1},
			{Name: "x", Limit: 1, Window: time.Millisecond, Known: true},
			{Name: "y", Limit: -1 << 63, Window: -1 << 63, Cost: -1 << 63, Known: true, Remaining: -1 << 63, Reset: -1 << 63},
		},
		{
			{Name: "", Limit: 10, Window: time.Second, Cost: 3, Known: true, Remaining: 2, Reset: 1},
			{Name: " ", Limit: 10, Window: time.Second, Cost: 3, Known: true, Remaining: 3, Reset: time.Second + 1, Shadow: true},
			{Name: strings.Repeat("~", 200), Limit: 1, Window: 1},
		},
		{{Name: ";", Limit: 1, Window: time.Second, Known: true}, {Name: ",", Limit: 1, Window: time.Second}, {Name: "=", Limit: 1, Window: time.Second}},
		{},
	} {
		f.Add(encodeQuotas(qs), int64(3*time.Second), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, denial int64, hasDenial bool) {
		quotas := decodeQuotas(data)
		given := slices.Clone(quotas)
		h := http.Header{}
		h.Set(httplimit.HeaderRateLimit, "stale")
		h.Set(httplimit.HeaderRateLimitPolicy, "stale")
		httplimit.Draft11{}.WriteFields(h, quotas)
		require.Equal(t, given, quotas, "the quotas were changed")

		// The model: a quota is written when its name is an sf-string's
		// and no earlier quota has it.
		var written []httplimit.Quota
		for i, q := range quotas {
			if printable(q.Name) && !slices.ContainsFunc(quotas[:i], func(p httplimit.Quota) bool { return p.Name == q.Name }) {
				written = append(written, q)
			}
		}
		byRate := slices.Clone(written)
		slices.SortStableFunc(byRate, comparePolicies)
		var wantPolicy, wantRL []sfItem
		for _, q := range byRate {
			it := sfItem{name: q.Name, params: []sfParam{{"q", bounded(int64(perWindow(q)))}}}
			if q.Window > 0 {
				it.params = append(it.params, sfParam{"w", bounded(ceilSecs(q.Window))})
			}
			wantPolicy = append(wantPolicy, it)
		}
		for _, q := range written {
			if !q.Known {
				continue
			}
			left := q.Remaining
			if q.Cost > 1 {
				left = q.Remaining / q.Cost
			}
			wantRL = append(wantRL, sfItem{name: q.Name, params: []sfParam{{"r", bounded(left)}, {"t", bounded(ceilSecs(q.Reset))}}})
		}
		for _, field := range []struct {
			name string
			want []sfItem
		}{{httplimit.HeaderRateLimitPolicy, wantPolicy}, {httplimit.HeaderRateLimit, wantRL}} {
			values := h.Values(field.name)
			if len(field.want) == 0 || (field.name == httplimit.HeaderRateLimit && len(wantPolicy) == 0) {
				require.Empty(t, values, "%s: %q", field.name, values)
				continue
			}
			require.Len(t, values, 1, field.name)
			v := values[0]
			for i := 0; i < len(v); i++ {
				require.True(t, v[i] >= 0x20 && v[i] <= 0x7e, "%s: byte %d of %q", field.name, i, v)
			}
			got, err := parseSFList(v)
			require.NoError(t, err, "%s: %q", field.name, v)
			require.Equal(t, field.want, got, "%s: %q", field.name, v)
		}

		// Retry-After, as a rejection of these quotas would write it.
		retry, ok := httplimit.RetryAfterSeconds(quotas, time.Duration(denial), hasDenial)
		var waits []int64
		if hasDenial {
			waits = append(waits, ceilSecs(time.Duration(denial)))
		}
		for _, q := range quotas {
			if q.Known && !q.Shadow && q.Remaining < max(q.Cost, 1) {
				waits = append(waits, ceilSecs(q.Reset))
			}
		}
		require.Equal(t, len(waits) > 0, ok)
		if ok {
			require.Equal(t, slices.Max(waits), retry)
			require.GreaterOrEqual(t, retry, int64(0))
		}
		// An exhausted enforcing quota of the field (r=0) never asks the
		// client to come back later than Retry-After does.
		for _, it := range wantRL {
			q := written[slices.IndexFunc(written, func(q httplimit.Quota) bool { return q.Name == it.name })]
			if it.params[0].value == 0 && !q.Shadow {
				require.True(t, ok, "%q is exhausted but there is no Retry-After", it.name)
				require.GreaterOrEqual(t, retry, it.params[1].value, "%q", it.name)
			}
		}
	})
}

// comparePolicies restates RateLimit-Policy's documented order: fewest
// requests per second of window first (exact, in big integers), then fewest
// requests per window, then by name; a quota without a window last.
func comparePolicies(a, b httplimit.Quota) int {
	ra, rb := perWindow(a), perWindow(b)
	switch wa, wb := a.Window > 0, b.Window > 0; {
	case wa && !wb:
		return -1
	case !wa && wb:
		return 1
	case wa && wb:
		left := new(big.Int).Mul(new(big.Int).SetUint64(ra), big.NewInt(int64(b.Window)))
		right := new(big.Int).Mul(new(big.Int).SetUint64(rb), big.NewInt(int64(a.Window)))
		if c := left.Cmp(right); c != 0 {
			return c
		}
	}
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// perWindow is the requests a window admits: the limit, at least 0, over
// the cost, at least 1, rounded down.
func perWindow(q httplimit.Quota) uint64 {
	return uint64(max(q.Limit, 0)) / uint64(max(q.Cost, 1))
}

// ceilSecs rounds d up to whole seconds, 0 for d <= 0, in big integers.
func ceilSecs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	q, m := new(big.Int).DivMod(big.NewInt(int64(d)), big.NewInt(int64(time.Second)), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// bounded is n as an sf-integer the fields can carry: 0 to 15 nines.
func bounded(n int64) int64 { return min(max(n, 0), 999_999_999_999_999) }

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// encodeQuotas is decodeQuotas' inverse, for seeds.
func encodeQuotas(qs []httplimit.Quota) []byte {
	var b []byte
	for _, q := range qs {
		b = append(b, byte(len(q.Name)))
		b = append(b, q.Name[:min(len(q.Name), 255)]...)
		for _, n := range []int64{q.Limit, int64(q.Window), q.Cost, q.Remaining, int64(q.Reset)} {
			b = binary.BigEndian.AppendUint64(b, uint64(n))
		}
		var flags byte
		if q.Known {
			flags |= 1
		}
		if q.Shadow {
			flags |= 2
		}
		b = append(b, flags)
	}
	return b
}

// decodeQuotas reads at most 40 quotas from data: a name's length and
// bytes, five big-endian integers and a byte of flags each. A short tail
// reads as zeros.
func decodeQuotas(data []byte) []httplimit.Quota {
	take := func(n int) []byte {
		b := make([]byte, n)
		data = data[copy(b, data):]
		return b
	}
	var qs []httplimit.Quota
	for len(data) > 0 && len(qs) < 40 {
		var q httplimit.Quota
		q.Name = string(take(int(take(1)[0])))
		n := func() int64 { return int64(binary.BigEndian.Uint64(take(8))) }
		q.Limit, q.Window, q.Cost, q.Remaining, q.Reset = n(), time.Duration(n()), n(), n(), time.Duration(n())
		flags := take(1)[0]
		q.Known, q.Shadow = flags&1 != 0, flags&2 != 0
		qs = append(qs, q)
	}
	return qs
}

// sfItem is a List member as the RateLimit fields use it: an sf-string
// with integer parameters, in the order written.
type sfItem struct {
	name   string
	params []sfParam
}

type sfParam struct {
	key   string
	value int64
}

type sfError string

func (e sfError) Error() string { return string(e) }

// parseSFList parses a field value as an RFC 9651 List (section 4.2.1),
// strictly, and accepts only members that are Items whose bare item is an
// sf-string and whose parameters are sf-integers: any other bare item,
// an Inner List, a Boolean parameter, a duplicated key, leading or trailing
// whitespace, an empty member or a trailing comma is an error.
func parseSFList(s string) ([]sfItem, error) {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return nil, sfError("empty, or whitespace around the value")
	}
	var list []sfItem
	for {
		name, rest, ok := parseSFString(s)
		if !ok {
			return nil, sfError("a member is not an sf-string: " + strconv.Quote(s))
		}
		it := sfItem{name: name}
		s = rest
		for len(s) > 0 && s[0] == ';' {
			s = strings.TrimLeft(s[1:], " ")
			k := 0
			for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || s[k] == '*' ||
				k > 0 && (s[k] >= '0' && s[k] <= '9' || s[k] == '_' || s[k] == '-' || s[k] == '.')) {
				k++
			}
			if k == 0 {
				return nil, sfError("a parameter has no key")
			}
			key := s[:k]
			s = s[k:]
			if len(s) == 0 || s[0] != '=' {
				return nil, sfError("parameter " + key + " is a Boolean, not an integer")
			}
			s = s[1:]
			d := 0
			for d < len(s) && s[d] >= '0' && s[d] <= '9' {
				d++
			}
			if d == 0 || d > 15 || (d < len(s) && s[d] == '.') {
				return nil, sfError("parameter " + key + " is not an sf-integer of at most 15 digits")
			}
			n, err := strconv.ParseInt(s[:d], 10, 64)
			if err != nil {
				return nil, err
			}
			s = s[d:]
			if slices.ContainsFunc(it.params, func(p sfParam) bool { return p.key == key }) {
				return nil, sfError("parameter " + key + " is given twice")
			}
			it.params = append(it.params, sfParam{key, n})
		}
		list = append(list, it)
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return list, nil
		}
		if s[0] != ',' {
			return nil, sfError("a member is followed by " + strconv.Quote(s))
		}
		s = strings.TrimLeft(s[1:], " \t")
		if s == "" {
			return nil, sfError("a trailing comma")
		}
	}
}
