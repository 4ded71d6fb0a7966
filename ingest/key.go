package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Key is the idempotency key sgam gives an episode from the content of
// the call that captured it, when the caller gave none: source (who
// derives it: "ingest" for a line of a file, "mcp" for a tool call),
// "-sha256:", and the SHA-256 of parts joined by NUL bytes. Calling again
// with the same content finds the episode captured the first time,
// instead of capturing a second.
func Key(source string, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return source + "-sha256:" + hex.EncodeToString(sum[:])
}
