package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// A ServeMux route limited per client network: two requests a minute.
// The third is answered 429 with the RateLimit fields and Retry-After.
func ExampleMiddleware() {
	clock := memory.NewManualClock() // frozen for a reproducible example; omit it in a service
	store, err := memory.New(memory.Config{MaxKeys: 10_000, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}

	perClient := domain.MustPolicy("api.items", "client", 2, time.Minute)
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: limiter,
		Hasher:  hasher,
		Limits:  []httplimit.Limit{{Policy: perClient}},
		Key:     httplimit.RemoteNetwork,
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "item %s\n", r.PathValue("id"))
	})))

	for i := range 3 {
		r := httptest.NewRequest("GET", "/items/7", nil)
		r.RemoteAddr = "192.0.2.10:50000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d %s", w.Code, w.Body)
		fmt.Println("  RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
		fmt.Println("  RateLimit:", w.Header().Get("RateLimit"))
		if ra := w.Header().Get("Retry-After"); ra != "" {
			fmt.Println("  Retry-After:", ra)
		}
		if i == 1 {
			clock.Advance(15 * time.Second)
		}
	}
	// Output:
	// 200 item 7
	//   RateLimit-Policy: "api.items/client";q=2;w=60
	//   RateLimit: "api.items/client";r=1;t=60
	// 200 item 7
	//   RateLimit-Policy: "api.items/client";q=2;w=60
	//   RateLimit: "api.items/client";r=0;t=60
	// 429 Too Many Requests
	//   RateLimit-Policy: "api.items/client";q=2;w=60
	//   RateLimit: "api.items/client";r=0;t=45
	//   Retry-After: 45
}

// A new signup limit watched in shadow mode before it is enforced: three a
// client an hour. The fourth signup is over the limit, but the limit only
// watches, so it reaches the handler, which finds the shadow denial in the
// context. The fields show r=0, and there is no Retry-After.
func ExampleMiddleware_shadow() {
	clock := memory.NewManualClock() // frozen for a reproducible example; omit it in a service
	store, err := memory.New(memory.Config{MaxKeys: 10_000, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}

	// WithMode fails only for a mode other than Enforce and Shadow.
	signup, err := domain.MustPolicy("auth.signup", "client", 3, time.Hour).WithMode(domain.Shadow)
	if err != nil {
		panic(err)
	}
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: limiter,
		Hasher:  hasher,
		Limits:  []httplimit.Limit{{Policy: signup}},
		Key:     httplimit.RemoteNetwork,
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /signup", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if res, ok := httplimit.FromContext(r.Context()); ok {
			if i, _, shadowed := res.ShadowDenied(); shadowed {
				fmt.Println("  would have been refused by", res.Name(i)) // log or count it
			}
		}
		w.WriteHeader(http.StatusCreated)
	})))

	for range 4 {
		r := httptest.NewRequest("POST", "/signup", nil)
		r.RemoteAddr = "192.0.2.10:50000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("RateLimit"))
		if ra := w.Header().Get("Retry-After"); ra != "" {
			fmt.Println("  Retry-After:", ra)
		}
	}
	// Output:
	// 201 "auth.signup/client";r=2;t=3600
	// 201 "auth.signup/client";r=1;t=3600
	// 201 "auth.signup/client";r=0;t=3600
	//   would have been refused by auth.signup/client
	// 201 "auth.signup/client";r=0;t=3600
}

// A login: the middleware counts the client network before the body is
// read; the handler parses the form and checks the client and the
// normalized identity as one batch. Three spellings of one identity share
// its quota of two. The identity's limit is private: an admitted attempt
// says nothing of it, so that no client can watch the attempts made on an
// account; the refusal shows r=0 and when to retry.
func ExampleGuard() {
	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 10_000, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		panic(err)
	}
	hasher, err := domain.NewKeyHasher([]byte("example-only-secret-of-32-bytes!"))
	if err != nil {
		panic(err)
	}

	network := domain.MustPolicy("auth.login", "network", 100, time.Minute)
	client := domain.MustPolicy("auth.login", "client", 40, time.Minute)
	identity := domain.MustPolicy("auth.login", "identity", 2, time.Minute)
	m, err := httplimit.NewMiddleware(httplimit.Config{
		Limiter: limiter, Hasher: hasher, Key: httplimit.RemoteNetwork,
		Limits: []httplimit.Limit{{Policy: network}},
	})
	if err != nil {
		panic(err)
	}
	guard, err := httplimit.NewGuard(httplimit.Config{
		Limiter: limiter, Hasher: hasher,
		// The identity's count is not the client's to read: Private keeps it
		// out of the fields unless it refuses the attempt.
		Limits: []httplimit.Limit{{Policy: client}, {Policy: identity, Private: true}},
	})
	if err != nil {
		panic(err)
	}
	login := func(w http.ResponseWriter, r *http.Request) {
		id, err := httplimit.AppendIdentity(nil, r.PostFormValue("email"))
		if err != nil {
			http.Error(w, "invalid email", http.StatusBadRequest)
			return
		}
		addr, err := httplimit.RemoteNetwork(nil, r)
		if err != nil {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		if _, ok := guard.Admit(w, r, addr, id); !ok {
			return // the guard wrote 429 or 503
		}
		// ... verify the password ...
		w.WriteHeader(http.StatusNoContent)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", m.Handler(http.HandlerFunc(login)))

	for i, email := range []string{"Alice@Example.com", " alice@example.com", "ALICE@EXAMPLE.COM"} {
		form := url.Values{"email": {email}, "password": {"guess"}}.Encode()
		r := httptest.NewRequest("POST", "/login", strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = fmt.Sprintf("192.0.2.%d:50000", 10+i)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("RateLimit"))
		if ra := w.Header().Get("Retry-After"); ra != "" {
			fmt.Println("Retry-After:", ra)
		}
		clock.Advance(10 * time.Second)
	}
	// Output:
	// 204 "auth.login/client";r=39;t=60, "auth.login/network";r=99;t=60
	// 204 "auth.login/client";r=39;t=60, "auth.login/network";r=99;t=60
	// 429 "auth.login/identity";r=0;t=40, "auth.login/network";r=99;t=60
	// Retry-After: 40
}
