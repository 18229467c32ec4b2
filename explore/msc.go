package explore

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// Layout of the message-sequence chart.
const (
	lane   = 96 // px between node lanes
	row    = 26 // px per step
	left   = 60 // px before the first lane
	header = 40 // px above step 0
)

// msc draws the path as a message-sequence chart: a lane per node, a row
// per step, an arrow from the step that sent a message to the step that
// delivered (or dropped) it, and marks for timers, crashes, restarts and
// cuts. The step that sent a message is the latest one before its delivery
// whose handler sent it (step 0: the nodes' Init).
func msc(path []*step, addrs []node.Addr) []byte {
	x := map[node.Addr]int{}
	for i, a := range addrs {
		x[a] = left + lane/2 + i*lane
	}
	y := func(i int) int { return header + row/2 + i*row }
	w, h := left+len(addrs)*lane, header+(len(path)+1)*row
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="context-stroke"/></marker></defs>`)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>`)
	for _, a := range addrs {
		fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-weight="bold">%s</text>`, x[a], esc(string(a)))
		fmt.Fprintf(&b, `<line x1="%d" y1="28" x2="%d" y2="%d" stroke="#bbb"/>`, x[a], x[a], h)
	}
	sentAt := map[uint64][]int{} // envelope hash -> steps that sent it
	init := path[0].st
	for _, e := range init.Network() {
		sentAt[e.Hash()] = []int{0}
	}
	init.StreamMessages(func(e mc.Envelope) { sentAt[e.Hash()] = []int{0} })
	for i, s := range path {
		yi := y(i)
		fmt.Fprintf(&b, `<text x="4" y="%d" fill="#888">%d</text>`, yi+4, i)
		if s.pred != "" {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f44" opacity="0.15"><title>%s: %s</title></rect>`,
				left, yi-row/2, w-left, row, esc(s.pred), esc(s.why))
		}
		if s.parent == nil {
			continue
		}
		e := s.ev
		title := esc(fmt.Sprintf("%d. %v", i, e))
		switch e.Kind {
		case mc.Deliver, mc.Duplicate, mc.StreamIn, mc.Drop:
			from := 0
			if ss := sentAt[e.Env.Hash()]; len(ss) > 0 {
				from = ss[len(ss)-1]
			}
			color := map[mc.EventKind]string{mc.Deliver: "#1565c0", mc.Duplicate: "#6a1b9a", mc.StreamIn: "#2e7d32", mc.Drop: "#c62828"}[e.Kind]
			x1, x2 := x[e.Env.From], x[e.Env.To]
			if e.Kind == mc.Drop {
				x2 = (x1 + x2) / 2
			}
			dash := ""
			if e.Kind == mc.StreamIn {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(&b, `<g class="msg"><title>%s</title><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"%s marker-end="url(#arrow)"/>`,
				title, x1, y(from), x2, yi, color, dash)
			if e.Kind == mc.Drop {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s" text-anchor="middle" font-size="14">✕</text>`, x2, yi+5, color)
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s" text-anchor="middle">%s</text></g>`, (x1+x2)/2, yi-3, color, esc(short(mc.Describe(e.Env.Msg))))
		default:
			mark := map[mc.EventKind]string{mc.Fire: "⏰", mc.Crash: "💥", mc.Restart: "↻", mc.Partition: "✂", mc.Heal: "⚕"}[e.Kind]
			label := e.Kind.String()
			if e.Kind == mc.Fire {
				label = short(mc.Describe(e.T))
			}
			fmt.Fprintf(&b, `<g class="local"><title>%s</title><circle cx="%d" cy="%d" r="4" fill="#ef6c00"/><text x="%d" y="%d">%s %s</text></g>`,
				title, x[e.Node], yi, x[e.Node]+7, yi+4, mark, esc(label))
		}
		for _, env := range append(append([]mc.Envelope(nil), s.sent.Sends...), s.sent.Streams...) {
			sentAt[env.Hash()] = append(sentAt[env.Hash()], i)
		}
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// short is the head of a description: its type name, or 28 characters.
func short(d string) string {
	if i := strings.IndexAny(d, "{( "); i > 0 {
		d = d[:i]
	}
	if r := []rune(d); len(r) > 28 {
		d = string(r[:27]) + "…"
	}
	return d
}

func esc(s string) string { return html.EscapeString(s) }
