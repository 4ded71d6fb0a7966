package locomo

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const dataPath = "../../../shared/data/locomo/locomo10.json"

// TestRealData checks the loader against the released file and documents its
// figures. The file has three evidence ids of categories 1-4 that name no
// turn: conv-42 D10:19 and conv-47 D4:36 (past the session's last turn) and
// conv-50 D30:05 (meaning D30:5, kept verbatim). Two more are dropped as
// malformed: "D" (conv-42) and "D:11:26" (conv-43).
func TestRealData(t *testing.T) {
	if _, err := os.Stat(dataPath); os.IsNotExist(err) {
		t.Skip("no data at", dataPath)
	}
	convs, err := Load(dataPath)
	require.NoError(t, err)
	require.Len(t, convs, 10)

	// The raw evidence, to show that an id not found is the data's own token.
	raw, err := os.ReadFile(dataPath)
	require.NoError(t, err)
	var rawSamples []struct {
		QA []struct {
			Evidence []string `json:"evidence"`
		} `json:"qa"`
	}
	require.NoError(t, json.Unmarshal(raw, &rawSamples))

	perCat := map[int]int{}
	questions, sessions, turns, evidence, missing := 0, 0, 0, 0, 0
	for ci, c := range convs {
		require.NotEmpty(t, c.SpeakerA)
		require.NotEmpty(t, c.SpeakerB)
		exists := map[string]bool{}
		for i, s := range c.Sessions {
			require.False(t, s.At.IsZero(), "%s session %d has no time", c.ID, s.N)
			require.Equal(t, time.UTC, s.At.Location())
			require.NotEmpty(t, s.Turns)
			if i > 0 {
				require.Less(t, c.Sessions[i-1].N, s.N, "%s: sessions out of order", c.ID)
			}
			for _, tu := range s.Turns {
				n, ok := SessionOf(tu.DiaID)
				require.True(t, ok)
				require.Equal(t, s.N, n, "%s: turn %s filed under session %d", c.ID, tu.DiaID, s.N)
				exists[tu.DiaID] = true
			}
			sessions++
			turns += len(s.Turns)
		}
		require.Len(t, c.Questions, len(rawSamples[ci].QA))
		for qi, q := range c.Questions {
			questions++
			perCat[q.Category]++
			if q.Category == 5 {
				continue
			}
			for _, id := range q.Evidence {
				evidence++
				if exists[id] {
					continue
				}
				missing++
				// Not found must not be our doing: the id must appear as a
				// whole token in the question's raw evidence.
				tokens := strings.FieldsFunc(strings.Join(rawSamples[ci].QA[qi].Evidence, " "),
					func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
				require.Contains(t, tokens, id)
				t.Logf("%s category %d: evidence %s names no turn (q: %s)", c.ID, q.Category, id, q.Text)
			}
		}
	}
	require.Equal(t, 1986, questions)
	require.Equal(t, 446, perCat[5])
	require.Equal(t, 1540, questions-perCat[5])
	t.Logf("conversations %d, sessions with turns %d, turns %d", len(convs), sessions, turns)
	t.Logf("questions %d: cat1 %d, cat2 %d, cat3 %d, cat4 %d, cat5 %d; categories 1-4: %d",
		questions, perCat[1], perCat[2], perCat[3], perCat[4], perCat[5], questions-perCat[5])
	t.Logf("evidence ids of categories 1-4: %d, naming no turn: %d", evidence, missing)
}

const sample = `[{"sample_id": "s1", "conversation": {
  "speaker_a": "Ann", "speaker_b": "Bob",
  "session_2_date_time": "12:05 am on 3 June, 2023",
  "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "later"}],
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [
    {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
    {"speaker": "Bob", "dia_id": "D1:2", "text": "look", "img_url": ["http://x"], "blip_caption": "a dog"}],
  "session_3_date_time": "DATE",
  "session_4_date_time": "2:00 pm on 9 May, 2023", "session_4": []},
 "qa": [
  {"question": "q1", "answer": "yes", "evidence": [" D1:1 ", "D8:6; D9:17", "D", "D:11:26", "D1:1"], "category": 4},
  {"question": "q2", "answer": 2022, "evidence": [], "category": 2},
  {"question": "q3", "adversarial_answer": "no", "evidence": ["D2:1"], "category": 5}]}]`

func TestParse(t *testing.T) {
	convs, err := Parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, convs, 1)
	c := convs[0]
	require.Equal(t, "s1", c.ID)
	require.Equal(t, "Ann", c.SpeakerA)
	// Session 3 (date, no turns, bad date) and 4 (empty) are dropped unchecked.
	require.Len(t, c.Sessions, 2)
	require.Equal(t, 1, c.Sessions[0].N)
	require.Equal(t, time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC), c.Sessions[0].At)
	require.Equal(t, time.Date(2023, 6, 3, 0, 5, 0, 0, time.UTC), c.Sessions[1].At)
	require.Equal(t, Turn{DiaID: "D1:2", Speaker: "Bob", Text: "look", Caption: "a dog"}, c.Sessions[0].Turns[1])
	require.Equal(t, []Question{
		{Text: "q1", Answer: "yes", Evidence: []string{"D1:1", "D8:6", "D9:17"}, Category: 4},
		{Text: "q2", Answer: "2022", Category: 2},
		{Text: "q3", Evidence: []string{"D2:1"}, Category: 5},
	}, c.Questions)
}

func TestParseErrorsNameSampleAndField(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{`"1:56 pm on 8 May, 2023"`, `s1: session_1_date_time: "DATE"`}, // malformed date
		{`"dia_id": "D1:1"`, `s1: session_1[0].dia_id: malformed "X"`},  // malformed turn id
		{`"category": 4`, `s1: qa[0].category: 9 not in 1..5`},          // bad category
		{`"evidence": []`, `s1: qa[1]: json: cannot unmarshal number`},  // wrong type
	} {
		repl := map[string]string{
			`"1:56 pm on 8 May, 2023"`: `"DATE"`,
			`"dia_id": "D1:1"`:         `"dia_id": "X"`,
			`"category": 4`:            `"category": 9`,
			`"evidence": []`:           `"evidence": [3]`,
		}[tc.edit]
		_, err := Parse(strings.NewReader(strings.Replace(sample, tc.edit, repl, 1)))
		require.ErrorContains(t, err, tc.want)
	}
	// Load names the file too.
	path := t.TempDir() + "/bad.json"
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(sample, "1:56 pm", "13:56 pm", 1)), 0o644))
	_, err := Load(path)
	require.ErrorContains(t, err, path+": s1: session_1_date_time")
}

func TestSessionOf(t *testing.T) {
	for id, want := range map[string]int{"D3:7": 3, "D30:05": 30, "D12:1": 12} {
		n, ok := SessionOf(id)
		require.True(t, ok, id)
		require.Equal(t, want, n, id)
	}
	for _, id := range []string{"", "D", "D:11:26", "D3", "d3:7", "D3:7 ", "D-1:2", "D3:x", "S3:7"} {
		_, ok := SessionOf(id)
		require.False(t, ok, id)
	}
}

func TestNormalizeEvidence(t *testing.T) {
	require.Equal(t, []string{"D9:1", "D4:4", "D4:6", "D8:6", "D9:17"},
		NormalizeEvidence([]string{"D9:1 D4:4 D4:6", "D8:6; D9:17", "D9:1", "D", "D:11:26", "D4:4,D4:6"}))
	require.Nil(t, NormalizeEvidence(nil))
}

func TestTurnRecall(t *testing.T) {
	ev := []string{"D1:1", "D2:3", "D5:2"}
	ranked := []string{"D1:1", "D1:1", "D9:9", "D2:3", "D7:1", "D5:2"}
	// Distinct ranked: D1:1 D9:9 D2:3 D7:1 D5:2; the duplicate takes no slot.
	require.InDelta(t, 1.0/3, TurnRecall(ev, ranked, 1), 1e-12)
	require.InDelta(t, 1.0/3, TurnRecall(ev, ranked, 2), 1e-12)
	require.InDelta(t, 2.0/3, TurnRecall(ev, ranked, 3), 1e-12)
	require.InDelta(t, 1.0, TurnRecall(ev, ranked, 5), 1e-12)
	require.InDelta(t, 1.0, TurnRecall(ev, ranked, 100), 1e-12)
	require.Zero(t, TurnRecall(ev, ranked, 0))
	require.Zero(t, TurnRecall(nil, ranked, 5))
	// Duplicated evidence counts once.
	require.InDelta(t, 1.0, TurnRecall([]string{"D1:1", "D1:1"}, ranked, 1), 1e-12)
}

func TestSessionRecall(t *testing.T) {
	ev := []string{"D1:1", "D1:4", "D3:2"} // sessions {1, 3}
	ranked := []string{"D2:1", "D2:5", "bad", "D1:9", "D4:1", "D3:3"}
	// Distinct sessions of ranked: 2, 1, 4, 3.
	require.Zero(t, SessionRecall(ev, ranked, 1))
	require.InDelta(t, 0.5, SessionRecall(ev, ranked, 2), 1e-12)
	require.InDelta(t, 0.5, SessionRecall(ev, ranked, 3), 1e-12)
	require.InDelta(t, 1.0, SessionRecall(ev, ranked, 4), 1e-12)
	require.Zero(t, SessionRecall([]string{"D"}, ranked, 4))
}

func TestReport(t *testing.T) {
	var r Report
	ms := time.Millisecond
	r.Add(1, map[int]float64{5: 1, 10: 1}, map[int]float64{1: 1}, 10*ms)
	r.Add(1, map[int]float64{5: 0, 10: 0.5}, map[int]float64{1: 0}, 30*ms)
	r.Add(4, map[int]float64{5: 0.5}, map[int]float64{1: 1}, 20*ms)
	r.Add(5, map[int]float64{5: 1}, nil, 1000*ms) // kept apart, never in All

	require.Equal(t, 2, r.N(1))
	require.Equal(t, 3, r.N(All))
	require.Equal(t, 1, r.N(5))
	require.InDelta(t, 0.5, r.TurnRecall(1, 5), 1e-12)
	require.InDelta(t, 0.75, r.TurnRecall(1, 10), 1e-12)
	require.InDelta(t, 0.5, r.TurnRecall(All, 5), 1e-12)      // (1+0+0.5)/3
	require.InDelta(t, 0.75, r.TurnRecall(All, 10), 1e-12)    // only category 1 has k=10
	require.InDelta(t, 2.0/3, r.SessionRecall(All, 1), 1e-12) // (1+0+1)/3

	s := r.Summary(All)
	require.InDelta(t, 20.0, s.MeanMS, 1e-9)
	require.InDelta(t, 20.0, s.P50MS, 1e-9) // nearest rank of 10,20,30
	require.InDelta(t, 30.0, s.P99MS, 1e-9)
	require.Equal(t, 0, r.Summary(3).N)

	var buf bytes.Buffer
	require.NoError(t, r.Write(&buf))
	out := buf.String()
	t.Log("\n" + out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6)
	require.Contains(t, lines[0], "session R@1")
	require.Regexp(t, `1 multi-hop\s+2\s+0\.500\s+0\.750\s+-\s+0\.500\s+-\s+10\.0`, lines[1])
	require.Regexp(t, `all\s+3\s+0\.500\s+0\.750\s+-\s+0\.667\s+-\s+20\.0`, lines[5])

	js, err := json.Marshal(&r)
	require.NoError(t, err)
	var back struct {
		Categories []Summary `json:"categories"`
		All        Summary   `json:"all"`
	}
	require.NoError(t, json.Unmarshal(js, &back))
	require.Len(t, back.Categories, 4)
	require.Equal(t, s, back.All)
	require.Contains(t, string(js), `"turn_recall":{"10":0.75,"5":0.5}`)
	// Marshalling twice gives the same bytes.
	js2, _ := json.Marshal(&r)
	require.Equal(t, js, js2)
}
