package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"
)

// VAPID is the application server's identity (RFC 8292): a P-256 key pair whose public half the
// browser subscribes with, so that the push service accepts only messages this server signs.
type VAPID struct {
	key *ecdsa.PrivateKey
	// Subject is the contact the JWT's "sub" names (a mailto: or https: URL, RFC 8292 §2.1).
	Subject string
}

// DefaultSubject is the contact named when none is configured and the server has no public https
// address (SubjectFor): tandem's home page. Push services want a contact they could reach; Apple's
// refuses one at localhost (403 BadJwtToken), which is what a made-up mailto: tends to be.
const DefaultSubject = "https://github.com/tandem-dev/tandem"

// SubjectFor is the contact a server names when none is configured: its own origin when that is
// an https address other machines can reach (the push service can then find who runs it), else
// DefaultSubject.
func SubjectFor(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "https" || u.Host == "" || LocalSubject("https://"+u.Host) {
		return DefaultSubject
	}
	return "https://" + u.Host
}

// LocalSubject reports whether subject names this machine or a private name (localhost, a
// loopback or private address, .local, .internal, .invalid, .test, .example): a contact push
// services cannot reach, which Apple's refuses.
func LocalSubject(subject string) bool {
	var host string
	if addr, ok := strings.CutPrefix(subject, "mailto:"); ok {
		_, host, _ = strings.Cut(addr, "@")
		host, _, _ = strings.Cut(host, "?")
	} else if u, err := url.Parse(subject); err == nil {
		host = u.Hostname()
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || !strings.Contains(host, ".") {
		return true // localhost, a bare name, or nothing at all
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".invalid", ".test", ".example", ".lan", ".home.arpa"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// jwtLifetime is how long a signature is valid; RFC 8292 §2 allows at most 24 hours.
const jwtLifetime = 12 * time.Hour

// GenerateVAPID makes a new key pair.
func GenerateVAPID() (*VAPID, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &VAPID{key: key, Subject: DefaultSubject}, nil
}

// ParseVAPID reads a key pair stored with Marshal.
func ParseVAPID(der []byte) (*VAPID, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("webpush: stored VAPID key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, errors.New("webpush: stored VAPID key is not a P-256 ECDSA key")
	}
	return &VAPID{key: key, Subject: DefaultSubject}, nil
}

// Marshal encodes the private key (PKCS #8) for storage.
func (v *VAPID) Marshal() ([]byte, error) { return x509.MarshalPKCS8PrivateKey(v.key) }

// PublicKey is the public key as the browser's PushManager.subscribe wants it
// (applicationServerKey): the uncompressed point, base64url.
func (v *VAPID) PublicKey() string {
	pub, err := v.key.PublicKey.ECDH()
	if err != nil {
		panic("webpush: a P-256 key has no ECDH form: " + err.Error()) // cannot happen for P-256
	}
	return b64.EncodeToString(pub.Bytes())
}

// Authorization is the header value that identifies this server to the push service of endpoint:
// `vapid t=<ES256 JWT>, k=<public key>` (RFC 8292 §3).
func (v *VAPID) Authorization(endpoint string, now time.Time) (string, error) {
	aud, err := audience(endpoint)
	if err != nil {
		return "", err
	}
	subject := v.Subject
	if subject == "" {
		subject = DefaultSubject
	}
	header := b64.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`))
	claims, err := json.Marshal(map[string]any{"aud": aud, "exp": now.Add(jwtLifetime).Unix(), "sub": subject})
	if err != nil {
		return "", err
	}
	signing := header + "." + b64.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, v.key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // JWS ES256: R and S as 32-byte big-endian integers, not ASN.1
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return "vapid t=" + signing + "." + b64.EncodeToString(sig) + ", k=" + v.PublicKey(), nil
}

// audience is the origin of a push endpoint, the JWT's "aud".
func audience(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("webpush: endpoint %q is not an http(s) URL", endpoint)
	}
	return u.Scheme + "://" + u.Host, nil
}

// VerifyAuthorization checks a VAPID Authorization header the way a push service does: the JWT is
// signed by the key k names, its audience is endpoint's origin, and it expires within 24 hours.
// It returns the public key, which a push service compares with the subscription's.
func VerifyAuthorization(header, endpoint string, now time.Time) (string, error) {
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return "", errors.New("not a vapid Authorization")
	}
	params := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		params[k] = v
	}
	token, key := params["t"], params["k"]
	raw, err := decode64(key)
	if err != nil {
		return "", fmt.Errorf("k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", fmt.Errorf("k: %w", err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("t: not a JWT")
	}
	var head struct{ Alg string }
	if err := decodeJSON(parts[0], &head); err != nil || head.Alg != "ES256" {
		return "", errors.New("t: header is not ES256")
	}
	sig, err := decode64(parts[2])
	if err != nil || len(sig) != 64 {
		return "", errors.New("t: signature is not 64 bytes")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("t: bad signature")
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := decodeJSON(parts[1], &claims); err != nil {
		return "", fmt.Errorf("t: claims: %w", err)
	}
	aud, err := audience(endpoint)
	if err != nil {
		return "", err
	}
	if claims.Aud != aud {
		return "", fmt.Errorf("t: aud %q, want %q", claims.Aud, aud)
	}
	exp := time.Unix(claims.Exp, 0)
	if !exp.After(now) || exp.After(now.Add(24*time.Hour)) {
		return "", fmt.Errorf("t: exp %s is not within the next 24 hours", exp.UTC())
	}
	if !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https:") {
		return "", fmt.Errorf("t: sub %q is not a mailto: or https: URL", claims.Sub)
	}
	return key, nil
}

func decodeJSON(part string, v any) error {
	raw, err := decode64(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
