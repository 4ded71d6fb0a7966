//go:build !linux

package sqlite

// walIndex is only implemented on Linux; elsewhere the current-read cache
// is off.
type walIndex struct{ mem []byte }

func openWALIndex(string) *walIndex { return nil }

func (w *walIndex) close() {}
