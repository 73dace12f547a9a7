package qr

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

const link = "http://192.168.1.20:4096/pair#q8Zt3pS0cM1oW7yXbV2nRk4eHf6uJa9L"

func TestSVGIsAWellFormedSquareCode(t *testing.T) {
	svg, err := SVG(link)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"svg"`
		ViewBox string   `xml:"viewBox,attr"`
		Path    struct {
			D string `xml:"d,attr"`
		} `xml:"path"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, svg)
	}
	var n1, n2 int
	if _, err := fmt.Sscanf(doc.ViewBox, "0 0 %d %d", &n1, &n2); err != nil || n1 != n2 || n1 < 21+8 {
		t.Fatalf("viewBox %q: want a square of at least a version 1 code and its quiet zone", doc.ViewBox)
	}
	if strings.Count(doc.Path.D, "M") < 50 {
		t.Fatalf("the path draws only %d runs", strings.Count(doc.Path.D, "M"))
	}
}

func TestTerminalDrawsHalfBlocksOnly(t *testing.T) {
	text, err := Terminal(link)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) < 15 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, r := range text {
		if !strings.ContainsRune(" █▀▄\n", r) {
			t.Fatalf("unexpected rune %q in\n%s", r, text)
		}
	}
}

func TestATooLongTextIsAnError(t *testing.T) {
	if _, err := SVG(strings.Repeat("x", 5000)); err == nil {
		t.Fatal("a 5000-byte text made a code")
	}
}
