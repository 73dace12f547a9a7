package bus

import (
	"encoding/json"
	"testing"
	"unsafe"
)

// TestAnEventsJSONIsHeldOnce checks that an event's instance envelope is the part of its global
// envelope it reads as (the replay ring holds the JSON once), and that appending to it leaves the
// global envelope as it was.
func TestAnEventsJSONIsHeldOnce(t *testing.T) {
	for _, dir := range []string{"", "/work/project \"quoted\""} {
		t.Run("directory "+dir, func(t *testing.T) {
			payload := []byte(`{"id":"evt_1","type":"x","properties":{"a":1}}`)
			instance, global := envelopes(dir, payload)
			if string(instance) != string(payload) {
				t.Fatalf("instance envelope %s, want %s", instance, payload)
			}
			var g struct {
				Directory string          `json:"directory"`
				Payload   json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(global, &g); err != nil || g.Directory != dir || string(g.Payload) != string(payload) {
				t.Fatalf("global envelope %s (%v)", global, err)
			}
			start := uintptr(unsafe.Pointer(unsafe.SliceData(global)))
			at := uintptr(unsafe.Pointer(unsafe.SliceData(instance)))
			if at < start || at+uintptr(len(instance)) > start+uintptr(len(global)) {
				t.Fatal("the instance envelope is a copy, not a part of the global one")
			}
			before := string(global)
			_ = append(instance, "tail"...)
			if string(global) != before {
				t.Fatalf("appending to the instance envelope changed the global one: %s", global)
			}
		})
	}
}
