package interceptors_test

import (
	"testing"

	"github.com/hookbus/hookbus/interceptors/interceptorstest"
)

// TestConformance runs the conformance suite on in-process interceptors.
func TestConformance(t *testing.T) {
	interceptorstest.Run(t, interceptorstest.Identity, interceptorstest.Features{})
}
