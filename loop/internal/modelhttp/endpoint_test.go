package modelhttp

import (
	"errors"
	"strings"
	"testing"
)

var errInvalid = errors.New("invalid config")

func TestEndpointResolve(t *testing.T) {
	ep := Endpoint{BaseURL: "https://api.example.com/v1", BaseURLEnv: "TEST_MODEL_BASE_URL", APIKeyEnv: "TEST_MODEL_API_KEY", Invalid: errInvalid}
	for _, tc := range []struct {
		name             string
		env              map[string]string
		model            string
		baseURL, apiKey  string
		maxTokens        int
		wantURL, wantKey string
		wantErr          string // what the error says after errInvalid; "" for none
	}{
		{name: "config wins", model: "m", baseURL: "http://local/v1", apiKey: "k",
			env: map[string]string{"TEST_MODEL_BASE_URL": "http://env/v1", "TEST_MODEL_API_KEY": "env-key"}, wantURL: "http://local/v1", wantKey: "k"},
		{name: "environment", model: "m", env: map[string]string{"TEST_MODEL_BASE_URL": "http://env/v1", "TEST_MODEL_API_KEY": "env-key"},
			wantURL: "http://env/v1", wantKey: "env-key"},
		{name: "own endpoint by default", model: "m", env: map[string]string{"TEST_MODEL_API_KEY": "env-key"}, wantURL: "https://api.example.com/v1", wantKey: "env-key"},
		{name: "no key elsewhere", model: "m", baseURL: "http://ollama:11434/v1", wantURL: "http://ollama:11434/v1"},
		{name: "no model", model: " ", wantErr: "no model name"},
		{name: "no key for the own endpoint", model: "m", wantErr: "no API key for https://api.example.com/v1 (set TEST_MODEL_API_KEY)"},
		{name: "no key for the own endpoint with a slash", model: "m", baseURL: "https://api.example.com/v1/", wantErr: "no API key"},
		{name: "negative MaxTokens", model: "m", apiKey: "k", maxTokens: -1, wantErr: "MaxTokens -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEST_MODEL_BASE_URL", tc.env["TEST_MODEL_BASE_URL"])
			t.Setenv("TEST_MODEL_API_KEY", tc.env["TEST_MODEL_API_KEY"])
			url, key := tc.baseURL, tc.apiKey
			err := ep.Resolve(tc.model, &url, &key, tc.maxTokens)
			if tc.wantErr != "" {
				if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %v saying %q", err, errInvalid, tc.wantErr)
				}
				return
			}
			if err != nil || url != tc.wantURL || key != tc.wantKey {
				t.Fatalf("got %q %q %v, want %q %q", url, key, err, tc.wantURL, tc.wantKey)
			}
		})
	}
}
