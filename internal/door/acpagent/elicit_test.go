package acpagent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/client"
)

func TestAnMCPRequestReachesTheEditorOnlyWhenAChoiceAnswersIt(t *testing.T) {
	tests := []struct {
		name   string
		e      client.Elicitation
		offers string // option id=action:content, in order; "" when the editor is not asked
	}{
		{"a link is opened or declined",
			client.Elicitation{Mode: "url", URL: "https://auth.example.com/x", Domain: "auth.example.com"},
			"tandem-open=accept:null tandem-decline=decline:null"},
		{"a form with nothing to fill in is accepted or declined",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
			"tandem-accept=accept:{} tandem-decline=decline:null"},
		{"one yes/no field is two answers",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","title":"Proceed"}}}`)},
			`tandem-yes=accept:{"ok":true} tandem-no=accept:{"ok":false} tandem-decline=decline:null`},
		{"one pick from an enum is one answer per value",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"db":{"type":"string","enum":["pg","sqlite"],"enumNames":["Postgres","SQLite"]}}}`)},
			`tandem-pick-0=accept:{"db":"pg"} tandem-pick-1=accept:{"db":"sqlite"} tandem-decline=decline:null`},
		{"one pick from titled constants keeps their values",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","oneOf":[{"const":1,"title":"One"},{"const":2,"title":"Two"}]}}}`)},
			`tandem-pick-0=accept:{"n":1} tandem-pick-1=accept:{"n":2} tandem-decline=decline:null`},
		{"a text field stays in the pending list",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}, ""},
		{"two fields stay in the pending list",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"}}}`)}, ""},
		{"an unreadable schema stays in the pending list",
			client.Elicitation{Mode: "form", RequestedSchema: json.RawMessage(`[1]`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range elicitationChoices(tt.e) {
				content, _ := json.Marshal(c.content)
				got = append(got, string(c.option.OptionId)+"="+c.action+":"+string(content))
			}
			if strings.Join(got, " ") != tt.offers {
				t.Errorf("offers\n  %s\nwant\n  %s", strings.Join(got, " "), tt.offers)
			}
		})
	}
}
