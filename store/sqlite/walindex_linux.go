//go:build linux

package sqlite

import (
	"os"
	"sync"
	"syscall"
)

// walIndex is a read-only view of the WAL-index header at the start of the
// database's -shm file (https://sqlite.org/walformat.html). SQLite rewrites
// the header on every commit, by any process, so an unchanged header means
// an unchanged database.
//
// Mapping the file takes a descriptor of our own, and closing any
// descriptor of a file drops every POSIX lock the process holds on it,
// SQLite's included: the next process then believes it is alone, rebuilds
// the WAL-index under the live one, and writes fail with disk I/O errors or
// corrupt the file. So a descriptor is closed only once the -shm file it
// names has been unlinked: SQLite unlinks it when the last connection of
// any process closes, and nothing can hold a lock on an unlinked inode. Until
// then it stays open, shared by every Store of this process on that file
// (views), even after the last of them closed.
type walIndex struct {
	mem  []byte
	file *os.File
	id   shmID
	refs int // Stores using it; guarded by views.mu
}

// shmID names a -shm file by device and inode: POSIX locks belong to the
// inode, whatever the path.
type shmID struct{ dev, ino uint64 }

var views = struct {
	mu   sync.Mutex
	open map[shmID]*walIndex
}{open: map[shmID]*walIndex{}}

// openWALIndex maps the first page of path's -shm file, or returns nil when
// it cannot (the cache is then off). The store's own connections must be
// open: they keep SQLite from unlinking or truncating the file meanwhile.
func openWALIndex(path string) *walIndex {
	var st syscall.Stat_t
	if err := syscall.Stat(path+"-shm", &st); err != nil || st.Size < 4096 {
		return nil
	}
	id := shmID{uint64(st.Dev), st.Ino}
	views.mu.Lock()
	defer views.mu.Unlock()
	reapViews()
	if w := views.open[id]; w != nil {
		w.refs++
		return w
	}
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	w := &walIndex{file: f, id: id, refs: 1}
	// From here on the descriptor is open: it must go through the view's
	// life, never be closed while the file is linked.
	views.open[id] = w
	var fst syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &fst); err != nil || (shmID{uint64(fst.Dev), fst.Ino}) != id {
		w.refs = 0 // replaced between stat and open: no cache, kept until unlinked
		return nil
	}
	if w.mem, err = syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		w.refs = 0
		return nil
	}
	return w
}

// close releases a Store's use of w. Call it after the Store's connections
// are closed, so that SQLite may have unlinked the file by then.
func (w *walIndex) close() {
	if w == nil {
		return
	}
	views.mu.Lock()
	defer views.mu.Unlock()
	w.refs--
	reapViews()
}

// reapViews closes the unused views whose file is gone. views.mu is held.
func reapViews() {
	for id, w := range views.open {
		var st syscall.Stat_t
		if w.refs > 0 || syscall.Fstat(int(w.file.Fd()), &st) != nil || st.Nlink > 0 {
			continue
		}
		if w.mem != nil {
			syscall.Munmap(w.mem)
			w.mem = nil
		}
		w.file.Close()
		delete(views.open, id)
	}
}
