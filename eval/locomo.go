package eval

import (
	"fmt"
	"time"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/recall"
)

// LoCoMoK is the k of evidence recall@k in a LoCoMo scenario.
const LoCoMoK = 10

// FromLoCoMo makes a scenario of the LoCoMo benchmark, so that its
// retrieval figures come through the same report as every scenario's:
// each conversation a tenant (as `sgam eval locomo` captures it), each
// turn an episode that is not extracted, each question of categories 1-4
// an ask that must cite its evidence turns among the first LoCoMoK.
// `sgam eval locomo` gives the same data by category and at more k.
func FromLoCoMo(path string, convs []locomo.Conversation) *Scenario {
	sc := &Scenario{Name: "locomo", Path: path, Description: "LoCoMo: evidence recall@10 of recall over long conversations",
		Start: Instant{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Tenants: map[string]*TenantSpec{}, tick: time.Millisecond}
	for _, c := range convs {
		tenant := locomo.TenantOf(c)
		sc.Tenants[tenant] = &TenantSpec{}
		for _, sess := range c.Sessions {
			for i, t := range sess.Turns {
				at := Instant{sess.At.Add(time.Duration(i) * time.Second)}
				sc.Steps = append(sc.Steps, &Step{Kind: StepEpisode, When: "never", Episode: &EpisodeStep{
					Tenant: tenant, EpisodeID: t.DiaID, Session: fmt.Sprintf("session_%d", sess.N), Kind: sgam.KindMessage,
					Content: locomo.Content(t), OccurredAt: &at}})
			}
		}
	}
	for _, c := range convs {
		for _, q := range c.Questions {
			if q.Category < 1 || q.Category > 4 {
				continue
			}
			sc.Steps = append(sc.Steps, &Step{Kind: StepAsk, Ask: &Ask{Tenant: locomo.TenantOf(c), Question: q.Text,
				EvidenceLimit: LoCoMoK, Budget: recall.MaxBudget, Expect: Expect{Evidence: q.Evidence}}})
		}
	}
	return sc
}
