package main

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one line (or one bar set) of a figure; Lo and Hi, when set,
// are each point's min and max over repetitions (Y their median).
type series struct {
	Name   string
	X, Y   []float64
	Lo, Hi []float64
}

func (s *series) add(x, y float64) { s.X, s.Y = append(s.X, x), append(s.Y, y) }

func (s series) xys() plotter.XYs {
	xy := make(plotter.XYs, len(s.X))
	for i := range s.X {
		xy[i].X, xy[i].Y = s.X[i], s.Y[i]
	}
	return xy
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// headroom leaves the top quarter for the legend.
func headroom(p *plot.Plot, ss []series) {
	top := 0.0
	for _, s := range ss {
		for _, y := range append(s.Y, s.Hi...) {
			top = math.Max(top, y)
		}
	}
	if top > 0 {
		p.Y.Max = top * 1.35
	}
}

func save(p *plot.Plot, path string) error { return p.Save(7*vg.Inch, 4.5*vg.Inch, path) }

// linePlot draws lines with points; logX for doubling sweeps.
func linePlot(path, title, xl, yl string, ss []series, logX bool) error {
	p := newPlot(title, xl, yl)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Min = 0
	headroom(p, ss)
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys())
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
		if len(s.Lo) == len(s.X) {
			p.Add(rangeBars{X: s.X, Lo: s.Lo, Hi: s.Hi, Color: plotutil.Color(i)})
		}
	}
	return save(p, path)
}

// cdfPlot draws cumulative distributions: X latency (µs), Y probability.
func cdfPlot(path, title, xl string, ss []series, logX bool) error {
	p := newPlot(title, xl, "cumulative probability")
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Min, p.Y.Max = 0, 1
	for i, s := range ss {
		l, err := plotter.NewLine(s.xys())
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 3)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	return save(p, path)
}

// barPlot draws grouped bars: one group per label, one bar per series.
func barPlot(path, title, yl string, labels []string, ss []series) error {
	p, err := barPanel(title, yl, labels, ss)
	if err != nil {
		return err
	}
	return save(p, path)
}

// barPanels draws bar panels side by side, each 6 inches wide.
func barPanels(path string, ps ...*plot.Plot) error { return plotGrid(path, [][]*plot.Plot{ps}) }

// plotGrid draws rows of panels, each 6 by 4.5 inches.
func plotGrid(path string, rows [][]*plot.Plot) error {
	w, h := vg.Length(len(rows[0]))*6*vg.Inch, vg.Length(len(rows))*4.5*vg.Inch
	img := vgimg.New(w, h)
	tiles := draw.Tiles{Rows: len(rows), Cols: len(rows[0]), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	cs := plot.Align(rows, tiles, draw.New(img))
	for i, row := range rows {
		for j, p := range row {
			p.Draw(cs[i][j])
		}
	}
	return savePNG(img, path)
}

// barPanel is barPlot's figure, not yet saved.
func barPanel(title, yl string, labels []string, ss []series) (*plot.Plot, error) {
	p := newPlot(title, "", yl)
	w := vg.Points(math.Max(6, 60/float64(len(ss))))
	for i, s := range ss {
		b, err := plotter.NewBarChart(plotter.Values(s.Y), w)
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Color = color.Black
		b.Offset = w * vg.Length(float64(i)-float64(len(ss)-1)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if len(s.Lo) == len(s.Y) {
			xs := make([]float64, len(s.Y))
			for j := range xs {
				xs[j] = float64(j)
			}
			p.Add(rangeBars{X: xs, Lo: s.Lo, Hi: s.Hi, Offset: b.Offset})
		}
	}
	p.NominalX(labels...)
	headroom(p, ss)
	return p, nil
}
