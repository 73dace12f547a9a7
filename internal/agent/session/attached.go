package session

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/files"
	"github.com/tandem-dev/tandem/internal/infra/provider"
)

// attachedBytes bounds the content of each attached file that goes into the prompt.
const attachedBytes = 64 * 1024

// attachedEntries bounds the entries of each attached directory that go into the prompt.
const attachedEntries = 500

// withFileContents gives the model what a prompt's files hold, as OpenCode's server does: before each
// file part whose file:// URL names a regular file inside dir, a synthetic text part carries its
// content (cut at attachedBytes; a binary file is named, not shown), and before one naming a directory
// inside dir, its entries. A part the client already put content before (a synthetic text part, as
// tandem's commands do), a data: URL, a missing file and a path that leads outside dir (.., a symlink)
// are left as they are, and so are images and PDFs: they go to the model as content (userMessage).
func withFileContents(dir string, parts []PartInput) []PartInput {
	if dir == "" || !slices.ContainsFunc(parts, func(p PartInput) bool { return p.Type == "file" }) {
		return parts
	}
	out := make([]PartInput, 0, len(parts))
	for i, p := range parts {
		if p.Type == "file" && !sentAsContent(p.Mime) && (i == 0 || !(parts[i-1].Type == "text" && parts[i-1].Synthetic)) {
			if rel, content, ok := readAttached(dir, p.URL); ok {
				out = append(out, PartInput{Type: "text", Synthetic: true,
					Text: "Contents of " + rel + " (attached with @" + rel + "):\n" + content})
			} else if text, ok := dataText(p.URL); ok {
				out = append(out, PartInput{Type: "text", Synthetic: true,
					Text: "Contents of " + cmp.Or(p.Filename, "the attached file") + " (attached):\n" + text})
			}
		}
		out = append(out, p)
	}
	return out
}

// readAttached reads the file (or lists the directory) a file:// URL names when it is inside dir:
// files.Resolve refuses a path that leaves it lexically or through a symlink, and files.OpenInside
// opens it through an os.Root, so a link swapped in after the check cannot lead outside either.
func readAttached(dir, raw string) (rel, content string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return "", "", false
	}
	target, err := files.Resolve(dir, u.Path)
	if err != nil {
		return "", "", false
	}
	f, err := files.OpenInside(dir, target)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", "", false
	}
	rel = target.Rel
	if info.IsDir() {
		return listAttached(f, rel)
	}
	if !info.Mode().IsRegular() {
		return "", "", false
	}
	buf, err := io.ReadAll(io.LimitReader(f, attachedBytes+1))
	if err != nil {
		return "", "", false
	}
	switch {
	case bytes.IndexByte(buf, 0) >= 0:
		return rel, "(binary file, not shown)", true
	case len(buf) > attachedBytes:
		return rel, strings.ToValidUTF8(string(buf[:attachedBytes]), "") + "\n… (cut at " + strconv.Itoa(attachedBytes) + " bytes)", true
	}
	return rel, string(buf), true
}

// listAttached is an attached directory as the model reads it: its entries, one level, sorted,
// directories ending in "/", .git left out, at most attachedEntries.
func listAttached(f *os.File, rel string) (string, string, bool) {
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", "", false
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Name() == ".git":
		case e.IsDir():
			names = append(names, e.Name()+"/")
		default:
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	more := ""
	if len(names) > attachedEntries {
		more = "\n… (" + strconv.Itoa(len(names)-attachedEntries) + " more)"
		names = names[:attachedEntries]
	}
	if rel == "." {
		rel = ""
	}
	return rel + "/", strings.Join(names, "\n") + more, true
}

// dataText is the text a data: URL holds, when it holds text (valid UTF-8 without NUL bytes), cut
// at attachedBytes like a file's.
func dataText(raw string) (string, bool) {
	if !strings.HasPrefix(raw, "data:") {
		return "", false
	}
	data, err := attachmentData("", raw)
	if err != nil || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	if len(data) > attachedBytes {
		return strings.ToValidUTF8(string(data[:attachedBytes]), "") + "\n… (cut at " + strconv.Itoa(attachedBytes) + " bytes)", true
	}
	return string(data), true
}

// attachmentBytes bounds an image or PDF sent to a model: OpenAI takes images up to 20 MB, and
// Anthropic requests up to 32 MB.
const attachmentBytes = 20 << 20

// sentAsContent reports whether a file part of this media type goes to the model as content (an
// image, a PDF) rather than as text.
func sentAsContent(mime string) bool { return provider.IsImage(mime) || mime == provider.PDF }

// Inputs is implemented by Providers that know which attachments a model takes as content
// (provider.Registry.Takes). Without it, every image and PDF is sent.
type Inputs interface {
	Takes(providerID, modelID, mime string) error
}

func takes(ag Agent, model *MessageModel, mime string) error {
	if in, ok := ag.Providers.(Inputs); ok && model != nil {
		return in.Takes(model.ProviderID, model.ModelID, mime)
	}
	return nil
}

// readAttachment returns the bytes of an image or PDF part and their media type as their content
// shows it: a data: URL's data, or the file a file:// URL names inside dir (files.Resolve and
// files.OpenInside, as for any attached file). The content must be the kind of file the part
// says (a PNG named .jpg is sent as the PNG it is), since the APIs refuse a mismatch.
func readAttachment(dir, raw, mime string) ([]byte, string, error) {
	data, err := attachmentData(dir, raw)
	if err != nil {
		return nil, "", err
	}
	sniffed, _, _ := strings.Cut(http.DetectContentType(data), ";")
	switch {
	case provider.IsImage(mime) && provider.IsImage(sniffed), mime == provider.PDF && sniffed == provider.PDF:
		return data, sniffed, nil
	case mime == provider.PDF:
		return nil, "", fmt.Errorf("it is not a PDF (its content reads as %s)", sniffed)
	}
	return nil, "", fmt.Errorf("it is not a PNG, JPEG, GIF or WebP image (its content reads as %s)", sniffed)
}

func attachmentData(dir, raw string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		// RFC 2397: data:[<mediatype>][;base64],<data>
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok {
			return nil, errors.New("the data: URL has no comma before its data")
		}
		var data []byte
		var err error
		if strings.HasSuffix(meta, ";base64") {
			data, err = base64.StdEncoding.DecodeString(payload)
			if err != nil {
				data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
			}
		} else {
			var s string
			s, err = url.PathUnescape(payload)
			data = []byte(s)
		}
		if err != nil {
			return nil, fmt.Errorf("the data: URL's data does not decode: %v", err)
		}
		if len(data) > attachmentBytes {
			return nil, fmt.Errorf("it is larger than %d MB", attachmentBytes>>20)
		}
		return data, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return nil, errors.New("images and PDFs are sent from a data: URL or a file:// URL inside the project")
	}
	target, err := files.Resolve(dir, u.Path)
	if err != nil {
		return nil, err
	}
	f, err := files.OpenInside(dir, target)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", target.Rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, attachmentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > attachmentBytes {
		return nil, fmt.Errorf("%s is larger than %d MB", target.Rel, attachmentBytes>>20)
	}
	return data, nil
}

// checkAttachments refuses a prompt whose images or PDFs the model would not receive: one the
// model does not take, or one that cannot be read.
func checkAttachments(ag Agent, model *MessageModel, dir string, parts []PartInput) error {
	for i, p := range parts {
		if p.Type != "file" {
			continue
		}
		name := cmp.Or(p.Filename, p.Mime)
		if !sentAsContent(p.Mime) {
			// A pasted file the model could read neither as content nor as text.
			if _, text := dataText(p.URL); strings.HasPrefix(p.URL, "data:") && !text {
				return errs.E(errs.Invalid, "parts[%d] (%s) cannot be sent: tandem sends models images (%s), PDFs and text, and this data: URL holds none of them",
					i, name, strings.Join(provider.ImageTypes, ", "))
			}
			continue
		}
		if err := takes(ag, model, p.Mime); err != nil {
			return errs.E(errs.Invalid, "parts[%d] (%s): %v", i, name, err)
		}
		if _, _, err := readAttachment(dir, p.URL, p.Mime); err != nil {
			return errs.E(errs.Invalid, "parts[%d] (%s) cannot be sent: %v", i, name, err)
		}
	}
	return nil
}

// withAttachments reads the images and PDFs of a history's user messages for one call. The prompt
// checked each one; one that the model does not take (the session changed models since) or that
// can no longer be read is named in the message's text with the reason, so the model knows it is
// missing. msgs itself is left as it is: it is the history kept for the next turn.
func (s *Service) withAttachments(ag Agent, model *MessageModel, dir string, msgs []provider.Message) []provider.Message {
	var out []provider.Message
	for i, m := range msgs {
		if len(m.Attachments) == 0 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]provider.Message, 0, len(msgs)), msgs[:i]...)
		}
		var sent []provider.Attachment
		for _, a := range m.Attachments {
			err := takes(ag, model, a.Mime)
			if err == nil {
				a.Data, a.Mime, err = readAttachment(dir, a.URL, a.Mime)
			}
			if err != nil {
				m.Text += "\n[attached file " + a.Filename + " (" + a.Mime + ") was not sent: " + err.Error() + "]"
				continue
			}
			sent = append(sent, a)
		}
		m.Attachments = sent
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}
