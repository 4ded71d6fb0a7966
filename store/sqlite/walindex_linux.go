//go:build linux

package sqlite

import (
	"os"
	"syscall"
)

// walIndex is a read-only view of the WAL-index header at the start of the
// database's -shm file (https://sqlite.org/walformat.html). SQLite rewrites
// the header on every commit, by any process, so an unchanged header means
// an unchanged database.
type walIndex struct {
	mem []byte
}

// openWALIndex maps the first page of path's -shm file, or returns nil when
// it cannot (the cache is then off).
func openWALIndex(path string) *walIndex {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < 4096 {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &walIndex{mem: mem}
}

func (w *walIndex) close() {
	if w != nil && w.mem != nil {
		syscall.Munmap(w.mem)
		w.mem = nil
	}
}
