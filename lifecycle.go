package sgam

// Receipt kinds: what a Forget or an expiry deleted.
const (
	ReceiptSubject = "subject"
	ReceiptEpisode = "episode"
	ReceiptTenant  = "tenant"
	ReceiptExpire  = "expire"
)

// DefaultActor names who asked for a Forget that names no one.
const DefaultActor = "sgam"

// System actors: what keeps a fact row that has no source episode, and who
// signs an expiry's receipts.
const (
	ActorMigration = "migration" // migrated from a row that had none
	ActorRetention = "retention" // its attribute's retention outlived its episodes
)

// Check validates a forget request and returns it with the actor
// defaulted, and the kind of receipt it will get.
func (r ForgetRequest) Check() (ForgetRequest, string, error) {
	if err := CheckTenant(r.Tenant); err != nil {
		return r, "", err
	}
	if r.Actor == "" {
		r.Actor = DefaultActor
	}
	if err := checkIdentifier("actor", r.Actor, maxAttributeBytes); err != nil {
		return r, "", err
	}
	var kind string
	for _, c := range []struct {
		set         bool
		kind, field string
	}{{r.Subject != "", ReceiptSubject, "subject"}, {r.Episode != "", ReceiptEpisode, "episode"}, {r.All, ReceiptTenant, "all"}} {
		if !c.set {
			continue
		}
		if kind != "" {
			return r, "", Errorf(Invalid, c.field, "forget one thing at a time: a subject, an episode, or the whole tenant (all), not both %s and %s", kind, c.field)
		}
		kind = c.kind
	}
	switch kind {
	case "":
		return r, "", Errorf(Invalid, "subject", "name what to forget: a subject, an episode, or the whole tenant (all)")
	case ReceiptSubject:
		if err := CheckSubject(r.Subject); err != nil {
			return r, "", err
		}
	case ReceiptEpisode:
		if err := CheckEpisodeID("episode", r.Episode); err != nil {
			return r, "", err
		}
	}
	return r, kind, nil
}

// CheckRetentionClass validates the name of a retention class, field naming
// it in the error: an identifier, like an attribute's name.
func CheckRetentionClass(field, class string) error {
	return checkIdentifier(field, class, maxAttributeBytes)
}
