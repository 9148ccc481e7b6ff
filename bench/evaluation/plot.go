package evaluation

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var protocolColors = map[string]color.Color{
	"none":       color.RGBA{R: 120, G: 120, B: 120, A: 255},
	"fulldet":    color.RGBA{R: 214, G: 96, B: 77, A: 255},
	"partialdet": color.RGBA{R: 67, G: 147, B: 195, A: 255},
}

func savePNG(w io.Writer, p *plot.Plot, width, height vg.Length) error {
	wt, err := p.WriterTo(width, height, "png")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

func appNames(res *Results) []string {
	var names []string
	for _, a := range res.Config.Apps {
		names = append(names, a.Name)
	}
	return names
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// plotOverhead draws the forward-path overhead against none, in percent,
// per application (groups) and protocol (bars).
func plotOverhead(w io.Writer, res *Results) error {
	p := plot.New()
	p.Title.Text = "Forward-path overhead vs none (median time per step)"
	p.Y.Label.Text = "overhead (%)"
	apps := appNames(res)
	var series []barSeries
	for _, proto := range []string{"fulldet", "partialdet"} {
		vals := make(plotter.Values, len(apps))
		for j, a := range apps {
			for _, s := range res.Summary {
				if s.App == a && s.Protocol == proto {
					vals[j] = 100 * finite(s.Overhead.Median)
				}
			}
		}
		series = append(series, barSeries{proto, protocolColors[proto], vals})
	}
	if err := addBars(p, vg.Points(22), series); err != nil {
		return err
	}
	p.Add(plotter.NewGrid())
	p.Y.Max *= 1.25 // room for the legend
	p.Legend.Top = true
	p.NominalX(apps...)
	return savePNG(w, p, 5*vg.Inch, 3.2*vg.Inch)
}

// barSeries is one bar per group of a bar chart, drawn beside the other
// series' bars of the group.
type barSeries struct {
	name  string
	color color.Color
	vals  plotter.Values
}

// addBars adds the series to p as bars of the given width, side by side
// in each group, with a legend entry each.
func addBars(p *plot.Plot, width vg.Length, series []barSeries) error {
	for i, s := range series {
		bars, err := plotter.NewBarChart(s.vals, width)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		bars.Color = s.color
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(2*i-len(series)+1) / 2
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	return nil
}

// plotRecovery draws the recovery time, failure → progress at the
// failure regained, split into restore and catch-up, per application and
// protocol (restore over all survivors).
func plotRecovery(w io.Writer, res *Results) error {
	p := plot.New()
	p.Title.Text = "Recovery: failure → progress at the failure regained (restore spread: all)"
	p.Y.Label.Text = "ms"
	apps := appNames(res)
	width := vg.Points(18)
	for i, proto := range protocols {
		restore := make(plotter.Values, len(apps))
		catchUp := make(plotter.Values, len(apps))
		for j, a := range apps {
			for _, r := range res.Recovery {
				if r.App == a && r.Protocol == proto && r.Spread == 0 {
					restore[j] = finite(r.RestoreMS.Median)
					catchUp[j] = max(finite(r.RegainedMS.Median)-restore[j], 0)
				}
			}
		}
		rb, err := plotter.NewBarChart(restore, width)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		c := protocolColors[proto]
		rb.Color = darker(c)
		rb.LineStyle.Width = 0
		rb.Offset = width * vg.Length(2*i-len(protocols)+1) / 2
		pb, err := plotter.NewBarChart(catchUp, width)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		pb.Color = c
		pb.LineStyle.Width = 0
		pb.StackOn(rb)
		p.Add(rb, pb)
		p.Legend.Add(proto+" restore", rb)
		p.Legend.Add(proto+" catch-up", pb)
	}
	p.Add(plotter.NewGrid())
	p.Y.Max *= 1.6 // room for the legend
	p.Legend.Top = true
	p.NominalX(apps...)
	return savePNG(w, p, 6*vg.Inch, 4*vg.Inch)
}

func darker(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8(r >> 9), G: uint8(g >> 9), B: uint8(b >> 9), A: 255}
}

// phase colours of the timeline.
var phases = []struct {
	name  string
	color color.Color
}{
	{"forward", color.RGBA{R: 200, G: 200, B: 200, A: 255}},
	{"detection", color.RGBA{R: 230, G: 60, B: 60, A: 255}},
	{"restore", color.RGBA{R: 240, G: 160, B: 40, A: 255}},
	{"catch-up to the failure point", color.RGBA{R: 67, G: 147, B: 195, A: 255}},
}

// timelineApp is the application whose recovery the timeline shows:
// LeanMD if it was run (the paper's showcase), else the first.
func timelineApp(res *Results) string {
	apps := appNames(res)
	if slices.Contains(apps, "leanmd") {
		return "leanmd"
	}
	if len(apps) > 0 {
		return apps[0]
	}
	return ""
}

// plotTimeline draws one recovery per protocol (first repetition, restore
// over all survivors) on a common time axis from the job's start: forward
// progress, the kill, detection, restore, catch-up to the progress at the
// failure, the rest of the job, and the checkpoints as ticks.
func plotTimeline(w io.Writer, res *Results) error {
	app := timelineApp(res)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("One recovery of %s (PE 1 killed; time from job start)", app)
	p.X.Label.Text = "s"
	var names []string
	added := map[string]bool{}
	for row, proto := range protocols {
		names = append(names, proto)
		i := slices.IndexFunc(res.Runs, func(r Run) bool {
			return r.OK && r.App == app && r.Protocol == proto && r.Failure && r.Spread == 0
		})
		if i < 0 {
			continue
		}
		r := res.Runs[i]
		at := map[string]float64{}
		var ckpts []float64
		for _, e := range r.Events {
			if e.What == "checkpoint" {
				ckpts = append(ckpts, e.AtMS)
				continue
			}
			if _, ok := at[e.What]; !ok {
				at[e.What] = e.AtMS
			}
		}
		begin, okb := at["begin"]
		kill, okk := at["kill"]
		failed, okf := at["failed"]
		restored, okr := at["restored"]
		regained, okc := at["regained"]
		end := at["end"]
		if !(okb && okk && okf && okr && okc) {
			continue
		}
		y := float64(row)
		segs := []struct {
			phase    int
			from, to float64
		}{{0, begin, kill}, {1, kill, failed}, {2, failed, restored}, {3, restored, regained}, {0, regained, end}}
		for _, s := range segs {
			if s.to <= s.from {
				continue
			}
			x0, x1 := (s.from-begin)/1000, (s.to-begin)/1000
			poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - 0.3}, {X: x1, Y: y - 0.3}, {X: x1, Y: y + 0.3}, {X: x0, Y: y + 0.3}})
			if err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			poly.Color = phases[s.phase].color
			poly.LineStyle.Width = 0
			p.Add(poly)
			if name := phases[s.phase].name; !added[name] {
				added[name] = true
				p.Legend.Add(name, poly)
			}
		}
		for _, c := range ckpts {
			if c < begin {
				continue
			}
			x := (c - begin) / 1000
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y - 0.4}, {X: x, Y: y + 0.4}})
			if err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			l.LineStyle.Width = vg.Points(1.5)
			l.LineStyle.Color = color.Black
			p.Add(l)
			if !added["checkpoint"] {
				added["checkpoint"] = true
				p.Legend.Add("checkpoint committed", l)
			}
		}
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.7, float64(len(protocols))+0.9 // room for the legend
	p.Legend.Top = true
	return savePNG(w, p, 7*vg.Inch, 3*vg.Inch)
}
