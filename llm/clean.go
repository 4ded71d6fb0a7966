package llm

import "strings"

// Clean returns the JSON of a model's answer: reasoning models put a
// <think>…</think> block first (DeepSeek-R1, Qwen3), and models asked for
// JSON in the prompt often wrap it in a ```json fence. Both are removed;
// nothing else is touched.
func Clean(s string) string {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "<think>") {
		end := strings.Index(s, "</think>")
		if end < 0 {
			break // an unfinished block: leave it for the parser to refuse
		}
		s = strings.TrimSpace(s[end+len("</think>"):])
	}
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			tag := strings.TrimSpace(rest[:nl])
			if tag == "" || strings.EqualFold(tag, "json") {
				if body, ok := strings.CutSuffix(strings.TrimSpace(rest[nl+1:]), "```"); ok {
					s = strings.TrimSpace(body)
				}
			}
		}
	}
	return s
}
