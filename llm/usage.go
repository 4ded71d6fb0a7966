package llm

// A server's token counts are the model's answer too, and as untrusted:
// a count it could not have spent (negative, more than the prompt's bytes,
// more than max_tokens and the answer's bytes) or none at all is replaced
// by sgam's own estimate, and sums saturate instead of wrapping, so that a
// lying server can neither empty a tenant's budget nor make it endless.

// MaxTokenCount bounds every token count sgam adds up: a sum saturates
// there.
const MaxTokenCount = 1 << 50

// SaturatingAdd adds two counts, each taken as at least 0, and saturates
// at MaxTokenCount.
func SaturatingAdd(a, b int) int {
	a, b = min(max(a, 0), MaxTokenCount), min(max(b, 0), MaxTokenCount)
	if a > MaxTokenCount-b {
		return MaxTokenCount
	}
	return a + b
}

// EstimateTokens is sgam's own count of the tokens of n bytes of text: a
// quarter of them, rounded up, as tokenizers of English text average.
func EstimateTokens(n int) int { return (max(n, 0) + 3) / 4 }

const (
	// promptOverhead is what a chat template and a structured-output
	// request may add to a prompt beyond its text: role markers, special
	// tokens, the tool or schema declaration.
	promptOverhead = 1024
	// answerOverhead is the same for an answer: the tokens that end it.
	answerOverhead = 16
)

// plausible returns the server's counts of an answered attempt where it
// could have spent them, else sgam's estimates. A prompt of n bytes is
// at most n tokens (every token holds a byte at least) and the overhead;
// an answer at most max_tokens, or its bytes when the server ignored
// max_tokens. Zero for a text that is not empty is no count.
func plausible(reported Usage, promptBytes, answerBytes, maxTokens int) Usage {
	u := Usage{PromptTokens: reported.PromptTokens, CompletionTokens: reported.CompletionTokens}
	if u.PromptTokens <= 0 || u.PromptTokens > promptBytes+promptOverhead {
		u.PromptTokens, u.Estimated = EstimateTokens(promptBytes), true
	}
	limit := max(maxTokens, answerBytes) + answerOverhead
	if u.CompletionTokens < 0 || u.CompletionTokens > limit || u.CompletionTokens == 0 && answerBytes > 0 {
		u.CompletionTokens, u.Estimated = EstimateTokens(answerBytes), true
	}
	return u
}

// unanswered is what an attempt that got no answer counts: when it was
// cut off while the server may have been working (its timeout, the
// caller's deadline, or the server dying mid-answer), the prompt's
// estimated tokens; when the server refused it (a status) or could not be
// reached, nothing.
func unanswered(promptBytes int, cutOff bool) Usage {
	if !cutOff {
		return Usage{}
	}
	return Usage{PromptTokens: EstimateTokens(promptBytes), Estimated: true}
}
