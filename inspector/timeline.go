package inspector

import (
	"slices"
	"strconv"
	"time"

	"github.com/sgam-dev/sgam"
)

// timeline is one attribute of a subject drawn on both time axes: valid
// time across, one bar per row believed at the chosen transaction time
// (tombstones marked), and beneath them, faded, the rows retracted by
// then. Rows recorded after it are not drawn: nobody believed them yet.
type timeline struct {
	Attribute     string
	Width, Height int
	Bars          []bar
	Faded         []bar
	// Split is the y of the line between believed and retracted rows (0:
	// none retracted).
	Split int
	Axis  int // the y of the valid-time axis
	Ticks []tick
	Rows  []historyRow
}

type bar struct {
	X, Y, W, H int
	TextX      int
	Label      string // the value, when it fits
	Title      string // the row, in words
	Class      string // believed, tombstone, retracted
	Open       bool   // valid to now and on
}

type tick struct {
	X, Y  int
	Label string
}

// historyRow is a row of the history table, with both windows.
type historyRow struct {
	sgam.Fact
	// State is the row as believed at the chosen instant: believed,
	// retracted (by then), or later (recorded after it).
	State string
}

const (
	timelineWidth = 760
	margin        = 8
	lane          = 18
	barHeight     = 14
	axisHeight    = 26
	openArrow     = 10 // px an open window runs past the last instant
)

func drawTimeline(attribute string, rows []sgam.Fact, now, knownAt time.Time) timeline {
	tl := timeline{Attribute: attribute, Width: timelineWidth}
	var believed, faded []sgam.Fact
	for _, f := range rows {
		state := "later"
		switch {
		case f.RecordedAt.After(knownAt):
		case f.RetractedAt != nil && !f.RetractedAt.After(knownAt):
			state = "retracted"
			faded = append(faded, f)
		default:
			state = "believed"
			believed = append(believed, f)
		}
		tl.Rows = append(tl.Rows, historyRow{Fact: f, State: state})
	}
	// The valid-time range: every drawn row's window, and now.
	lo, hi := now, now
	for _, f := range append(slices.Clone(believed), faded...) {
		lo = minTime(lo, f.ValidFrom)
		if f.ValidTo != nil {
			hi = maxTime(hi, *f.ValidTo)
		}
		hi = maxTime(hi, f.ValidFrom)
	}
	span := hi.Sub(lo)
	if span <= 0 {
		span = time.Hour
		lo = lo.Add(-span / 2)
	}
	inner := timelineWidth - 2*margin - openArrow
	x := func(t time.Time) int { return margin + int(float64(inner)*float64(t.Sub(lo))/float64(span)) }
	draw := func(f sgam.Fact, y int, class string) bar {
		b := bar{X: x(f.ValidFrom), Y: y, H: barHeight, Class: class}
		end := margin + inner + openArrow
		if f.ValidTo != nil {
			end = x(*f.ValidTo)
		} else {
			b.Open = true
		}
		b.W = max(end-b.X, 3)
		b.TextX = b.X + 4
		if f.Tombstone {
			b.Class = "tombstone"
			if class == "retracted" {
				b.Class = "retracted tombstone"
			}
		}
		label := valueText(f.Value)
		if b.W >= 8*len([]rune(label))+8 {
			b.Label = label
		}
		b.Title = label + " valid " + sgam.FormatTime(f.ValidFrom) + " to " + timeOr(f.ValidTo, "open") +
			", recorded " + sgam.FormatTime(f.RecordedAt) + ", retracted " + timeOr(f.RetractedAt, "never") + " (fact " + itoa(f.ID) + ")"
		return b
	}
	byStart := func(a, b sgam.Fact) int { return a.ValidFrom.Compare(b.ValidFrom) }
	slices.SortStableFunc(believed, byStart)
	slices.SortStableFunc(faded, byStart)
	y := 4
	for _, f := range believed {
		tl.Bars = append(tl.Bars, draw(f, y, "believed"))
		y += lane
	}
	if len(faded) > 0 {
		tl.Split = y + 1
		y += 6
		for _, f := range faded {
			tl.Faded = append(tl.Faded, draw(f, y, "retracted"))
			y += lane
		}
	}
	tl.Axis = y + 4
	for i := 0; i <= 4; i++ {
		t := lo.Add(time.Duration(float64(span) * float64(i) / 4))
		tl.Ticks = append(tl.Ticks, tick{X: x(t), Y: tl.Axis + 16, Label: t.UTC().Format("2006-01-02")})
	}
	for i := range tl.Ticks {
		tl.Ticks[i].X = min(max(tl.Ticks[i].X, margin+30), timelineWidth-margin-40)
	}
	tl.Height = tl.Axis + axisHeight
	return tl
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func timeOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return sgam.FormatTime(*t)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
