package login_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// Run the service in-process on a listener of your own, as its tests do.
// A manual clock keeps the example's output exact; a service leaves Clock
// unset.
func ExampleOptions() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	app := fx.New(
		fx.NopLogger, // quiet for the example
		login.Options(login.Config{
			Runtime: wiring.Config{
				Memory:    memory.Config{Clock: memory.NewManualClock()},
				KeySecret: wiring.NewSecret("example-only-secret-of-32-bytes!"),
			},
			Logger: slog.New(slog.DiscardHandler),
		}, ln),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		ln.Close()
		log.Fatal(err)
	}
	defer app.Stop(ctx)

	for _, password := range []string{"guess", login.DemoPassword} {
		form := url.Values{"identity": {login.DemoIdentity}, "password": {password}}
		resp, err := http.PostForm("http://"+ln.Addr().String()+"/login", form)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
		fmt.Println(resp.Header.Get("RateLimit"))
	}
	// Output:
	// 401 Unauthorized
	// "login.trial/network";r=9;t=60, "login/client";r=19;t=60, "login.gate/network";r=59;t=60
	// 200 OK
	// "login.trial/network";r=8;t=60, "login/client";r=18;t=60, "login.gate/network";r=58;t=60
}
