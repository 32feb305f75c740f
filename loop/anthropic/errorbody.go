package anthropic

import (
	"encoding/json"

	"github.com/hookbus/hookbus/loop/internal/modelhttp"
)

// parseError reads an error body,
// {"type":"error","error":{"type":"overloaded_error","message":"..."}}. A
// rate_limit_error whose details say the spend limit is reached
// (enforced_spend_limit_reached) is permanent.
func parseError(body []byte) modelhttp.BodyError {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return modelhttp.BodyError{}
	}
	e := env.Error
	return modelhttp.BodyError{Type: e.Type, Message: e.Message, Permanent: e.Details.ErrorCode == "enforced_spend_limit_reached"}
}
