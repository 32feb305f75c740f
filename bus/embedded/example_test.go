package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hookbus/hookbus/bus/embedded"
)

// A server on a store directory, reached in-process; a second server on the
// same store is refused while the first runs.
func ExampleStart() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hookbus-embedded")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	fmt.Println("connected:", nc.IsConnected(), "listening:", srv.ClientURL() != "")

	_, err = embedded.Start(ctx, embedded.Config{StoreDir: dir})
	fmt.Println(err != nil && errors.Is(err, embedded.ErrStoreLocked))
	// Output:
	// connected: true listening: false
	// true
}
