//go:build ignore

// Renders the installable web UI's icons (web/public/icons/icon-*.png) from the same drawing as
// icon.svg: two white rings on a full-bleed blue square, inside the maskable safe zone.
// Run from web/: go run icongen/main.go
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
)

func main() {
	for _, size := range []int{192, 512} {
		if err := render(size, fmt.Sprintf("public/icons/icon-%d.png", size)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// render draws the 512-unit design at size pixels, 4×4 samples per pixel.
func render(size int, path string) error {
	blue := color.RGBA{0x25, 0x63, 0xeb, 0xff}
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	scale := 512 / float64(size)
	const n = 4
	for y := range size {
		for x := range size {
			hits := 0
			for sy := range n {
				for sx := range n {
					ux := (float64(x) + (float64(sx)+0.5)/n) * scale
					uy := (float64(y) + (float64(sy)+0.5)/n) * scale
					if ring(ux, uy, 211) || ring(ux, uy, 301) {
						hits++
					}
				}
			}
			a := float64(hits) / (n * n)
			mix := func(c uint8) uint8 { return uint8(math.Round(float64(c)*(1-a) + 255*a)) }
			img.Set(x, y, color.RGBA{mix(blue.R), mix(blue.G), mix(blue.B), 0xff})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ring reports whether (x, y) is on a ring of radius 72 and width 34 centred at (cx, 256).
func ring(x, y, cx float64) bool {
	d := math.Hypot(x-cx, y-256)
	return d >= 72-17 && d <= 72+17
}
