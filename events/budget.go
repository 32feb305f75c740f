package events

import (
	"cmp"
	"fmt"
	"math"
)

// Budget bounds what a run may use. A zero field bounds nothing. A run that
// reaches a bound ends with run.completed reason cost_limit, its detail
// naming the bound.
type Budget struct {
	// MaxInputTokens bounds the input tokens of all the run's model calls.
	MaxInputTokens int `json:"max_input_tokens,omitempty"`
	// MaxOutputTokens bounds their output tokens.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// MaxCostUSD bounds their cost, in US dollars, at the model's prices.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
}

// Validate reports a negative or non-finite bound.
func (b Budget) Validate() error {
	if b.MaxInputTokens < 0 || b.MaxOutputTokens < 0 {
		return fmt.Errorf("%w: budget: negative token bound", ErrPayload)
	}
	if b.MaxCostUSD < 0 || math.IsNaN(b.MaxCostUSD) || math.IsInf(b.MaxCostUSD, 0) {
		return fmt.Errorf("%w: budget: max cost %v is not a non-negative number", ErrPayload, b.MaxCostUSD)
	}
	return nil
}

// Override returns b with the non-zero fields of o (nil: b).
func (b Budget) Override(o *Budget) Budget {
	if o == nil {
		return b
	}
	b.MaxInputTokens = cmp.Or(o.MaxInputTokens, b.MaxInputTokens)
	b.MaxOutputTokens = cmp.Or(o.MaxOutputTokens, b.MaxOutputTokens)
	b.MaxCostUSD = cmp.Or(o.MaxCostUSD, b.MaxCostUSD)
	return b
}

// Exceeded names the first bound u reached ("" when none): "max_input_tokens
// 1200/1000", ...
func (b Budget) Exceeded(u Usage) string {
	switch {
	case b.MaxInputTokens > 0 && u.InputTokens >= b.MaxInputTokens:
		return fmt.Sprintf("max_input_tokens: used %d of %d", u.InputTokens, b.MaxInputTokens)
	case b.MaxOutputTokens > 0 && u.OutputTokens >= b.MaxOutputTokens:
		return fmt.Sprintf("max_output_tokens: used %d of %d", u.OutputTokens, b.MaxOutputTokens)
	case b.MaxCostUSD > 0 && u.CostUSD >= b.MaxCostUSD:
		return fmt.Sprintf("max_cost_usd: used $%.6f of $%.6f", u.CostUSD, b.MaxCostUSD)
	}
	return ""
}

// Prices is what a model costs, in US dollars per million tokens.
type Prices struct {
	InputPerMTok  float64 `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok" yaml:"output_per_mtok"`
}

// Cost is what u costs at p's prices (0 for nil p).
func (p *Prices) Cost(u Usage) float64 {
	if p == nil {
		return 0
	}
	return (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}
