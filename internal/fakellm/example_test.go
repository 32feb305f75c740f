package fakellm_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hookbus/hookbus/internal/fakellm"
)

// A script of one step answers one request; the server keeps what it was
// sent.
func Example() {
	s, err := fakellm.Parse([]byte(`{"path": "/v1/messages", "steps": [
	  {"status": 529, "headers": {"retry-after": "2"},
	   "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}]}`))
	if err != nil {
		panic(err)
	}
	srv := fakellm.New(s)
	defer srv.Close()

	res, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5"}`))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Header.Get("Retry-After"), string(body))
	fmt.Println(string(srv.Requests()[0].Body), srv.Err())
	// Output:
	// 529 2 {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
	// {"model":"claude-sonnet-4-5"} <nil>
}
