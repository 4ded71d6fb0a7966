package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteJSON: an answer goes with its length; one that does not encode
// is a 500 with the internal error's body, not a 200 cut off.
func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	require.NoError(t, writeJSON(w, http.StatusCreated, map[string]string{"a": "<b>"}))
	require.Equal(t, http.StatusCreated, w.Code)
	require.Equal(t, "{\"a\":\"<b>\"}\n", w.Body.String(), "HTML is not escaped")
	require.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))

	w = httptest.NewRecorder()
	err := writeJSON(w, http.StatusOK, json.RawMessage(`{"cut`))
	require.ErrorContains(t, err, "encode the answer", "the why, for the log")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.JSONEq(t, `{"error":{"code":"internal","message":"internal error"}}`, w.Body.String())
	require.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))
}
