package tools

import (
	"fmt"
	"math"
	"strconv"
)

// Evaluate computes an arithmetic expression: numbers, + - * / %, unary
// minus and parentheses, with the usual precedence. Division by zero and
// malformed input are errors wrapping ErrArguments.
func Evaluate(expr string) (float64, error) {
	p := &calcParser{s: expr}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i != len(p.s) {
		return 0, fmt.Errorf("%w: unexpected %q at offset %d in %q", ErrArguments, p.s[p.i:], p.i, expr)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: %q has no finite value", ErrArguments, expr)
	}
	return v, nil
}

type calcParser struct {
	s     string
	i     int
	depth int
}

func (p *calcParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *calcParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *calcParser) sum() (float64, error) {
	v, err := p.product()
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '+', '-':
			op := p.s[p.i]
			p.i++
			r, err := p.product()
			if err != nil {
				return 0, err
			}
			if op == '+' {
				v += r
			} else {
				v -= r
			}
		default:
			return v, nil
		}
	}
}

func (p *calcParser) product() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '*', '/', '%':
			op := p.s[p.i]
			p.i++
			r, err := p.unary()
			if err != nil {
				return 0, err
			}
			switch op {
			case '*':
				v *= r
			case '/':
				if r == 0 {
					return 0, fmt.Errorf("%w: division by zero in %q", ErrArguments, p.s)
				}
				v /= r
			case '%':
				if r == 0 {
					return 0, fmt.Errorf("%w: modulo by zero in %q", ErrArguments, p.s)
				}
				v = math.Mod(v, r)
			}
		default:
			return v, nil
		}
	}
}

func (p *calcParser) unary() (float64, error) {
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		return -v, err
	case '+':
		p.i++
		return p.unary()
	case '(':
		p.i++
		p.depth++
		if p.depth > 64 {
			return 0, fmt.Errorf("%w: parentheses nested too deep in %q", ErrArguments, p.s)
		}
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("%w: missing ')' in %q", ErrArguments, p.s)
		}
		p.i++
		p.depth--
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
		p.i++
	}
	if start == p.i {
		if p.i >= len(p.s) {
			return 0, fmt.Errorf("%w: expression %q ends early", ErrArguments, p.s)
		}
		return 0, fmt.Errorf("%w: unexpected %q at offset %d in %q", ErrArguments, p.s[p.i], p.i, p.s)
	}
	v, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q in %q", ErrArguments, p.s[start:p.i], p.s)
	}
	return v, nil
}
