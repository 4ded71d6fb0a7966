package inspector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

func TestTimelineAxes(t *testing.T) {
	d := func(day int) time.Time { return time.Date(2026, 6, day, 0, 0, 0, 0, time.UTC) }
	p := func(t time.Time) *time.Time { return &t }
	rows := []sgam.Fact{
		{ID: 1, Value: []byte(`"a"`), ValidFrom: d(1), RecordedAt: d(1), RetractedAt: p(d(3))}, // open, then retracted
		{ID: 2, Value: []byte(`"a"`), ValidFrom: d(1), ValidTo: p(d(3)), RecordedAt: d(3)},
		{ID: 3, Value: []byte(`null`), Tombstone: true, ValidFrom: d(3), RecordedAt: d(3)}, // a retraction
		{ID: 4, Value: []byte(`"b"`), ValidFrom: d(5), RecordedAt: d(6)},
	}
	now := d(10)
	tl := drawTimeline("x", rows, now, now)
	require.Len(t, tl.Bars, 3)
	require.Len(t, tl.Faded, 1)
	require.Equal(t, "tombstone", tl.Bars[1].Class, "a tombstone is drawn, marked")
	require.True(t, tl.Bars[2].Open)
	require.Less(t, tl.Bars[0].X, tl.Bars[1].X, "valid time across")
	require.Greater(t, tl.Faded[0].Y, tl.Split, "retracted rows beneath the line")
	for _, b := range append(tl.Bars, tl.Faded...) {
		require.GreaterOrEqual(t, b.X, margin)
		require.LessOrEqual(t, b.X+b.W, timelineWidth)
	}

	// As believed on June 2: only the first row, open, believed then.
	tl = drawTimeline("x", rows, now, d(2))
	require.Len(t, tl.Bars, 1)
	require.Empty(t, tl.Faded)
	require.Equal(t, "believed", tl.Bars[0].Class)
	states := map[int64]string{}
	for _, r := range tl.Rows {
		states[r.ID] = r.State
	}
	require.Equal(t, map[int64]string{1: "believed", 2: "later", 3: "later", 4: "later"}, states)

	// No rows at all still draws an axis.
	tl = drawTimeline("x", nil, now, now)
	require.Empty(t, tl.Bars)
	require.Len(t, tl.Ticks, 5)
}
