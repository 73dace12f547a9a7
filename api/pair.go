package api

// PairRequest asks for a one-time pairing link (POST /auth/pair).
type PairRequest struct {
	TTL int    `json:"ttl,omitempty" description:"Seconds the link stays valid (default 300, at most 3600)."`
	URL string `json:"url,omitempty" description:"The server's address as the device will reach it (e.g. https://box.example or http://192.168.1.20:4096); default: the address this request was sent to."`
}

// Pairing is a one-time link that signs a device in (a phone).
type Pairing struct {
	URL     string `json:"url" description:"Opens the UI and signs the device in, once. The code is in the fragment, which browsers never send to a server."`
	Expires int64  `json:"expires" description:"When the link stops working, Unix milliseconds."`
	TTL     int    `json:"ttl" description:"Seconds the link is valid."`
	SVG     string `json:"svg" description:"The link as a QR code, an SVG document."`
}
