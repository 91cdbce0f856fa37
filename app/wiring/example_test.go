package wiring_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
)

// Open a memory-backed Runlimit without fx, and allow two password resets
// an hour per account.
func ExampleOpen() {
	ctx := context.Background()
	runtime, err := wiring.Open(ctx, wiring.Config{
		Memory: memory.Config{MaxKeys: 50_000, Shards: 64},
		// In a service the secret comes from secret storage (or use
		// KeySecretFunc); every replica sharing a store uses the same one.
		KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		Logger:    slog.New(slog.DiscardHandler), // quiet for the example
	})
	if err != nil {
		log.Fatal(err)
	}
	defer runtime.Close(ctx)

	policy, err := domain.ParsePolicy("account.password-reset", "account", 2, time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	key := runtime.KeyHasher().KeyString(policy, "account-42")
	for attempt := 1; attempt <= 3; attempt++ {
		decision, err := runtime.Limiter().Check(ctx, domain.NewCheck(policy, key))
		if err != nil {
			log.Fatal(err) // fail closed
		}
		fmt.Printf("attempt %d permitted: %t\n", attempt, decision.PermitsRequest())
	}
	// Output:
	// attempt 1 permitted: true
	// attempt 2 permitted: true
	// attempt 3 permitted: false
}

// Configure Runlimit from RUNLIMIT_* environment variables, as a container
// platform would set them.
func ExampleConfigFromEnv() {
	os.Setenv("RUNLIMIT_MEMORY_MAX_KEYS", "50000")
	os.Setenv("RUNLIMIT_MEMORY_SHARDS", "64")
	os.Setenv("RUNLIMIT_CLEANUP_INTERVAL", "30s")
	os.Setenv("RUNLIMIT_KEY_SECRET", "example-only-secret-of-32-bytes!")

	cfg, err := wiring.ConfigFromEnv()
	if err != nil {
		log.Fatal(err) // names each unusable variable, never its value
	}
	fmt.Println(cfg.Memory.MaxKeys, cfg.Memory.Shards, cfg.CleanupInterval, cfg.KeySecret)

	os.Setenv("RUNLIMIT_MEMORY_SHARDS", "many")
	_, err = wiring.ConfigFromEnv()
	fmt.Println(err)
	// Output:
	// 50000 64 30s [redacted]
	// runlimit: invalid environment: RUNLIMIT_MEMORY_SHARDS is not a whole number
}

// Serve a readiness probe from Runtime.Ready: 200 while the Runtime runs and
// its stores answer, 503 otherwise (here, once it is closed).
func ExampleRuntime_Ready() {
	ctx := context.Background()
	runtime, err := wiring.Open(ctx, wiring.Config{
		Memory:    memory.Config{MaxKeys: 50_000},
		KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
		Logger:    slog.New(slog.DiscardHandler), // quiet for the example
	})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := runtime.Ready(r.Context()); err != nil {
			// The error names the store, never a secret; still, keep
			// details for the logs.
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	probe := func() {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		fmt.Print(w.Code, " ", w.Body.String())
	}

	probe()
	runtime.Close(ctx)
	probe()
	// Output:
	// 200 ready
	// 503 not ready
}
