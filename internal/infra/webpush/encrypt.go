// Package webpush sends Web Push messages to browsers that subscribed to tandem's web UI: the
// message encryption of RFC 8291 in the aes128gcm content coding of RFC 8188, the VAPID
// identification of RFC 8292, the subscriptions and the single-use action tokens a notification's
// buttons answer with. Everything is the standard library: crypto/ecdh, crypto/hkdf, AES-GCM.
package webpush

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// recordSize is the rs of the one record every message is (RFC 8188 §2); RFC 8291 §4 requires
// a single record, and push services accept at least 4096 bytes.
const recordSize = 4096

// headerLen is salt (16) + rs (4) + idlen (1) + keyid (the sender's 65-byte public key).
const headerLen = 16 + 4 + 1 + 65

// MaxPlaintext is the most a message can carry: one 4096-byte record minus the header, the
// padding delimiter and the AES-GCM tag.
const MaxPlaintext = recordSize - headerLen - 1 - 16

// Keys are a subscription's keys as PushSubscription.toJSON() gives them: the browser's P-256
// public key (uncompressed point) and its 16-byte authentication secret, both base64url.
type Keys struct {
	P256dh string `json:"p256dh" required:"true" description:"The browser's P-256 ECDH public key, base64url (PushSubscription.getKey('p256dh'))."`
	Auth   string `json:"auth" required:"true" description:"The 16-byte authentication secret, base64url (PushSubscription.getKey('auth'))."`
}

// parse decodes and checks the keys.
func (k Keys) parse() (*ecdh.PublicKey, []byte, error) {
	pub, err := decode64(k.P256dh)
	if err != nil {
		return nil, nil, fmt.Errorf("keys.p256dh: %w", err)
	}
	ua, err := ecdh.P256().NewPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("keys.p256dh: not an uncompressed P-256 point: %w", err)
	}
	auth, err := decode64(k.Auth)
	if err != nil {
		return nil, nil, fmt.Errorf("keys.auth: %w", err)
	}
	if len(auth) != 16 {
		return nil, nil, fmt.Errorf("keys.auth: %d bytes, want 16", len(auth))
	}
	return ua, auth, nil
}

// Encrypt encrypts plaintext to a subscription's keys (RFC 8291) as one aes128gcm record, with a
// fresh sender key pair and salt. padTo pads the plaintext to at least that many bytes, so that a
// message's length says less about what it holds.
func Encrypt(k Keys, plaintext []byte, padTo int) ([]byte, error) {
	ua, auth, err := k.parse()
	if err != nil {
		return nil, err
	}
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return encrypt(plaintext, ua, auth, as, salt, padTo)
}

// encrypt is Encrypt with the sender's key and the salt given (the RFC's example fixes both).
func encrypt(plaintext []byte, ua *ecdh.PublicKey, auth []byte, as *ecdh.PrivateKey, salt []byte, padTo int) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return nil, fmt.Errorf("webpush: message of %d bytes exceeds %d", len(plaintext), MaxPlaintext)
	}
	padTo = min(max(padTo, len(plaintext)), MaxPlaintext)
	gcm, nonce, err := contentKeys(as, ua, as.PublicKey(), ua, auth, salt)
	if err != nil {
		return nil, err
	}
	asPub := as.PublicKey().Bytes()
	out := make([]byte, 0, headerLen+padTo+1+gcm.Overhead())
	out = append(out, salt...)
	out = binary.BigEndian.AppendUint32(out, recordSize)
	out = append(out, byte(len(asPub)))
	out = append(out, asPub...)
	record := make([]byte, 0, padTo+1)
	record = append(record, plaintext...)
	record = append(record, 0x02) // the delimiter of the last (and only) record
	record = append(record, make([]byte, padTo-len(plaintext))...)
	return gcm.Seal(out, nonce, record, nil), nil
}

// contentKeys derives the AES-GCM key and nonce of RFC 8291 §3.4 and RFC 8188 §2.2: own is this
// side's private key, peer the other side's public key; asPub and uaPub name the two roles.
func contentKeys(own *ecdh.PrivateKey, peer, asPub, uaPub *ecdh.PublicKey, auth, salt []byte) (cipher.AEAD, []byte, error) {
	shared, err := own.ECDH(peer)
	if err != nil {
		return nil, nil, err
	}
	prkKey, err := hkdf.Extract(sha256.New, shared, auth)
	if err != nil {
		return nil, nil, err
	}
	keyInfo := "WebPush: info\x00" + string(uaPub.Bytes()) + string(asPub.Bytes())
	ikm, err := hkdf.Expand(sha256.New, prkKey, keyInfo, 32)
	if err != nil {
		return nil, nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, err
	}
	return gcm, nonce, nil
}

// Decrypt opens a message with the subscriber's private key and authentication secret: what a
// browser does when a push arrives. tandem never receives pushes; the tests' push services and
// anyone writing a native receiver do.
func Decrypt(ua *ecdh.PrivateKey, auth, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("webpush: message shorter than its header")
	}
	salt, rs, idLen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if rs < 18 {
		return nil, fmt.Errorf("webpush: record size %d is below 18", rs)
	}
	if len(body) < 21+idLen {
		return nil, errors.New("webpush: message shorter than its key ID")
	}
	as, err := ecdh.P256().NewPublicKey(body[21 : 21+idLen])
	if err != nil {
		return nil, fmt.Errorf("webpush: key ID is not the sender's P-256 public key: %w", err)
	}
	ct := body[21+idLen:]
	if uint32(len(ct)) > rs {
		return nil, fmt.Errorf("webpush: %d bytes of ciphertext in more than one %d-byte record", len(ct), rs)
	}
	gcm, nonce, err := contentKeys(ua, as, as, ua.PublicKey(), auth, salt)
	if err != nil {
		return nil, err
	}
	record, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("webpush: %w", err)
	}
	record = bytes.TrimRight(record, "\x00")
	if len(record) == 0 || record[len(record)-1] != 0x02 {
		return nil, errors.New("webpush: the record does not end with the last-record delimiter")
	}
	return record[:len(record)-1], nil
}

var b64 = base64.RawURLEncoding

// decode64 accepts base64url with or without padding (browsers omit it, some libraries add it).
func decode64(s string) ([]byte, error) {
	b, err := b64.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, errors.New("not base64url")
	}
	return b, nil
}
