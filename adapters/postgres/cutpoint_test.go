package postgres_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// Directions of a connection's byte stream, as a cutter counts them.
const (
	toServer   = 0
	fromServer = 1
)

// cutter stands between a pool and the server: every connection the pool
// dials counts the bytes it writes and reads. Armed with a direction and a
// count n, it closes the connection the moment the n-th byte in that
// direction has passed (at once, for n = 0), as a network that drops a
// connection would; recording, it keeps the bytes that pass.
type cutter struct {
	mu        sync.Mutex
	armed     bool
	recording bool
	dir       int
	at        int64
	count     [2]int64
	stream    [2][]byte
	fired     bool
}

func (c *cutter) install(cfg *pgxpool.Config) { c.installConn(cfg.ConnConfig) }

// installConn stands c between the connections of cfg and the server.
// The cutter reads the protocol in the clear, so these connections never
// negotiate TLS: with sslmode prefer (a URL that does not say), a
// connection would open with an SSLRequest whose one-byte answer is no
// protocol message, or carry nothing but TLS records.
func (c *cutter) installConn(cfg *pgx.ConnConfig) {
	cfg.TLSConfig, cfg.Fallbacks = nil, nil
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: conn, c: c}, nil
	}
}

// arm cuts the next connection to exchange bytes after n bytes in direction
// dir, counted from now.
func (c *cutter) arm(dir int, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.recording, c.fired = true, false, false
	c.dir, c.at = dir, n
	c.count = [2]int64{}
}

// record counts and keeps the bytes of both directions from now on.
func (c *cutter) record() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.recording = false, true
	c.count = [2]int64{}
	c.stream = [2][]byte{}
}

// stop disarms the cutter and reports whether it cut a connection.
func (c *cutter) stop() (fired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.recording = false, false
	return c.fired
}

// allow returns how many of n bytes in direction dir may pass, and whether
// the connection must be closed once they have.
func (c *cutter) allow(dir int, n int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed || c.dir != dir {
		return n, false
	}
	left := c.at - c.count[dir]
	if int64(n) < left {
		c.count[dir] += int64(n)
		return n, false
	}
	c.count[dir] = c.at
	c.armed, c.fired = false, true
	return int(left), true
}

func (c *cutter) passed(dir int, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.recording {
		return
	}
	c.stream[dir] = append(c.stream[dir], b...)
}

type cutConn struct {
	net.Conn
	c *cutter
}

func (cc *cutConn) Write(p []byte) (int, error) {
	n, cut := cc.c.allow(toServer, len(p))
	written, err := cc.Conn.Write(p[:n])
	cc.c.passed(toServer, p[:written])
	if !cut || err != nil {
		return written, err
	}
	_ = cc.Conn.Close()
	if written == len(p) {
		return written, nil
	}
	// The closed connection's own error for what could not be written.
	_, err = cc.Conn.Write(p[written:])
	return written, err
}

func (cc *cutConn) Read(p []byte) (int, error) {
	n, cut := cc.c.allow(fromServer, len(p))
	if cut && n == 0 {
		_ = cc.Conn.Close()
		return cc.Conn.Read(p)
	}
	got, err := cc.Conn.Read(p[:n])
	cc.c.passed(fromServer, p[:got])
	if cut && got < n && err == nil {
		// Fewer bytes came than the cut lets through: the cut is still
		// ahead, at the same place in the stream.
		cc.c.mu.Lock()
		cc.c.armed, cc.c.fired = true, false
		cc.c.count[fromServer] -= int64(n - got)
		cc.c.mu.Unlock()
		return got, err
	}
	if cut {
		_ = cc.Conn.Close()
	}
	return got, err
}

// exchange is the recorded byte layout of one warm admission.
type exchange struct {
	// sent and received are the offsets at which every protocol message
	// ends in the stream to and from the server.
	sent, received []int64
	// firstSent and firstReceived are the sizes of round trip 1's request
	// and answer.
	firstSent, firstReceived int64
	// commitSent is the offset at which the request of round trip 2 has
	// reached the message whose arrival lets the server commit: COMMIT's
	// Execute for the locked protocol, the Sync that ends the implicit
	// transaction for the optimistic one.
	commitSent int64
}

// messageEnds splits a recorded protocol stream into its messages, each a
// type byte and a length that counts itself.
func messageEnds(t *testing.T, stream []byte) (ends []int64, types []byte) {
	t.Helper()
	for off := 0; off < len(stream); {
		require.LessOrEqual(t, off+5, len(stream), "a message header is cut short")
		size := int(binary.BigEndian.Uint32(stream[off+1 : off+5]))
		types = append(types, stream[off])
		off += 1 + size
		require.LessOrEqual(t, off, len(stream), "a message is cut short")
		ends = append(ends, int64(off))
	}
	return ends, types
}

func layout(t *testing.T, c *cutter, optimistic bool) exchange {
	t.Helper()
	tr := recordedTrace(t, c)
	require.Len(t, tr.trips[toServer], 2, "a warm allowed admission writes two round trips")
	require.Len(t, tr.trips[fromServer], 2, "a warm allowed admission reads two answers")
	x := exchange{sent: tr.ends[toServer], received: tr.ends[fromServer],
		firstSent: tr.trips[toServer][0], firstReceived: tr.trips[fromServer][0]}
	sentTypes := tr.types[toServer]
	x.commitSent = x.sent[len(x.sent)-1] // the Sync
	if !optimistic {
		// The last Execute before the Sync is COMMIT's.
		require.Equal(t, byte('S'), sentTypes[len(sentTypes)-1])
		require.Equal(t, byte('E'), sentTypes[len(sentTypes)-2])
		x.commitSent = x.sent[len(x.sent)-2]
	}
	return x
}

// trace is the recorded byte layout of one operation's exchange, in both
// directions (toServer, fromServer): the offsets at which its protocol
// messages end, their types, and the offsets at which its round trips end:
// a Sync or a simple Query sent, a ReadyForQuery received.
type trace struct {
	ends  [2][]int64
	types [2][]byte
	trips [2][]int64
}

// recordedTrace splits what the cutter recorded into a trace.
func recordedTrace(t *testing.T, c *cutter) trace {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var tr trace
	for dir, last := range [2]string{toServer: "SQ", fromServer: "Z"} {
		stream := c.stream[dir]
		// A new connection's startup message has no type byte: it
		// starts with its length, whose first byte is 0.
		var startup int64
		if dir == toServer && len(stream) >= 4 && stream[0] == 0 {
			startup = int64(binary.BigEndian.Uint32(stream[:4]))
			tr.ends[dir], tr.types[dir] = []int64{startup}, []byte{0}
		}
		ends, types := messageEnds(t, stream[startup:])
		for _, e := range ends {
			tr.ends[dir] = append(tr.ends[dir], startup+e)
		}
		tr.types[dir] = append(tr.types[dir], types...)
		for i, typ := range tr.types[dir] {
			if strings.IndexByte(last, typ) >= 0 {
				tr.trips[dir] = append(tr.trips[dir], tr.ends[dir][i])
			}
		}
	}
	return tr
}

// points returns the cut points of direction dir of tr (see cutPoints).
func (tr trace) points(dir int) []int64 {
	return cutPoints(tr.ends[dir], tr.types[dir], tr.trips[dir], raceEnabled)
}

// boundaries returns the cut points of direction dir of tr at message
// boundaries alone: those of points but the ones a byte short of a
// message's end, which fail as the end of the message before does.
func (tr trace) boundaries(dir int) []int64 {
	return cutPoints(tr.ends[dir], tr.types[dir], tr.trips[dir], true)
}

// tripPoints returns the cut points of direction dir of tr for an exchange
// of many round trips whose messages fail alike: toward the server, the
// end of every round trip's request, which the server then runs while its
// answer is lost; from the server, a byte into every round trip's answer,
// which the client then reads in part.
func (tr trace) tripPoints(dir int) []int64 {
	trips := tr.trips[dir]
	if dir == toServer {
		return trips[:len(trips)-1]
	}
	out := []int64{1}
	for _, e := range trips[:len(trips)-1] {
		out = append(out, e+1)
	}
	return out
}

// cutPoints returns the cut points of one direction of an exchange whose
// messages end at ends, have types types, and whose round trips end at
// trips: nothing passed; a byte short of every message's end, which leaves
// the message unread; every message's end, which leaves it whole and the
// next one unsent or unread; and a byte into every round trip after the
// first, which was sent or read in part. A byte into any other message
// fails as its end does: the client cannot read, nor the server run, a
// message of which it has a piece. Of a run of more than two data rows
// (a read of many rows), only the first and the last are cut: the rows
// between are read alike.
//
// With boundariesOnly, as under the race detector, which looks for data
// races rather than wrong answers and makes every new connection slower,
// the points a byte short of a message's end are left out: the other
// points still reach every step of the store's failure handling.
func cutPoints(ends []int64, types []byte, trips []int64, boundariesOnly bool) []int64 {
	total := ends[len(ends)-1]
	out := []int64{0}
	for _, e := range trips[:len(trips)-1] {
		out = append(out, e+1)
	}
	for i, e := range ends {
		if types[i] == 'D' && i > 0 && types[i-1] == 'D' && i+1 < len(ends) && types[i+1] == 'D' {
			continue
		}
		if !boundariesOnly {
			out = append(out, e-1)
		}
		out = append(out, e)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(p int64) bool { return p < 0 || p >= total })
}

// cutScenario is one kind of admission the sweep cuts.
type cutScenario struct {
	entry
	existing bool // the keys have a row before the admission
}

// Every backend failure fails closed with a typed error that tells truly
// whether quota may have been consumed: here the TCP connection is cut at
// every message boundary (and a byte either side) of a warm admission's
// exchange, in both directions, on every entry point and protocol, for a
// new key and for one that has a row. At each cut point the admission must
// return, with an [*postgres.AdmissionError] or a decision that was
// committed; a cut before the round trip that carries COMMIT must say that
// nothing was consumed and leave the counters as they were; a cut after it
// may have committed, but then every key of the batch or none; and the
// store must recover on a new connection, with the ledger exact and no
// connection left acquired.
func TestAdmissionSurvivesACutConnectionAtEveryPoint(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	for _, e := range entries {
		for _, existing := range []bool{false, true} {
			sc := cutScenario{entry: e, existing: existing}
			name := e.name + "/new key"
			if existing {
				name = e.name + "/existing key"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sweepCuts(t, f, sc)
			})
		}
	}
}

func sweepCuts(t *testing.T, f *fixture, sc cutScenario) {
	id := fmt.Sprintf("cut.%t.%t.%d", sc.batch, sc.existing, sc.protocol)
	app := "cut-" + id
	cut := &cutter{}
	store, pool := cutStore(t, f, sc.cfg(postgres.Config{}), app, cut)
	p := policy(t, id, 1_000_000, time.Hour)
	subject := 0
	next := func() []domain.Check {
		subject++
		checks := sc.checks(f, p, fmt.Sprintf("s%d", subject))
		if sc.existing {
			sc.allow(t, store, checks)
		}
		return checks
	}
	// The connection is made ready and warm before anything is counted.
	sc.allow(t, store, sc.checks(f, p, "warm-up"))

	checks := next()
	cut.record()
	sc.allow(t, store, checks)
	require.False(t, cut.stop())
	x := layout(t, cut, sc.optimistic())
	tr := recordedTrace(t, cut)

	tried := 0
	for _, dir := range []int{toServer, fromServer} {
		for _, at := range tr.points(dir) {
			tried++
			cutAt(t, f, store, pool, app, cut, sc, x, next(), dir, at)
		}
	}
	t.Logf("%d cut points, %d bytes sent and %d received per admission", tried, x.sent[len(x.sent)-1], x.received[len(x.received)-1])
}

// cutStore opens a store on f's database through a pool of one connection
// that cut stands in front of, whose sessions are application app's. Its
// budget's timeouts are spelled with as many digits throughout, so that
// every operation's exchange has the same layout; every cut costs a new
// connection, which a loaded machine can be slow to open.
func cutStore(t *testing.T, f *fixture, cfg postgres.Config, app string, cut *cutter) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	cfg.OperationTimeout, cfg.AcquireTimeout = 30*time.Second, 30*time.Second
	return f.newStore(t, cfg, func(c *pgxpool.Config) {
		named(app)(c)
		c.MaxConns = 1
		// An idle connection is not pinged on acquisition: the cut must
		// fall in the operation's own exchange.
		c.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		cut.install(c)
	})
}

// cutAt runs one admission of checks with the connection cut after at bytes
// in direction dir, and checks what it answered, what it left in the table,
// and that the store recovers.
func cutAt(t *testing.T, f *fixture, store *postgres.Store, pool *pgxpool.Pool, app string, cut *cutter,
	sc cutScenario, x exchange, checks []domain.Check, dir int, at int64) {
	t.Helper()
	where := fmt.Sprintf("cut after %d bytes %s", at, map[int]string{toServer: "sent", fromServer: "received"}[dir])
	before := make([]int64, len(checks))
	for i, c := range checks {
		before[i] = usedOf(t, f, c)
	}

	type answer struct {
		v   verdict
		err error
	}
	done := make(chan answer, 1)
	cut.arm(dir, at)
	go func() {
		v, err := sc.admit(context.Background(), store, checks)
		done <- answer{v, err}
	}()
	got := testkit.Receive(t, done, time.Minute, "the answer of an admission whose connection was "+where)
	require.True(t, cut.stop(), "%s: the admission's exchange never reached the cut", where)

	// The server ends the cut connection's session, rolling back whatever
	// it had not committed, before its counters are read.
	require.Eventually(t, func() bool { return backendsOf(f, app) == 0 }, 10*time.Second, time.Millisecond,
		"%s: the cut connection's server session never ended", where)
	requireNoneAcquired(t, pool)

	after := make([]int64, len(checks))
	changed := 0
	for i, c := range checks {
		after[i] = usedOf(t, f, c)
		if after[i] != before[i] {
			require.Equal(t, before[i]+1, after[i], "%s: check %d counted more than once", where, i)
			changed++
		}
	}
	require.Contains(t, []int{0, len(checks)}, changed, "%s: %d of %d checks of the batch were counted", where, changed, len(checks))
	requireLedgerExact(t, f, where)

	// Where the cut falls: before the round trip carrying COMMIT was sent,
	// before COMMIT could have reached the server, or after.
	beforeCommitTrip := dir == toServer && at <= x.firstSent || dir == fromServer && at < x.firstReceived
	beforeCommit := beforeCommitTrip || dir == toServer && at < x.commitSent || dir == fromServer && at == x.firstReceived

	if got.err == nil {
		require.Equal(t, domain.Allowed, got.v.outcome, "%s", where)
		require.False(t, beforeCommit, "%s: an admission that could not commit was answered", where)
		require.Equal(t, len(checks), changed, "%s: an allowed admission was not committed", where)
	} else {
		var ae *postgres.AdmissionError
		require.ErrorAs(t, got.err, &ae, "%s", where)
		require.NotErrorIs(t, got.err, domain.ErrInvalidInput, "%s", where)
		may := ports.MayHaveConsumedQuota(got.err)
		require.Equal(t, ae.MayHaveConsumed, may, "%s", where)
		if !may {
			require.Zero(t, changed, "%s: the error says nothing was consumed, but it was (%v)", where, got.err)
		}
		if beforeCommitTrip {
			require.False(t, may, "%s: cut before COMMIT was sent, the error says quota may be consumed (%v)", where, got.err)
			require.Contains(t, []string{postgres.OpLock, postgres.OpAcquire}, ae.Op, "%s", where)
		}
		if !beforeCommit {
			require.True(t, may, "%s: cut once COMMIT may have run, the error says nothing was consumed (%v)", where, got.err)
		}
	}
	if beforeCommit {
		require.Zero(t, changed, "%s: counted although COMMIT could not reach the server", where)
	}

	// The store recovers on a new connection, and counts from what the
	// table holds.
	r, err := sc.admit(context.Background(), store, checks)
	require.NoError(t, err, "%s: the admission after the cut", where)
	require.Equal(t, domain.Allowed, r.outcome, "%s", where)
	for i, c := range checks {
		require.Equal(t, after[i]+1, usedOf(t, f, c), "%s: check %d after recovery", where, i)
	}
	requireLedgerExact(t, f, where)
	requireNoneAcquired(t, pool)
}

// usedOf reads the units check c's counter has used, 0 when it has no row.
func usedOf(t *testing.T, f *fixture, c domain.Check) int64 {
	t.Helper()
	got, ok := f.stored(t, c)
	if !ok {
		return 0
	}
	return got.Used
}

// backendsOf counts the server sessions of application app.
func backendsOf(f *fixture, app string) int {
	n := -1
	err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, app).Scan(&n)
	if err != nil {
		return -1
	}
	return n
}

// requireLedgerExact requires every capacity ledger row to count the rows
// of its shard.
func requireLedgerExact(t *testing.T, f *fixture, where string) {
	t.Helper()
	var wrong, rows int64
	err := f.db.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE c.row_count <> coalesce(w.n, 0)), count(*)
		FROM runlimit_capacity_shards AS c
		LEFT JOIN (SELECT get_byte(config_fingerprint, 0) # get_byte(subject_key, 0) AS shard, count(*) AS n
		           FROM runlimit_fixed_windows GROUP BY 1) AS w ON w.shard = c.capacity_shard`).Scan(&wrong, &rows)
	require.NoError(t, err)
	require.Equal(t, int64(256), rows, "%s", where)
	require.Zero(t, wrong, "%s: ledger rows disagree with the table", where)
}
