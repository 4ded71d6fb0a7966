// Package locomo loads the LoCoMo long-conversation memory benchmark
// (locomo10.json, Maharana et al. 2024) and scores retrieval against its
// evidence annotations.
//
// Question categories, as numbered in the released file. The paper
// introduces them in another order (single-hop first), so the numbers below
// come from the file itself: category 1 questions average 3.1 evidence turns,
// category 2 questions mostly ask "When", category 3 ask "Would ..." and
// category 4 average 1.1 evidence turns.
//
//	1 multi-hop    answer needs several turns, often from several sessions
//	2 temporal     answer is a date or an ordering of events
//	3 open-domain  answer needs inference or world knowledge beyond the text
//	4 single-hop   answer is stated in one turn
//	5 adversarial  unanswerable trap; "answer" is mostly absent and
//	               "adversarial_answer" holds the tempting wrong answer
//
// Retrieval evaluations use categories 1-4 only.
package locomo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Turn is one utterance. DiaID is "D<session>:<turn>" as in the data.
type Turn struct {
	DiaID, Speaker, Text string
	Caption              string // blip_caption of a shared image, "" when none
}

// Session is one dated conversation session.
type Session struct {
	N     int
	At    time.Time // parsed from session_N_date_time, UTC (the data has no zone)
	Turns []Turn
}

// Question is one QA item.
type Question struct {
	Text string
	// Answer is the gold answer; numeric answers (years, counts) are kept as
	// their JSON literal. Usually "" for category 5, where the data has none.
	Answer   string
	Evidence []string // normalized dia_ids, see NormalizeEvidence
	Category int
}

// Conversation is one benchmark sample.
type Conversation struct {
	ID                 string
	SpeakerA, SpeakerB string
	Sessions           []Session // ordered by N; only sessions that have turns
	Questions          []Question
}

// dateLayout matches session_N_date_time values such as "1:56 pm on 8 May, 2023".
const dateLayout = "3:04 pm on 2 January, 2006"

// Load reads and parses a locomo10.json file.
func Load(path string) ([]Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	defer f.Close()
	convs, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("locomo: %s: %w", path, err)
	}
	return convs, nil
}

type rawSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []json.RawMessage          `json:"qa"`
}

type rawTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type rawQA struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"` // string or number, may be absent
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
}

// Parse decodes the benchmark JSON. Errors name the sample and the field at
// fault, so a bad edit of the data is easy to find.
func Parse(r io.Reader) ([]Conversation, error) {
	convs, err := parse(r)
	if err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	return convs, nil
}

func parse(r io.Reader) ([]Conversation, error) {
	// Decode samples one by one so that a type error can name its sample.
	var raws []json.RawMessage
	if err := json.NewDecoder(r).Decode(&raws); err != nil {
		return nil, err
	}
	convs := make([]Conversation, 0, len(raws))
	for i, raw := range raws {
		c, err := parseSample(raw)
		if err != nil {
			name := c.ID
			if name == "" {
				name = fmt.Sprintf("sample %d", i)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// parseSample returns the conversation with at least ID set on error.
func parseSample(raw json.RawMessage) (Conversation, error) {
	var s rawSample
	if err := json.Unmarshal(raw, &s); err != nil {
		// Retry for the id alone so that the error can still name the sample.
		var id struct {
			SampleID string `json:"sample_id"`
		}
		_ = json.Unmarshal(raw, &id)
		return Conversation{ID: id.SampleID}, err
	}
	c := Conversation{ID: s.SampleID}
	if s.SampleID == "" {
		return c, fmt.Errorf("sample_id: missing")
	}
	if s.Conversation == nil {
		return c, fmt.Errorf("conversation: missing")
	}
	var err error
	if c.SpeakerA, err = stringField(s.Conversation, "speaker_a"); err != nil {
		return c, err
	}
	if c.SpeakerB, err = stringField(s.Conversation, "speaker_b"); err != nil {
		return c, err
	}
	if c.Sessions, err = parseSessions(s.Conversation); err != nil {
		return c, err
	}
	for i, q := range s.QA {
		var rq rawQA
		if err := json.Unmarshal(q, &rq); err != nil {
			return c, fmt.Errorf("qa[%d]: %w", i, err)
		}
		if rq.Category < 1 || rq.Category > 5 {
			return c, fmt.Errorf("qa[%d].category: %d not in 1..5", i, rq.Category)
		}
		ans, err := answerText(rq.Answer)
		if err != nil {
			return c, fmt.Errorf("qa[%d].answer: %w", i, err)
		}
		c.Questions = append(c.Questions, Question{
			Text: rq.Question, Answer: ans,
			Evidence: NormalizeEvidence(rq.Evidence), Category: rq.Category,
		})
	}
	return c, nil
}

func stringField(m map[string]json.RawMessage, key string) (string, error) {
	var s string
	if raw, ok := m[key]; ok {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("conversation.%s: %w", key, err)
		}
	}
	if s == "" {
		return "", fmt.Errorf("conversation.%s: missing", key)
	}
	return s, nil
}

// parseSessions collects session_N arrays. Session numbers need not be
// contiguous, and a session may have a date but no turns (conv-26 dates
// sessions 20-35 without any): those are skipped, their dates unchecked.
func parseSessions(m map[string]json.RawMessage) ([]Session, error) {
	var out []Session
	for key, raw := range m {
		rest, ok := strings.CutPrefix(key, "session_")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			continue // session_N_date_time, handled with its session
		}
		var turns []rawTurn
		if err := json.Unmarshal(raw, &turns); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if len(turns) == 0 {
			continue
		}
		dateKey := key + "_date_time"
		var date string
		if raw, ok := m[dateKey]; ok {
			if err := json.Unmarshal(raw, &date); err != nil {
				return nil, fmt.Errorf("%s: %w", dateKey, err)
			}
		}
		if date == "" {
			return nil, fmt.Errorf("%s: missing", dateKey)
		}
		at, err := time.Parse(dateLayout, strings.TrimSpace(date))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: want a time like %q", dateKey, date, "1:56 pm on 8 May, 2023")
		}
		sess := Session{N: n, At: at.UTC(), Turns: make([]Turn, len(turns))}
		for i, t := range turns {
			// Scoring maps ids to sessions, so a malformed turn id would
			// silently lose hits; refuse it here instead.
			if _, ok := SessionOf(t.DiaID); !ok {
				return nil, fmt.Errorf("%s[%d].dia_id: malformed %q", key, i, t.DiaID)
			}
			sess.Turns[i] = Turn{DiaID: t.DiaID, Speaker: t.Speaker, Text: t.Text, Caption: t.Caption}
		}
		out = append(out, sess)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out, nil
}

// answerText keeps numbers as their literal ("2022", not "2022.0").
func answerText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", err
	}
	return n.String(), nil
}

// parseDiaID splits "D<session>:<turn>", digits only.
func parseDiaID(id string) (sess, turn int, ok bool) {
	rest, ok := strings.CutPrefix(id, "D")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, ":")
	if !ok || !digits(a) || !digits(b) {
		return 0, 0, false
	}
	sess, err1 := strconv.Atoi(a)
	turn, err2 := strconv.Atoi(b)
	return sess, turn, err1 == nil && err2 == nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SessionOf returns the session number of a dia_id ("D3:7" -> 3), false when malformed.
func SessionOf(diaID string) (int, bool) {
	s, _, ok := parseDiaID(diaID)
	return s, ok
}

// NormalizeEvidence cleans the data's evidence lists: entries are trimmed,
// entries holding several ids ("D8:6; D9:17", "D9:1 D4:4 D4:6") are split on
// ';', ',' and spaces, ids that are not D<int>:<int> ("D", "D:11:26") are
// dropped, and duplicates are removed keeping the first. Well-formed ids are
// otherwise kept verbatim, even "D30:05" (which names no turn; "D30:5" does):
// fixing the data is not the loader's business.
func NormalizeEvidence(raw []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range raw {
		for _, id := range strings.FieldsFunc(e, func(r rune) bool {
			return r == ';' || r == ',' || r == ' ' || r == '\t' || r == '\n'
		}) {
			if _, _, ok := parseDiaID(id); ok && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// TurnRecall is the fraction of the distinct evidence turns found among the
// first k distinct ids of ranked (best first); 0 when there is no evidence.
func TurnRecall(evidence, ranked []string, k int) float64 {
	want := map[string]bool{}
	for _, e := range evidence {
		want[e] = true
	}
	if len(want) == 0 {
		return 0
	}
	hits, seen := 0, map[string]bool{}
	for _, id := range ranked {
		if len(seen) >= k {
			break
		}
		if seen[id] {
			continue // a duplicate must not use up a slot of the k
		}
		seen[id] = true
		if want[id] {
			hits++
		}
	}
	return float64(hits) / float64(len(want))
}

// SessionRecall is the fraction of the distinct sessions of the evidence that
// appear among the first k distinct sessions of ranked. It credits a
// retriever that finds the right session but not the exact turn. Malformed
// ids, in either list, are ignored.
func SessionRecall(evidence, ranked []string, k int) float64 {
	want := map[int]bool{}
	for _, e := range evidence {
		if s, ok := SessionOf(e); ok {
			want[s] = true
		}
	}
	if len(want) == 0 {
		return 0
	}
	hits, seen := 0, map[int]bool{}
	for _, id := range ranked {
		if len(seen) >= k {
			break
		}
		s, ok := SessionOf(id)
		if !ok || seen[s] {
			continue
		}
		seen[s] = true
		if want[s] {
			hits++
		}
	}
	return float64(hits) / float64(len(want))
}

// CategoryName names a question category ("" when unknown).
func CategoryName(c int) string {
	switch c {
	case 1:
		return "multi-hop"
	case 2:
		return "temporal"
	case 3:
		return "open-domain"
	case 4:
		return "single-hop"
	case 5:
		return "adversarial"
	}
	return ""
}
