package storetest

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
)

// counter is an Observer that counts operations by name.
type counter struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *counter) StoreOp(op string, _ time.Duration, _ error) {
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
}

// runObserver: the store tells its observer of every call of every method
// of the roles (default: sgam.Store) but Close, once, under the method's
// name.
func runObserver(t *testing.T, newStore Factory, roles ...reflect.Type) {
	if len(roles) == 0 {
		roles = []reflect.Type{reflect.TypeFor[sgam.Store]()}
	}
	c := &counter{ops: map[string]int{}}
	st := newStore(t, Options{Observer: c})
	ctxType := reflect.TypeFor[context.Context]()
	v := reflect.ValueOf(st)
	var methods []string
	for _, iface := range roles {
		for i := range iface.NumMethod() {
			name := iface.Method(i).Name
			if name == "Close" {
				continue
			}
			methods = append(methods, name)
			m := v.MethodByName(name)
			require.True(t, m.IsValid(), "the store has no method %s", name)
			args := make([]reflect.Value, m.Type().NumIn())
			for i := range args {
				if in := m.Type().In(i); in == ctxType {
					args[i] = reflect.ValueOf(context.Background())
				} else {
					args[i] = reflect.Zero(in) // an empty store: invalid input or nothing to do
				}
			}
			m.Call(args)
		}
	}
	for _, name := range methods {
		require.Equal(t, 1, c.ops[name], name)
	}
	require.Len(t, c.ops, len(methods), "no other operation is reported")
}
