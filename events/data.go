package events

import (
	"fmt"
	"reflect"
)

// Data decodes e's data as T, the payload type of e's stage:
// Data[ToolBefore](e) for a tool.before, Data[HookFailed](e) for a
// hook.failed (the stage table pairs each stage with its type). It returns
// an error wrapping ErrPayload that names the event when T is not its
// stage's payload type, and, as DecodeData, when the data does not decode
// or is stored elsewhere and was not fetched; the value is then what could
// be decoded.
func Data[T any](e *Event) (T, error) {
	var v T
	info, ok := e.Stage.info()
	if want := reflect.TypeFor[T](); !ok || info.data != want {
		return v, fmt.Errorf("%w: event %s (%s) does not carry a %s", ErrPayload, e.ID, e.Stage, want)
	}
	err := e.DecodeData(&v)
	return v, err
}
