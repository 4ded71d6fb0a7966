package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds one message of a StdioTransport that sets
// no bound of its own, and of ServeStdio: 4 MiB, as an HTTP server bounds
// a request's body.
const DefaultMaxMessageBytes = 4 << 20

// ServeStdio serves the MCP server of cfg (see New) on in and out until in
// ends or ctx is done: newline-delimited JSON-RPC, one message a line, as
// StdioTransport reads and writes it ('sgam mcp' is this on standard input
// and output). The end of in is a clean end, reported as nil, once every
// request read has been answered; when ctx is done first, the requests
// still running are cancelled and ctx's error is returned. ServeStdio
// closes neither in nor out; a read of in under way when it returns is
// left to finish in the background, as with the SDK's stdio transport.
func ServeStdio(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	err = srv.Run(ctx, &StdioTransport{Reader: in, Writer: out})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// StdioTransport is an mcp.Transport of newline-delimited JSON-RPC on a
// reader and a writer (a process's standard input and output), like the
// SDK's IOTransport but sturdy at both ends of a session. The SDK's ends
// the session at the first line that is not a JSON-RPC message, unanswered;
// and at the end of input it cancels the requests still running and drops
// their answers. Here a malformed line is answered with a JSON-RPC error
// (id null when the line names none) and skipped: -32700 for a line that is
// not JSON; -32600 for one that is not a JSON-RPC message, a batch, a
// message with a key given twice (outside a tool call's arguments, which
// the tool refuses naming the argument), a request whose id is in use, or a
// line over MaxMessageBytes. And the end of input is passed on only once
// every request read has been answered.
//
// Connect it once (each connection reads Reader); closing the connection
// leaves Reader and Writer open, unlike the SDK's.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one message (one line, without its line
	// ending); default DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	c := &stdioConn{out: t.Writer, maxMessage: limit, lines: make(chan inputLine), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}}
	c.answered = sync.NewCond(&c.mu)
	go c.readLines(bufio.NewReader(t.Reader))
	return c, nil
}

// inputLine is one line of input, or the error that ended the input.
type inputLine struct {
	text    []byte
	tooLong bool // longer than maxMessage: text is dropped
	err     error
}

// stdioConn is the connection of a StdioTransport.
type stdioConn struct {
	out        io.Writer
	maxMessage int
	writeMu    sync.Mutex // a message is one line: writes never interleave

	// lines come from readLines, which blocks on the input: Read waits on
	// the channel so that Close can end a Read (the goroutine stays blocked
	// until the input ends, as the SDK's does).
	lines     chan inputLine
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	answered *sync.Cond          // broadcast when a request is answered, and on Close
	pending  map[jsonrpc.ID]bool // requests read and not answered yet
	isClosed bool
}

func (c *stdioConn) readLines(r *bufio.Reader) {
	for {
		l := c.readLine(r)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads one line, without its line ending. A line over
// maxMessage is read to its end and dropped.
func (c *stdioConn) readLine(r *bufio.Reader) inputLine {
	var l inputLine
	for {
		chunk, err := r.ReadSlice('\n')
		if !l.tooLong {
			l.text = append(l.text, chunk...)
			if len(l.text) > c.maxMessage+len("\r\n") {
				l.text, l.tooLong = nil, true
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil, errors.Is(err, io.EOF) && (len(l.text) > 0 || l.tooLong):
			// At the end of the input, a last line without a line ending
			// is a line too; the next read reports the end.
			if l.text = bytes.TrimRight(l.text, "\r\n"); len(l.text) > c.maxMessage {
				l.text, l.tooLong = nil, true
			}
			return l
		}
		return inputLine{err: err}
	}
}

// Read implements mcp.Connection: the next message, after answering and
// skipping malformed lines. At the end of the input it waits for every
// request read to be answered (or for Close): the SDK stops answering once
// Read reports the end.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l inputLine
		select {
		case l = <-c.lines:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err != nil {
			c.mu.Lock()
			for len(c.pending) > 0 && !c.isClosed {
				c.answered.Wait()
			}
			c.mu.Unlock()
			return nil, l.err
		}
		if msg := c.message(l); msg != nil {
			return msg, nil
		}
	}
}

// message decodes a line, or answers it with a JSON-RPC error and returns
// nil; blank lines are skipped.
func (c *stdioConn) message(l inputLine) jsonrpc.Message {
	text := bytes.TrimSpace(l.text)
	switch {
	case l.tooLong:
		return c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: the message is longer than %d bytes", c.maxMessage))
	case len(text) == 0:
		return nil
	case !json.Valid(text):
		return c.refuse(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	case text[0] == '[':
		return c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message per line")
	}
	if at, ok := duplicateKey(text); ok {
		// The SDK would keep the last of them. An id given twice names no
		// request to answer to.
		id := jsonrpc.ID{}
		if at != "id" {
			id = lineID(text)
		}
		return c.refuse(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s is given twice; give each key once", at))
	}
	msg, err := jsonrpc.DecodeMessage(text)
	if err != nil {
		return c.refuse(lineID(text), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		inUse := c.pending[req.ID]
		c.pending[req.ID] = true
		c.mu.Unlock()
		if inUse {
			// The SDK would refuse it without an id, and so never clear the
			// id from pending. Refuse it here, with no id either: an answer
			// under the id is the first request's.
			return c.refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: id %v is in use by a request not answered yet", req.ID.Raw()))
		}
	}
	return msg
}

// lineID is the id to answer a refused line with, when it names one.
func lineID(text []byte) jsonrpc.ID {
	var probe struct {
		ID any `json:"id"`
	}
	json.Unmarshal(text, &probe)
	id, _ := jsonrpc.MakeID(probe.ID)
	return id
}

// duplicateKey finds a key given twice in one object of a JSON-RPC message
// (text is JSON), as every other input path refuses (sgam.CheckJSON): it
// returns the key's path ("id", "params.name"). A tool call's arguments
// are left to the tool, whose refusal names the argument.
func duplicateKey(text []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var walk func(path string) (string, bool)
	walk = func(path string) (string, bool) {
		tok, err := d.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return "", false
				}
				key, _ := k.(string)
				at := key
				if path != "" {
					at = path + "." + key
				}
				if seen[key] {
					return at, true
				}
				seen[key] = true
				if at == "params.arguments" {
					var skip json.RawMessage
					if d.Decode(&skip) != nil {
						return "", false
					}
					continue
				}
				if at, ok := walk(at); ok {
					return at, true
				}
			}
			d.Token() // }
		case json.Delim('['):
			for i := 0; d.More(); i++ {
				if at, ok := walk(fmt.Sprintf("%s[%d]", path, i)); ok {
					return at, true
				}
			}
			d.Token() // ]
		}
		return "", false
	}
	return walk("")
}

// refuse answers a malformed line with a JSON-RPC error (id null when it
// names none) and returns nil.
func (c *stdioConn) refuse(id jsonrpc.ID, code int64, message string) jsonrpc.Message {
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"` // null, unlike the SDK's encoding of a missing id
		Error   wireError `json:"error"`
	}{"2.0", id.Raw(), wireError{code, message}})
	if err == nil {
		c.writeLine(b) // a failed write ends the session at the next one the SDK makes
	}
	return nil
}

// Write implements mcp.Connection. An answer to a request is counted once
// it is written.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(b)
	if res, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, res.ID)
		c.answered.Broadcast()
		c.mu.Unlock()
	}
	return err
}

func (c *stdioConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Close implements mcp.Connection. It leaves the transport's reader and
// writer open: they are the caller's (a process's standard input and
// output).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.mu.Lock()
		c.isClosed = true
		c.answered.Broadcast()
		c.mu.Unlock()
	})
	return nil
}

// SessionID implements mcp.Connection: stdio has one session, unnamed.
func (c *stdioConn) SessionID() string { return "" }
