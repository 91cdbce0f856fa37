package login_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// countingObserver counts admissions by limiter, policies and outcome, as
// a metrics exporter's observer does.
type countingObserver struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *countingObserver) ObserveAdmission(e app.Event) {
	var policies []string
	for i := range e.Size {
		p, _ := e.Policy(i)
		policies = append(policies, p.ID().String()+"/"+p.Scope().String())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[fmt.Sprintf("%s %s %s", e.Limiter, strings.Join(policies, "+"), e.Outcome)]++
}

// ServeHTTP writes the counts, one per line, sorted.
func (o *countingObserver) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var lines []string
	for k, n := range o.counts {
		lines = append(lines, fmt.Sprintf("%s %d\n", k, n))
	}
	slices.Sort(lines)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(lines, ""))
}

// TestExtensionPoints: what telemetry needs is a provider away. An
// observer provided into runlimit.observers sees every admission of the
// gate and of the shared quota, and a route provided into
// loginservice.routes is served beside /login: here a /metrics of
// counts by limiter, policy and outcome, none of which names a subject.
func TestExtensionPoints(t *testing.T) {
	t.Parallel()
	gateName := map[string]string{"memory": "memory", "postgres": "gate"}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			obs := &countingObserver{counts: map[string]int{}}
			clock := memory.NewManualClock()
			s := startOn(t, b.config(t, clock), listen(t), clock, b.exact, fx.Supply(obs),
				fx.Provide(
					fx.Annotate(func(o *countingObserver) app.Observer { return o },
						fx.ResultTags(`group:"`+runlimitfx.ObserversGroup+`"`)),
					fx.Annotate(func(o *countingObserver) login.Route {
						return login.Route{Pattern: "GET /metrics", Handler: o}
					}, fx.ResultTags(`group:"`+login.RoutesGroup+`"`)),
				))
			// Four wrong passwords from one network: the trial limit of 2
			// shadow-denies the last two, the identity limit of 3 denies
			// the last.
			for range 4 {
				s.login("127.0.0.2", login.DemoIdentity, "guess")
			}
			got := s.get("127.0.0.2", "/metrics")
			require.Equal(t, 200, got.status)
			gate, shared := gateName[b.name], b.name
			require.Equal(t, strings.Join([]string{
				gate + " login.gate/network allowed 4",
				gate + " login.trial/network allowed 2",
				gate + " login.trial/network shadow-denied 2",
				shared + " login/client+login/identity allowed 3",
				shared + " login/client+login/identity denied 1",
			}, "\n")+"\n", got.body)
			s.requireNothingSentIn("/metrics", got.body)
		})
	}
}
