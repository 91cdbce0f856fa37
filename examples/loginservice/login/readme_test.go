package login_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/examples/loginservice/promfx"
	"github.com/runlimit/runlimit/internal/readme"
)

// readmes hold console sessions against the service, each block one
// session from a fresh start with the defaults of make loginservice.
var readmes = map[string]string{"example": "../README.md", "main": "../../../README.md"}

// TestREADME replays every curl command of the READMEs' console blocks
// as an HTTP request, in order, against a service started as the command
// starts it (login.Options and promfx.Module), with its defaults, on the
// memory store (its clock does not move, as the commands ran within a
// second), and requires the output the README shows: the status line,
// every header but Date's value, and the body, or the body's lines that
// a grep -E after it keeps; or what -w prints.
func TestREADME(t *testing.T) {
	t.Parallel()
	sessions := 0
	for name, path := range readmes {
		blocks, err := readme.Blocks(path, "console")
		require.NoError(t, err)
		for i, block := range blocks {
			sessions++
			t.Run(fmt.Sprintf("%s README session %d", name, i+1), func(t *testing.T) {
				t.Parallel()
				replay(t, block)
			})
		}
	}
	require.Equal(t, 2, sessions, "the two READMEs' sessions")
}

// replay runs one console session.
func replay(t *testing.T, block string) {
	clock := memory.NewManualClock()
	s := startOn(t, login.Config{Runtime: wiring.Config{
		Memory:    memory.Config{Clock: clock},
		KeySecret: wiring.NewSecret(testSecret),
	}}, listen(t), clock, true, promfx.Module)
	var cmd string
	var out []string
	flush := func() {
		if cmd != "" {
			s.replayCurl(cmd, strings.Join(out, "\n"))
		}
	}
	for _, line := range strings.Split(block, "\n") {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			flush()
			cmd, out = c, nil
			continue
		}
		require.NotEmpty(t, cmd, "output before the first command")
		out = append(out, line)
	}
	flush()
	require.NotEmpty(t, cmd, "an empty session")
}

// curlCommand is the part of curl the READMEs use.
type curlCommand struct {
	url      string
	header   http.Header
	data     []string
	include  bool           // -i
	writeOut string         // -w, with -o /dev/null
	from     string         // --interface
	grep     *regexp.Regexp // | grep -E, on the body
}

// parseCurl reads a curl command line: single-quoted and plain words, and
// the options -s, -i, -H, -d, -o /dev/null, -w and --interface, and a
// pipe into grep -E with one pattern, which Go's regexp reads as grep
// does for the patterns the READMEs use.
func parseCurl(t *testing.T, line string) curlCommand {
	t.Helper()
	words := shellWords(t, line)
	require.Equal(t, "curl", words[0], "%s", line)
	c := curlCommand{header: http.Header{}, from: "127.0.0.1"}
	discard := false
	for i := 1; i < len(words); i++ {
		next := func() string {
			i++
			require.Less(t, i, len(words), "%s: %s needs a value", line, words[i-1])
			return words[i]
		}
		switch w := words[i]; w {
		case "-s":
		case "-i", "-si", "-is":
			c.include = true
		case "-H":
			name, value, ok := strings.Cut(next(), ": ")
			require.True(t, ok, "%s: a header", line)
			c.header.Add(name, value)
		case "-d":
			c.data = append(c.data, next())
		case "-o":
			require.Equal(t, "/dev/null", next())
			discard = true
		case "-w":
			c.writeOut = next()
		case "--interface":
			c.from = next()
		case "|":
			rest := words[i+1:]
			require.Len(t, rest, 3, "%s: | grep -E 'pattern'", line)
			require.Equal(t, []string{"grep", "-E"}, rest[:2], "%s: | grep -E 'pattern'", line)
			c.grep = regexp.MustCompile(rest[2])
			i = len(words)
		default:
			require.False(t, strings.HasPrefix(w, "-"), "%s: option %s is not replayed", line, w)
			require.Empty(t, c.url, "%s: one URL", line)
			c.url = w
		}
	}
	require.Equal(t, discard, c.writeOut != "", "%s: -w goes with -o /dev/null", line)
	require.False(t, c.grep != nil && (c.include || discard), "%s: grep reads the body alone", line)
	require.True(t, strings.HasPrefix(c.url, "127.0.0.1:8080/"), "%s: the service's default address", line)
	return c
}

// shellWords splits a command line at spaces, keeping single-quoted
// words whole.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quote in %s", line)
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// replayCurl sends the request line describes and requires want, the
// output the README shows for it.
func (s *service) replayCurl(line, want string) {
	t := s.t
	t.Helper()
	c := parseCurl(t, line)
	method, body := http.MethodGet, strings.Join(c.data, "&")
	if c.data != nil {
		method = http.MethodPost
		if c.header.Get("Content-Type") == "" {
			c.header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		s.noteBody(c.header.Get("Content-Type"), body)
	}
	req, err := http.NewRequest(method, s.base+strings.TrimPrefix(c.url, "127.0.0.1:8080"), strings.NewReader(body))
	require.NoError(t, err)
	req.Header = c.header
	got := s.do(c.from, req)
	var dump strings.Builder
	_ = got.header.Write(&dump)
	s.requireNothingSentIn("a response", dump.String()+got.body)

	if c.writeOut != "" {
		out := strings.ReplaceAll(c.writeOut, `\n`, "\n")
		out = strings.ReplaceAll(out, "%{http_code}", fmt.Sprint(got.status))
		require.Equal(t, want+"\n", out, "%s", line)
		return
	}
	if c.grep != nil {
		var kept []string
		for _, l := range strings.Split(strings.TrimSuffix(got.body, "\n"), "\n") {
			if c.grep.MatchString(l) {
				kept = append(kept, l)
			}
		}
		require.Equal(t, want, strings.Join(kept, "\n"), "%s", line)
		return
	}
	if !c.include {
		require.Equal(t, want+"\n", got.body, "%s", line)
		return
	}
	head, wantBody, ok := strings.Cut(want, "\n\n")
	require.True(t, ok, "%s: -i output has headers, a blank line and a body", line)
	lines := strings.Split(head, "\n")
	require.Equal(t, lines[0], fmt.Sprintf("HTTP/1.1 %s", got.statusText()), "%s: status line", line)
	wantHeader := http.Header{}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ": ")
		require.True(t, ok, "%s: header line %q", line, l)
		wantHeader.Add(name, value)
	}
	require.NotEmpty(t, got.header.Get("Date"))
	wantHeader["Date"] = got.header["Date"] // the only value that differs
	require.Equal(t, wantHeader, got.header, "%s: headers", line)
	require.Equal(t, wantBody+"\n", got.body, "%s: body", line)
}

// statusText is the status as curl prints it after the protocol.
func (r reply) statusText() string {
	return fmt.Sprintf("%d %s", r.status, http.StatusText(r.status))
}

// noteBody records the identities and passwords of a form or JSON body.
func (s *service) noteBody(contentType, body string) {
	if contentType == "application/json" {
		var fields map[string]string
		require.NoError(s.t, json.Unmarshal([]byte(body), &fields))
		for _, v := range fields {
			s.note(v)
		}
		return
	}
	form, err := url.ParseQuery(body)
	require.NoError(s.t, err)
	for _, vs := range form {
		s.note(vs...)
	}
}
