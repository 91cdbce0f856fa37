package login_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestMain runs the tests under pgtest, which finds the PostgreSQL server
// of the run and says, in one line, when there is none.
func TestMain(m *testing.M) { pgtest.Main(m) }

const testSecret = "Kx7-Qm2-Zr9-Wp4-Ht6-Jn8-Vb3-Fd5-Ls1"

// testLimits are small, so that each scenario reaches its limit in a few
// requests, and all different, so that the fields show which one spoke.
var testLimits = login.Limits{Network: 10, Trial: 2, Client: 6, Identity: 3, Window: time.Minute}

// backend is a store the service can run on.
type backend struct {
	name string
	// config returns the service's config on this backend, its memory
	// store or gate on clock.
	config func(t *testing.T, clock *memory.ManualClock) login.Config
	// exact says every counter runs on the manual clock, so that every t
	// and Retry-After is known; on PostgreSQL the shared quota runs on
	// the database's clock, and only the gate's are.
	exact bool
}

func backends() []backend {
	return []backend{
		{name: "memory", config: memoryConfig, exact: true},
		{name: "postgres", config: func(t *testing.T, clock *memory.ManualClock) login.Config {
			return postgresConfig(clock, pgtest.New(t).URL)
		}},
	}
}

// memoryConfig keeps every counter in one memory store on clock.
func memoryConfig(_ *testing.T, clock *memory.ManualClock) login.Config {
	return login.Config{
		Runtime: wiring.Config{
			Memory:          memory.Config{MaxKeys: 1000, Clock: clock},
			KeySecret:       wiring.NewSecret(testSecret),
			CleanupInterval: -1,
		},
		Limits: testLimits,
	}
}

// postgresConfig keeps the shared quota in the database at dbURL and the
// network limits in a memory gate on clock.
func postgresConfig(clock *memory.ManualClock, dbURL string) login.Config {
	return login.Config{
		Runtime: wiring.Config{
			DatabaseURL:     wiring.NewSecret(dbURL),
			Gate:            &memory.Config{MaxKeys: 1000, Clock: clock},
			KeySecret:       wiring.NewSecret(testSecret),
			CleanupInterval: -1,
		},
		Limits: testLimits,
	}
}

// service is the login service running in this process on a real
// listener, driven over real connections.
type service struct {
	t     *testing.T
	base  string // "http://127.0.0.1:port"
	app   *fx.App
	clock *memory.ManualClock
	exact bool
	logs  *logBuffer

	mu sync.Mutex
	// sent is every identity, password and client address a request
	// carried: none may come back in a response or a log record.
	sent    []string
	clients map[string]*http.Client
}

// start runs the service b configures, on a fresh manual clock.
func start(t *testing.T, b backend, edit ...func(*login.Config)) *service {
	t.Helper()
	clock := memory.NewManualClock()
	cfg := b.config(t, clock)
	for _, e := range edit {
		e(&cfg)
	}
	return startOn(t, cfg, listen(t), clock, b.exact)
}

// listen returns a listener on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// startOn runs the service on ln, the way the command does (login.Options
// under fx, with extra options beside it), and stops it when the test
// ends. The service's and the runtime's records go to s.logs.
func startOn(t *testing.T, cfg login.Config, ln net.Listener, clock *memory.ManualClock, exact bool, extra ...fx.Option) *service {
	t.Helper()
	s := &service{t: t, base: "http://" + ln.Addr().String(), clock: clock, exact: exact, logs: new(logBuffer), clients: map[string]*http.Client{}}
	cfg.Logger = slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime}))
	s.app = fx.New(login.Options(cfg, ln), fx.NopLogger, fx.Options(extra...))
	require.NoError(t, s.app.Err())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.app.Start(ctx); err != nil {
		ln.Close()
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, c := range s.clients {
			c.CloseIdleConnections()
		}
		require.NoError(t, s.app.Stop(ctx))
		s.requireNothingSentIn("the log", s.logs.String())
	})
	return s
}

// dropTime drops slog's timestamp, whose digits are no business of a
// test that looks for addresses in the log.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// from returns a client whose connections come from addr, an address of
// the loopback network 127.0.0.0/8: each is a client network of its own,
// as the service counts them, with no forwarding header involved.
func (s *service) from(addr string) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[addr]; ok {
		return c
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 5 * time.Second}
	c := &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext},
		Timeout:   30 * time.Second,
	}
	s.clients[addr] = c
	if addr != "127.0.0.1" {
		// The service's own address is 127.0.0.1: only other addresses
		// can be looked for in what it writes.
		s.sent = append(s.sent, addr)
	}
	return c
}

// note records what a request carries, to be looked for in responses and
// logs.
func (s *service) note(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			continue
		}
		s.sent = append(s.sent, v)
		if id, err := httplimit.AppendIdentity(nil, v); err == nil {
			s.sent = append(s.sent, string(id))
		}
	}
}

// reply is what the service answered.
type reply struct {
	status int
	header http.Header
	body   string
}

// login posts identity and password as a form from addr.
func (s *service) login(addr, identity, password string) reply {
	s.t.Helper()
	s.note(identity, password)
	form := url.Values{"identity": {identity}, "password": {password}}.Encode()
	return s.post(addr, "application/x-www-form-urlencoded", form, nil)
}

// post sends body to POST /login from addr, with header added.
func (s *service) post(addr, contentType, body string, header http.Header) reply {
	s.t.Helper()
	return s.postTo(addr, "/login", contentType, body, header)
}

// postTo sends body to POST target (a path and query) from addr.
func (s *service) postTo(addr, target, contentType, body string, header http.Header) reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+target, strings.NewReader(body))
	require.NoError(s.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return s.do(addr, req)
}

// get sends GET path from addr.
func (s *service) get(addr, path string) reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
	require.NoError(s.t, err)
	return s.do(addr, req)
}

func (s *service) do(addr string, req *http.Request) reply {
	s.t.Helper()
	resp, err := s.from(addr).Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// want is a response the service must give, every header of it: the
// fields that are empty must be absent.
type want struct {
	status     int
	body       string // without its final newline
	rateLimit  string
	policy     string
	retryAfter string
}

// JSON bodies the service answers with.
const (
	okBody          = `{"status":"ok"}`
	invalidBody     = `{"error":"invalid credentials"}`
	tooManyBody     = `{"error":"too many requests"}`
	unavailableBody = `{"error":"service unavailable"}`
	readyBody       = `{"status":"ready"}`
	notReadyBody    = `{"status":"unavailable"}`
	incompleteBody  = `{"error":"identity and password are required"}`
	malformedBody   = `{"error":"malformed request body"}`
	tooLargeBody    = `{"error":"request body too large"}`
	mediaTypeBody   = `{"error":"send application/json or application/x-www-form-urlencoded"}`
	invalidIDBody   = `{"error":"invalid identity"}`
)

// Items of the RateLimit field, and of RateLimit-Policy (q...).
func trial(r, t int) string    { return fmt.Sprintf(`"login.trial/network";r=%d;t=%d`, r, t) }
func network(r, t int) string  { return fmt.Sprintf(`"login.gate/network";r=%d;t=%d`, r, t) }
func client(r, t int) string   { return fmt.Sprintf(`"login/client";r=%d;t=%d`, r, t) }
func identity(r, t int) string { return fmt.Sprintf(`"login/identity";r=%d;t=%d`, r, t) }

const (
	qTrial    = `"login.trial/network";q=2;w=60`
	qNetwork  = `"login.gate/network";q=10;w=60`
	qClient   = `"login/client";q=6;w=60`
	qIdentity = `"login/identity";q=3;w=60`
)

// RateLimit-Policy describes the policies, not their state: on every
// response that names all four it is this field, lowest rate first,
// however the counts move; a refusal by the gate names the gate's two.
var (
	qAll  = list(qTrial, qIdentity, qClient, qNetwork)
	qGate = list(qTrial, qNetwork)
)

// list joins items into a field.
func list(items ...string) string { return strings.Join(items, ", ") }

// sharedNames are the policies of the shared quota, whose t comes from
// the database's clock on PostgreSQL.
var sharedNames = []string{"login/client", "login/identity"}

// expect requires got to be w: status, body, and every header, with no
// other header than Date and Content-Length beside them; and requires
// that nothing a request sent is in the headers or the body.
func (s *service) expect(got reply, w want) {
	s.t.Helper()
	t := s.t
	require.Equal(t, w.status, got.status, "status; body %s", got.body)
	require.Equal(t, w.body+"\n", got.body)
	h := got.header
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "no-store", h.Get("Cache-Control"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, strconv.Itoa(len(got.body)), h.Get("Content-Length"))
	names := []string{"Cache-Control", "Content-Length", "Content-Type", "Date", "X-Content-Type-Options"}
	for name, v := range map[string]string{httplimit.HeaderRateLimit: w.rateLimit, httplimit.HeaderRateLimitPolicy: w.policy, httplimit.HeaderRetryAfter: w.retryAfter} {
		if v != "" {
			names = append(names, name)
			require.Len(t, h.Values(name), 1, name)
		}
	}
	slices.Sort(names)
	require.Equal(t, names, slices.Sorted(maps.Keys(h)), "the response's header names")
	if s.exact {
		require.Equal(t, w.policy, h.Get(httplimit.HeaderRateLimitPolicy), "RateLimit-Policy")
		require.Equal(t, w.rateLimit, h.Get(httplimit.HeaderRateLimit), "RateLimit")
		require.Equal(t, w.retryAfter, h.Get(httplimit.HeaderRetryAfter), "Retry-After")
	} else {
		s.expectDatabaseTimes(got, w)
	}
	var dump strings.Builder
	_ = got.header.Write(&dump)
	dump.WriteString(got.body)
	s.requireNothingSentIn("a response", dump.String())
}

// rateLimitItem matches one item of a RateLimit field.
var rateLimitItem = regexp.MustCompile(`"([^"]+)";r=(\d+);t=(\d+)`)

// expectDatabaseTimes checks RateLimit, RateLimit-Policy and Retry-After
// where the shared quota's t comes from the database's clock. Each such t
// is a whole second from 1 to the window's 60; with it masked, the items
// are exactly w's. Their order is not compared: limits with equally few
// requests left are ordered by their exact time to reset, which for the
// shared ones the database decides to the microsecond. What is required
// is the order the field promises: fewest requests left first.
// RateLimit-Policy depends on no clock or count and is compared exactly.
// Retry-After is never earlier than the t of an exhausted limit that
// enforces: it is the longest of them.
func (s *service) expectDatabaseTimes(got reply, w want) {
	t := s.t
	t.Helper()
	rl := got.header.Get(httplimit.HeaderRateLimit)
	retry := int64(-1)
	prevLeft := int64(-1)
	for _, m := range rateLimitItem.FindAllStringSubmatch(rl, -1) {
		left, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		sec, err := strconv.ParseInt(m[3], 10, 64)
		require.NoError(t, err)
		if slices.Contains(sharedNames, m[1]) {
			require.True(t, sec >= 1 && sec <= 60, "%s t=%d out of 1..60", m[1], sec)
		}
		require.GreaterOrEqual(t, left, prevLeft, "RateLimit %s: fewest requests left first", rl)
		prevLeft = left
		if left == 0 && m[1] != "login.trial/network" {
			retry = max(retry, sec)
		}
	}
	require.ElementsMatch(t, items(maskShared(w.rateLimit)), items(maskShared(rl)), "RateLimit, shared t masked")
	require.Equal(t, w.policy, got.header.Get(httplimit.HeaderRateLimitPolicy), "RateLimit-Policy")
	switch {
	case w.retryAfter == "":
		require.Empty(t, got.header.Values(httplimit.HeaderRetryAfter))
	case retry >= 0:
		require.Equal(t, strconv.FormatInt(retry, 10), got.header.Get(httplimit.HeaderRetryAfter), "Retry-After")
	default:
		require.Equal(t, w.retryAfter, got.header.Get(httplimit.HeaderRetryAfter), "Retry-After")
	}
}

// items splits a field into its list items.
func items(field string) []string {
	if field == "" {
		return nil
	}
	return strings.Split(field, ", ")
}

// maskShared replaces the t of the shared quota's items with "T".
func maskShared(rl string) string {
	return rateLimitItem.ReplaceAllStringFunc(rl, func(item string) string {
		m := rateLimitItem.FindStringSubmatch(item)
		if !slices.Contains(sharedNames, m[1]) {
			return item
		}
		return fmt.Sprintf("%q;r=%s;t=T", m[1], m[2])
	})
}

// requireNothingSentIn fails when out holds an identity, a password or a
// client address that a request of this test sent.
func (s *service) requireNothingSentIn(where, out string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.sent {
		require.NotContains(s.t, out, v, "%s repeats what a request sent", where)
	}
}

// logBuffer collects the service's log records, safe for the server's
// goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// records returns the log records whose message is msg.
func (b *logBuffer) records(msg string) []string {
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, `"msg":"`+msg+`"`) {
			out = append(out, line)
		}
	}
	return out
}
