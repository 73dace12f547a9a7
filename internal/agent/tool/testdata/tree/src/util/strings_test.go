package main

import "testing"

func TestReverse(t *testing.T) {
	if Reverse("ab") != "ba" {
		t.Fatal("Reverse is wrong")
	}
}
