package webpush

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

// The example of RFC 8291 Appendix A, its line breaks removed.
var rfc8291 = struct {
	plaintext, asPrivate, asPublic, uaPrivate, uaPublic, salt, auth, body string
}{
	plaintext: "When I grow up, I want to be a watermelon",
	asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
	asPublic:  "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
	uaPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
	uaPublic:  "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
	salt:      "DGv6ra1nlYgDCS1FRnbzlw",
	auth:      "BTBZMqHH6r4Tts7J_aSIgg",
	body:      "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := decode64(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b
}

func TestRFC8291Example(t *testing.T) {
	as, err := ecdh.P256().NewPrivateKey(mustB64(t, rfc8291.asPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := b64.EncodeToString(as.PublicKey().Bytes()); got != rfc8291.asPublic {
		t.Fatalf("as_public = %s, want %s", got, rfc8291.asPublic)
	}
	ua, err := ecdh.P256().NewPrivateKey(mustB64(t, rfc8291.uaPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := b64.EncodeToString(ua.PublicKey().Bytes()); got != rfc8291.uaPublic {
		t.Fatalf("ua_public = %s, want %s", got, rfc8291.uaPublic)
	}
	auth := mustB64(t, rfc8291.auth)

	t.Run("encrypting with the example's sender key and salt gives its message byte for byte", func(t *testing.T) {
		got, err := encrypt([]byte(rfc8291.plaintext), ua.PublicKey(), auth, as, mustB64(t, rfc8291.salt), 0)
		if err != nil {
			t.Fatal(err)
		}
		if b64.EncodeToString(got) != rfc8291.body {
			t.Errorf("message\n got %s\nwant %s", b64.EncodeToString(got), rfc8291.body)
		}
	})
	t.Run("the example's message decrypts with the user agent's key", func(t *testing.T) {
		got, err := Decrypt(ua, auth, mustB64(t, rfc8291.body))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != rfc8291.plaintext {
			t.Errorf("plaintext = %q", got)
		}
	})
}

// subscriber is a browser's side of a subscription, generated independently of the sender.
type subscriber struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newSubscriber(t *testing.T) subscriber {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	if _, err := rand.Read(auth); err != nil {
		t.Fatal(err)
	}
	return subscriber{key: key, auth: auth}
}

func (s subscriber) keys() Keys {
	return Keys{P256dh: b64.EncodeToString(s.key.PublicKey().Bytes()), Auth: b64.EncodeToString(s.auth)}
}

func TestEncryptDecrypt(t *testing.T) {
	sub := newSubscriber(t)
	msg := []byte(`{"title":"Run this command?","body":"git push origin main"}`)
	tests := []struct {
		name  string
		padTo int
	}{
		{"a message without padding decrypts to itself", 0},
		{"a padded message decrypts to itself without the padding", 1024},
		{"padding beyond one record is capped at the record", 10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := Encrypt(sub.keys(), msg, tt.padTo)
			if err != nil {
				t.Fatal(err)
			}
			if want := headerLen + max(min(tt.padTo, MaxPlaintext), len(msg)) + 1 + 16; len(body) != want {
				t.Errorf("len = %d, want %d", len(body), want)
			}
			got, err := Decrypt(sub.key, sub.auth, body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Errorf("decrypted %q", got)
			}
		})
	}

	t.Run("two encryptions of one message differ (fresh key and salt)", func(t *testing.T) {
		a, _ := Encrypt(sub.keys(), msg, 0)
		b, _ := Encrypt(sub.keys(), msg, 0)
		if bytes.Equal(a, b) {
			t.Error("identical ciphertexts")
		}
	})
	t.Run("another subscriber's key cannot open it", func(t *testing.T) {
		body, _ := Encrypt(sub.keys(), msg, 0)
		other := newSubscriber(t)
		if _, err := Decrypt(other.key, sub.auth, body); err == nil {
			t.Error("decrypted with the wrong key")
		}
		if _, err := Decrypt(sub.key, other.auth, body); err == nil {
			t.Error("decrypted with the wrong auth secret")
		}
	})
	t.Run("a flipped ciphertext bit is refused", func(t *testing.T) {
		body, _ := Encrypt(sub.keys(), msg, 0)
		body[len(body)-20] ^= 1
		if _, err := Decrypt(sub.key, sub.auth, body); err == nil {
			t.Error("tampered message decrypted")
		}
	})
	t.Run("a message larger than one record is refused", func(t *testing.T) {
		if _, err := Encrypt(sub.keys(), make([]byte, MaxPlaintext+1), 0); err == nil {
			t.Error("no error")
		}
	})
	t.Run("malformed subscription keys are refused with the field named", func(t *testing.T) {
		for _, k := range []Keys{
			{P256dh: "not*base64", Auth: sub.keys().Auth},
			{P256dh: b64.EncodeToString([]byte("short")), Auth: sub.keys().Auth},
			{P256dh: sub.keys().P256dh, Auth: b64.EncodeToString([]byte("8 bytes!"))},
		} {
			if _, err := Encrypt(k, msg, 0); err == nil || !strings.Contains(err.Error(), "keys.") {
				t.Errorf("%+v: err = %v", k, err)
			}
		}
	})
}

func TestVAPID(t *testing.T) {
	v, err := GenerateVAPID()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	endpoint := "https://push.example.net/wpush/v2/abc"
	header, err := v.Authorization(endpoint, now)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a push service verifies the signature and gets the subscribed key", func(t *testing.T) {
		key, err := VerifyAuthorization(header, endpoint, now)
		if err != nil {
			t.Fatal(err)
		}
		if key != v.PublicKey() {
			t.Errorf("k = %s, want %s", key, v.PublicKey())
		}
		if raw := mustB64(t, key); len(raw) != 65 || raw[0] != 4 {
			t.Errorf("k is not an uncompressed point: %x", raw)
		}
	})
	t.Run("the key survives storage", func(t *testing.T) {
		der, err := v.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseVAPID(der)
		if err != nil {
			t.Fatal(err)
		}
		if back.PublicKey() != v.PublicKey() {
			t.Error("public key changed")
		}
		h, err := back.Authorization(endpoint, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyAuthorization(h, endpoint, now); err != nil {
			t.Error(err)
		}
	})
	t.Run("another origin's push service refuses it", func(t *testing.T) {
		if _, err := VerifyAuthorization(header, "https://other.example.org/x", now); err == nil {
			t.Error("accepted for another audience")
		}
	})
	t.Run("it is refused once expired", func(t *testing.T) {
		if _, err := VerifyAuthorization(header, endpoint, now.Add(13*time.Hour)); err == nil {
			t.Error("accepted after exp")
		}
	})
	t.Run("a signature by another key is refused", func(t *testing.T) {
		other, _ := GenerateVAPID()
		forged := strings.Replace(header, "k="+v.PublicKey(), "k="+other.PublicKey(), 1)
		if _, err := VerifyAuthorization(forged, endpoint, now); err == nil {
			t.Error("accepted a signature under another key")
		}
	})
}
