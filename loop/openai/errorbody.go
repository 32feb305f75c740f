package openai

import (
	"encoding/json"
	"strings"

	"github.com/hookbus/hookbus/loop/internal/modelhttp"
)

// apiError is the error object of OpenAI and of the compatible servers:
// {"error": {...}} (OpenAI, LiteLLM, Ollama), {"error": "text"}, or the
// object at the top level (vLLM: {"object": "error", "message": ...}). The
// code may be a string or a number.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseError reads an error body: Type is the code when there is one
// (rate_limit_exceeded, context_length_exceeded), else the type
// (server_error, invalid_request_error). insufficient_quota is permanent.
func parseError(body []byte) modelhttp.BodyError {
	var env struct {
		Error json.RawMessage `json:"error"`
		apiError
	}
	if json.Unmarshal(body, &env) != nil {
		return modelhttp.BodyError{}
	}
	e := env.apiError
	if len(env.Error) > 0 {
		var text string
		if json.Unmarshal(env.Error, &text) == nil {
			return modelhttp.BodyError{Message: text}
		}
		e = apiError{}
		_ = json.Unmarshal(env.Error, &e)
	}
	be := modelhttp.BodyError{Type: code(e.Code), Message: e.Message}
	if be.Type == "" || isNumber(be.Type) {
		be.Type = e.Type
	}
	be.Permanent = be.Type == "insufficient_quota" || e.Type == "insufficient_quota"
	return be
}

// code is a code given as a string or a number, "" for null.
func code(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func isNumber(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}
