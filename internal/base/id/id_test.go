package id

import (
	"sort"
	"testing"
	"time"
)

func TestSource(t *testing.T) {
	fixed := time.UnixMilli(1795289471935)
	t.Run("ascending IDs made in one millisecond sort in creation order", func(t *testing.T) {
		s := &Source{now: func() time.Time { return fixed }}
		var ids []string
		for range 100 {
			ids = append(ids, s.New(Message))
		}
		if !sort.StringsAreSorted(ids) {
			t.Fatalf("ids not sorted: %v", ids[:5])
		}
	})
	t.Run("descending IDs sort newest first", func(t *testing.T) {
		s := &Source{now: func() time.Time { return fixed }}
		a, b := s.NewDescending(Session), s.NewDescending(Session)
		if !(b < a) {
			t.Fatalf("want %s < %s", b, a)
		}
	})
	t.Run("an ID has OpenCode's layout and is valid", func(t *testing.T) {
		got := NewSource().New(Permission)
		if len(got) != len("per_")+timeHexLen+randomLen {
			t.Fatalf("len(%q) = %d", got, len(got))
		}
		if !Valid(Permission, got) {
			t.Fatalf("Valid(%q) = false", got)
		}
	})
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"an OpenCode session ID is valid", "ses_e0068b435ffeUYS70u0Zru3595", true},
		{"a word without prefix is not", "bogus", false},
		{"another prefix is not", "msg_1ff974c59001", false},
		{"a bare prefix is not", "ses_", false},
		{"punctuation is not", "ses_abc/../x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Valid(Session, tc.in); got != tc.want {
				t.Fatalf("Valid(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
