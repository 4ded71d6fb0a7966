package queue

import (
	"errors"
	"fmt"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
)

// jobError is what River keeps of a failed attempt, and what the queue
// logs of one: River's job rows outlive a forget (River deletes ended
// jobs a day or a week later, and the log is the operator's), and the text
// of a model server's or a store's error may quote the episode ("upstream
// failed on input: …"). So they get the failure's kind and code only; the
// extraction record, which forget deletes, keeps the text.
func jobError(err error) error {
	return errors.New(errorKind(err))
}

// safeText is an error's text for a log line: a model server's error by
// its kind and status alone (the server's message may quote the
// request), any other whole.
func safeText(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Brief()
	}
	return err.Error()
}

// errorKind names what failed, in words that hold no text of the error.
// (A spent budget and no model never fail a job: they snooze it.)
func errorKind(err error) string {
	var le *llm.Error
	var ae *extract.AnswerError
	switch {
	case errors.As(err, &le):
		return le.Brief()
	case errors.As(err, &ae):
		return "the model's answer is unusable"
	}
	return fmt.Sprintf("store error: %s", sgam.ErrorCode(err))
}
