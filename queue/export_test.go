package queue

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Jobs returns the queue's River jobs of kind (ExtractArgs{}.Kind() or
// EmbedArgs{}.Kind()) in every state: what tests wait on instead of
// sleeping.
func Jobs(ctx context.Context, q *Queue, kind string) ([]*rivertype.JobRow, error) {
	res, err := q.river.JobList(ctx, river.NewJobListParams().Kinds(kind).First(1000))
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}
