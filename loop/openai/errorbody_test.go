package openai

import (
	"testing"

	"github.com/hookbus/hookbus/loop/internal/modelhttp"
)

func TestParseError(t *testing.T) {
	for body, want := range map[string]modelhttp.BodyError{
		`{"error":{"message":"m","type":"requests","param":null,"code":"rate_limit_exceeded"}}`: {Type: "rate_limit_exceeded", Message: "m"},
		`{"error":{"message":"m","type":"server_error","param":null,"code":null}}`:              {Type: "server_error", Message: "m"},
		`{"error":{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}}`:     {Type: "insufficient_quota", Message: "m", Permanent: true},
		`{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`:     {Type: "BadRequestError", Message: "m"},
		`{"error":"model \"llama9\" not found, try pulling it first"}`:                          {Message: `model "llama9" not found, try pulling it first`},
		`<html>502</html>`: {},
	} {
		if got := parseError([]byte(body)); got != want {
			t.Errorf("parseError(%s) = %+v, want %+v", body, got, want)
		}
	}
}
