package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// statusFailure is a provider's refusal: a response other than 2xx, or an error event inside a
// stream that had started (status 200).
type statusFailure struct {
	apiFailure
}

func (e *statusFailure) Error() string {
	msg := e.message
	if msg == "" {
		msg = strings.TrimSpace(e.body)
	}
	if e.status == http.StatusOK {
		return "error event in the stream: " + msg
	}
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), msg)
}

// failureOf reads a statusFailure out of err; failure's classification starts from it.
func failureOf(err error) (apiFailure, bool) {
	var f *statusFailure
	if errors.As(err, &f) {
		return f.apiFailure, true
	}
	return apiFailure{}, false
}

func newStatusFailure(status int, header http.Header, body []byte) *statusFailure {
	f := apiFailure{status: status, header: header, body: string(body)}
	f.errType, f.message = parseFailureBody(f.body)
	return &statusFailure{f}
}

// refused builds the failure of a response other than 2xx from its status, headers and the start
// of its body.
func refused(resp *http.Response) *statusFailure {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return newStatusFailure(resp.StatusCode, resp.Header, b)
}

// streamFailure is an error event inside a stream that had started fine.
func streamFailure(data []byte) *statusFailure {
	return newStatusFailure(http.StatusOK, nil, data)
}

// unreadable is the failure of an event whose data is not the JSON the API defines: the server's
// fault, and another attempt may go better.
func unreadable(providerID string, err error) *Error {
	return &Error{Kind: ErrServer, Provider: providerID, Message: fmt.Sprintf("the provider streamed an event that is not JSON: %v", err), Err: err}
}

// postStream POSTs a JSON body that asks for a streamed answer and returns the response when it is
// 2xx; the caller closes its body. Any other status is returned as a *statusFailure.
func postStream(ctx context.Context, hc *http.Client, url string, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, refused(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server (or a proxy before it) that ignored "stream": one document, often an error.
		defer resp.Body.Close()
		f := refused(resp)
		if f.message == "" {
			f.message = "the provider answered with one JSON document instead of a stream of events: does it support streaming (\"stream\": true)?"
		}
		return nil, f
	}
	return resp, nil
}
