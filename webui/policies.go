package webui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/bus/policies"
)

// Policies is what the page reads of the stored policies
// (*policies.Store): each policy, and the last test of each
// (observer policy test).
type Policies interface {
	List(ctx context.Context) ([]policies.Record, []error, error)
	GetTest(ctx context.Context, name string) (json.RawMessage, error)
}

// PoliciesView is the reply of GET /api/policies: every stored policy and
// every policy whose decisions the window records, sorted by name.
type PoliciesView struct {
	Policies []*PolicyView `json:"policies"`
	// Unreadable are the stored entries that could not be read, each
	// with why.
	Unreadable []string `json:"unreadable,omitempty"`
	// NoStore is set when the page has no policy store (Config.Policies)
	// or could not read it: the view shows only what the record holds.
	NoStore   string `json:"no_store,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// PolicyView is one policy on the page.
type PolicyView struct {
	Name string `json:"name"`
	// Stored is set for a policy the store holds now (Version, Mode,
	// Rollout, AppliedBy and AppliedAt are its); a policy only in the
	// record was deleted since.
	Stored    bool      `json:"stored"`
	Version   string    `json:"version,omitempty"`
	Mode      string    `json:"mode,omitempty"`
	Rollout   int       `json:"rollout"`
	AppliedBy string    `json:"applied_by,omitempty"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
	// Hits are its recorded decisions in the window: enforced, and would-be
	// hits (audit or warn mode, outside the rollout); nil: none.
	Hits *audit.PolicyHitStats `json:"hits,omitempty"`
	// Test is its last test against history (observer policy test): nil
	// when it was never tested.
	Test *policytest.Report `json:"test,omitempty"`
}

// policiesView reads the policies view of GET /api/policies: the store's
// policies and their last tests, and the window's hits.
func (s *Server) policiesView(r *http.Request) (*PoliciesView, error) {
	f, err := filterOf(r)
	if err != nil {
		return nil, err
	}
	f.Stages = audit.PolicyHitsStages
	var hits audit.PolicyHits
	truncated, err := s.scan(r.Context(), f, hits.Add)
	if err != nil {
		return nil, err
	}
	v := &PoliciesView{Policies: []*PolicyView{}, Truncated: truncated}
	byName := map[string]*PolicyView{}
	if s.cfg.Policies == nil {
		v.NoStore = "this page reads no policy store"
	} else {
		s.storedPolicies(r.Context(), v, byName)
	}
	for _, n := range hits.Names() {
		if byName[n] == nil {
			byName[n] = &PolicyView{Name: n}
			v.Policies = append(v.Policies, byName[n])
		}
	}
	for _, p := range v.Policies {
		p.Hits = hits.Of(p.Name)
	}
	slices.SortFunc(v.Policies, func(a, b *PolicyView) int { return strings.Compare(a.Name, b.Name) })
	return v, nil
}

// storedPolicies adds the store's policies, with their last tests, to v.
func (s *Server) storedPolicies(ctx context.Context, v *PoliciesView, byName map[string]*PolicyView) {
	recs, skipped, err := s.cfg.Policies.List(ctx)
	if err != nil {
		s.log.Warn("webui: the policy store could not be read; the policies view shows only the record's hits", "err", err)
		v.NoStore = "the policy store could not be read: " + errorText(err)
		return
	}
	for _, e := range skipped {
		v.Unreadable = append(v.Unreadable, errorText(e))
	}
	for _, rec := range recs {
		pv := &PolicyView{Name: rec.Name, Stored: true, Version: rec.Version, AppliedBy: rec.AppliedBy.String(), AppliedAt: rec.AppliedAt}
		if p, err := rec.Policy(); err == nil {
			pv.Mode, pv.Rollout = string(p.Spec.Mode), p.Spec.Rollout
		} else {
			v.Unreadable = append(v.Unreadable, errorText(err))
		}
		raw, err := s.cfg.Policies.GetTest(ctx, rec.Name)
		switch {
		case errors.Is(err, policies.ErrNotFound):
		case err != nil:
			s.log.Warn("webui: a policy's last test could not be read", "policy", rec.Name, "err", err)
		default:
			var t policytest.Report
			if err := json.Unmarshal(raw, &t); err != nil {
				v.Unreadable = append(v.Unreadable, "the last test of policy "+rec.Name+": "+err.Error())
			} else {
				pv.Test = &t
			}
		}
		byName[rec.Name] = pv
		v.Policies = append(v.Policies, pv)
	}
}
