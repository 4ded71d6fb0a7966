package sgam_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/eval/locomo"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/ingest"
	"github.com/sgam-dev/sgam/inspector"
	"github.com/sgam-dev/sgam/mcpserver"
	"github.com/sgam-dev/sgam/recall"
	"github.com/sgam-dev/sgam/replay"
)

// The roles by who may hold them (store.go).
var (
	tenantRoles = []reflect.Type{
		reflect.TypeFor[sgam.Episodes](), reflect.TypeFor[sgam.FactWriter](), reflect.TypeFor[sgam.FactReader](),
		reflect.TypeFor[sgam.Review](), reflect.TypeFor[sgam.Schemas](), reflect.TypeFor[sgam.Lifecycle](),
		reflect.TypeFor[sgam.Extractions](), reflect.TypeFor[sgam.ExtractionQueue](), reflect.TypeFor[sgam.Search](),
		reflect.TypeFor[sgam.Overview](), reflect.TypeFor[sgam.Keys](), reflect.TypeFor[sgam.VectorSearch](),
	}
	storeWideRoles = []reflect.Type{
		reflect.TypeFor[sgam.ExtractionDispatch](), reflect.TypeFor[sgam.Embeddings](), reflect.TypeFor[sgam.Admin](),
	}
)

// methods maps each method of the roles to the role that declares it.
func methods(t *testing.T, roles []reflect.Type) map[string]string {
	out := map[string]string{}
	for _, r := range roles {
		for i := range r.NumMethod() {
			name := r.Method(i).Name
			require.NotContains(t, out, name, "%s is declared by %s and %s", name, out[name], r.Name())
			out[name] = r.Name()
		}
	}
	return out
}

// TestRolesCoverTheStore: every method of sgam.Store (but Close) is in
// exactly one role, tenant-facing or store-wide, so that a new method
// must say who may hold it.
func TestRolesCoverTheStore(t *testing.T) {
	tenant, wide := methods(t, tenantRoles), methods(t, storeWideRoles)
	for name, role := range tenant {
		require.NotContains(t, wide, name, "%s is both tenant-facing (%s) and store-wide", name, role)
	}
	store := reflect.TypeFor[sgam.Store]()
	for i := range store.NumMethod() {
		name := store.Method(i).Name
		_, t1 := tenant[name]
		_, t2 := wide[name]
		require.True(t, name == "Close" || t1 || t2, "sgam.Store's %s is in no role", name)
	}
}

// TestTenantSurfacesHoldNoStoreWideMethod: a surface bound to one tenant
// (the MCP server, an inspector page, recall, the write path, the
// extractor, replay, the LoCoMo harness) is given a store type without
// any store-wide method, so that it cannot read or write another
// tenant's rows through it whatever its code does.
func TestTenantSurfacesHoldNoStoreWideMethod(t *testing.T) {
	wide := methods(t, storeWideRoles)
	for _, surface := range []reflect.Type{
		reflect.TypeFor[mcpserver.Store](),
		reflect.TypeFor[inspector.Store](),
		reflect.TypeFor[recall.Store](),
		reflect.TypeFor[ingest.Store](),
		reflect.TypeFor[extract.Store](),
		reflect.TypeFor[replay.Store](),
		reflect.TypeFor[locomo.Store](),
	} {
		for i := range surface.NumMethod() {
			name := surface.Method(i).Name
			role, ok := wide[name]
			require.False(t, ok, "%s.%s has %s, of the store-wide %s", surface.PkgPath(), surface.Name(), name, role)
		}
	}
}
