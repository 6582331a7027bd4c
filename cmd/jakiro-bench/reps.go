package main

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Every point in results/ is the median of e.Reps repetitions, taken
// interleaved (each repetition runs every point once, in turn), so slow
// drifts of a shared machine spread over all points alike; the CSVs and
// figures show the minimum and maximum beside the median.

// spread is a point's repetitions summarised.
type spread struct {
	Med, Min, Max float64
	N             int
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Med: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// cols are a spread's CSV columns, named after what was measured.
func spreadCols(name string) []string {
	return []string{name, name + "_min", name + "_max"}
}

func (s spread) vals() []any { return []any{s.Med, s.Min, s.Max} }

// String is "median (min–max)" for logs.
func (s spread) String() string { return fmt.Sprintf("%.3f (%.3f–%.3f)", s.Med, s.Min, s.Max) }

// addSpread adds a median point with its min–max to a series.
func (s *series) addSpread(x float64, sp spread) {
	s.add(x, sp.Med)
	s.Lo, s.Hi = append(s.Lo, sp.Min), append(s.Hi, sp.Max)
}

// rangeBars draws a vertical min–max bar at each point of a series,
// shifted by Offset (a grouped bar's place in its group).
type rangeBars struct {
	X, Lo, Hi []float64
	Offset    vg.Length
	Color     color.Color
}

// Plot implements plot.Plotter.
func (r rangeBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: r.Color, Width: vg.Points(1)}
	if r.Color == nil {
		ls.Color = color.Black
	}
	cap := vg.Points(3)
	for i := range r.X {
		x := trX(r.X[i]) + r.Offset
		lo, hi := trY(r.Lo[i]), trY(r.Hi[i])
		c.StrokeLine2(ls, x, lo, x, hi)
		c.StrokeLine2(ls, x-cap, lo, x+cap, lo)
		c.StrokeLine2(ls, x-cap, hi, x+cap, hi)
	}
}
