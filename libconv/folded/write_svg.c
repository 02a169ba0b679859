// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph writer: one self-contained interactive SVG, root on
 * top (an icicle, as py-spy draws it: inferno with Direction::Inverted,
 * docs/pyspy-formats.md §1.9).
 *
 * Stacks are merged into a tree whose siblings are sorted by name (a
 * flame graph, not a time line, like flamegraph.pl and inferno), and
 * each node becomes one `<g class="f ...">` holding a <title> tooltip
 * ("NAME (N samples, P%)", py-spy's wording), a <rect> and a <text>
 * label. The nodes carry their position in samples (data-s start, data-n
 * width, data-d depth) so the embedded script can zoom exactly without
 * reading pixels back. Nodes narrower than 0.1 px of the 1180 px plot are
 * left out, flamegraph.pl's and inferno's default --minwidth.
 *
 * Invariants: the same stacks give the same bytes (sorted siblings,
 * integer pixel arithmetic, colours from a hash of the function name);
 * every byte of input text is escaped (wout_xml); nothing is loaded from
 * outside the file.
 */
#include "writers.h"
#include "common/hash.h"

#include <errno.h>
#include <stdlib.h>


#define FG_WIDTH 1200
#define FG_PAD 10
#define FG_PLOT 1180	/* FG_WIDTH - 2 * FG_PAD */
#define FG_ROW 16	/* rect height 15 + 1 px gap */
#define FG_TOP 56	/* title row and legend above the frames */
#define FG_BOTTOM 34	/* details line below */
#define FG_CHAR100 725	/* monospace 12px advance ~ 0.6em, in 1/100 px */
#define FG_NONE UINT32_MAX

struct fg_node {
	u32 name;	 /* folder frame id; FG_NONE for the root "all" */
	u32 parent;
	u32 child;	 /* first child in name order */
	u32 sibling;	 /* next sibling in name order */
	u32 depth;
	u64 total;	 /* inclusive weight */
	u64 start;	 /* weight left of this node at its depth */
};

struct fg_tree {
	const struct perfspy_folder *f;
	struct fg_node *n;
	size_t nr, cap;
	struct htab tab; /* (parent, name) -> node (struct fg_slot) */
	bool ms; /* weights are milliseconds (--idle) */
};

struct fg_slot {
	u64 hash;
	u32 node;
};

struct fg_key {
	const struct fg_tree *t;
	u32 parent, name;
};

static u64 node_hash(u32 parent, u32 name)
{
	return hash_mix(((u64)parent << 32 | name) + 0x9e3779b97f4a7c15ULL);
}

static bool fg_eq(const void *ent, const void *key)
{
	const struct fg_key *k = key;
	const struct fg_node *n = &k->t->n[((const struct fg_slot *)ent)->node];

	return n->parent == k->parent && n->name == k->name;
}

static int fg_new_node(struct fg_tree *t, u32 parent, u32 name, u32 *out)
{
	struct fg_node *n;

	if (t->nr >= UINT32_MAX - 1 ||
	    ensure_mem((void **)&t->n, &t->cap, sizeof(*t->n), t->nr + 1))
		return -ENOMEM;
	n = &t->n[t->nr];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->child = n->sibling = FG_NONE;
	n->depth = parent == FG_NONE ? 0 : t->n[parent].depth + 1;
	*out = (u32)t->nr++;
	return 0;
}

/* The child @name of @parent, made if new. The root is never looked up,
 * so it has no entry. */
static int fg_child(struct fg_tree *t, u32 parent, u32 name, u32 *out)
{
	struct fg_key key = { t, parent, name };
	u64 h = node_hash(parent, name);
	struct fg_slot *s;
	int err = htab_reserve(&t->tab);

	if (err)
		return err;
	s = htab_probe(&t->tab, h, fg_eq, &key);
	if (htab_used(s)) {
		*out = s->node;
		return 0;
	}
	err = fg_new_node(t, parent, name, out);
	if (!err) {
		s->node = *out;
		htab_claim(&t->tab, s, h);
	}
	return err;
}

static int fg_build(struct fg_tree *t)
{
	size_t i, nr = perfspy_folder__nr_stacks(t->f);
	u32 root, cur, j, n;
	const u32 *ids;
	u64 count;
	int err = fg_new_node(t, FG_NONE, FG_NONE, &root);

	for (i = 0; !err && i < nr; i++) {
		fold_stack(t->f, i, &ids, &n, &count);
		cur = root;
		t->n[cur].total += count;
		for (j = 0; !err && j < n; j++) {
			err = fg_child(t, cur, ids[j], &cur);
			if (!err)
				t->n[cur].total += count;
		}
	}
	return err;
}

struct fg_sib {
	u32 parent, node;
	const char *name;
	u32 len;
};

static int cmp_sib(const void *a, const void *b)
{
	const struct fg_sib *x = a, *y = b;
	int c;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Link siblings in bytewise name order, then give each node its start:
 * parents have lower indices than their children, so one pass in index
 * order sees every parent placed before its children. */
static int fg_layout(struct fg_tree *t)
{
	struct fg_sib *s = xreallocarray(NULL, t->nr, sizeof(*s));
	size_t i, k = 0;
	u64 at;
	u32 c;

	if (!s)
		return -ENOMEM;
	for (i = 1; i < t->nr; i++)
		s[k++] = (struct fg_sib){ t->n[i].parent, (u32)i,
					  fold_name(t->f, t->n[i].name),
					  fold_name_len(t->f, t->n[i].name) };
	xqsort(s, k, sizeof(*s), cmp_sib);
	for (i = k; i-- > 0;) { /* prepend in reverse: lists end up sorted */
		t->n[s[i].node].sibling = t->n[s[i].parent].child;
		t->n[s[i].parent].child = s[i].node;
	}
	free(s);
	for (i = 0; i < t->nr; i++) {
		at = t->n[i].start;
		for (c = t->n[i].child; c != FG_NONE; c = t->n[c].sibling) {
			t->n[c].start = at;
			at += t->n[c].total;
		}
	}
	return 0;
}

/* flamegraph.pl's --minwidth 0.1 (px) on the 1180 px plot. */
static bool fg_drawn(const struct fg_tree *t, u32 i)
{
	return !i || (unsigned __int128)t->n[i].total * FG_PLOT * 10 >= t->n[0].total;
}

/* Pixels in 1/100 px for @v of the root's weight. */
static u64 fg_px100(const struct fg_tree *t, u64 v)
{
	u64 tot = t->n[0].total ? t->n[0].total : 1;

	return (u64)((unsigned __int128)v * FG_PLOT * 100 / tot);
}

static void put_px(struct wout *w, u64 px100)
{
	wout_fmt(w, "%llu.%02llu", (unsigned long long)(px100 / 100),
		 (unsigned long long)(px100 % 100));
}

/* Fill colour by kind (Python green, native warm, kernel blue, roots
 * grey), the shade from a hash of the function name so one function
 * keeps one colour across the graph, as flamegraph.pl's palettes do. */
static void put_fill(struct wout *w, const struct frame_parts *p, bool root)
{
	u64 h = hash_bytes(p->func, p->func_len, 0);
	unsigned a = (unsigned)(h & 0xff), b = (unsigned)(h >> 8 & 0xff),
		 c = (unsigned)(h >> 16 & 0xff);
	unsigned r, g, bl;

	if (root || frame_is_root(p->kind)) {
		r = g = bl = 196 + a * 30 / 255;
	} else if (p->kind == FRAME_PYTHON) {
		r = 60 + a * 70 / 255, g = 175 + b * 60 / 255, bl = 80 + c * 70 / 255;
	} else if (p->kind == FRAME_KERNEL) {
		r = 90 + a * 60 / 255, g = 140 + b * 50 / 255, bl = 215 + c * 40 / 255;
	} else {
		r = 215 + a * 40 / 255, g = 95 + b * 120 / 255, bl = 30 + c * 50 / 255;
	}
	wout_fmt(w, "rgb(%u,%u,%u)", r, g, bl);
}

static const char *kind_class(const struct frame_parts *p, bool root)
{
	if (root || frame_is_root(p->kind))
		return "rt";
	return p->kind == FRAME_PYTHON ? "py" : p->kind == FRAME_KERNEL ? "ker" : "nat";
}

/* Label fitted to the rect: whole, or cut with ".." (flamegraph.pl's
 * rule), or nothing under 3 characters. The script refits on zoom. */
static void put_label(struct wout *w, const char *s, size_t len, u64 w100)
{
	size_t max = w100 > 600 ? (w100 - 600) / FG_CHAR100 : 0, cut;

	if (max < 3)
		return;
	cut = utf8_prefix(s, len, max);
	if (cut == len) {
		wout_xml(w, s, len);
		return;
	}
	cut = utf8_prefix(s, len, max - 2);
	wout_xml(w, s, cut);
	wout_str(w, "..");
}

static void fg_put_node(struct wout *w, const struct fg_tree *t, u32 i)
{
	const struct fg_node *n = &t->n[i];
	const char *name = i ? fold_name(t->f, n->name) : "all";
	size_t len = i ? fold_name_len(t->f, n->name) : 3;
	u64 x100 = FG_PAD * 100 + fg_px100(t, n->start), w100 = fg_px100(t, n->total);
	u64 y = FG_TOP + (u64)n->depth * FG_ROW;
	struct frame_parts p;

	frame_parse(name, len, &p);
	wout_fmt(w, "<g class=\"f %s\" data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		 kind_class(&p, !i), (unsigned long long)n->start,
		 (unsigned long long)n->total, n->depth);
	wout_xml(w, name, len);
	if (t->ms)
		wout_fmt(w, " (%llu ms, ", (unsigned long long)n->total);
	else
		wout_fmt(w, " (%llu sample%s, ", (unsigned long long)n->total,
			 n->total == 1 ? "" : "s");
	wout_fixed(w, n->total * 100, t->n[0].total ? t->n[0].total : 1, 2);
	wout_str(w, "%)</title><rect x=\"");
	put_px(w, x100);
	wout_fmt(w, "\" y=\"%llu\" width=\"", (unsigned long long)y);
	put_px(w, w100);
	wout_str(w, "\" height=\"15\" fill=\"");
	put_fill(w, &p, !i);
	wout_str(w, "\"/><text x=\"");
	put_px(w, x100 + 300);
	wout_fmt(w, "\" y=\"%llu\">", (unsigned long long)y + 11);
	put_label(w, name, len, w100);
	wout_str(w, "</text></g>\n");
}

/* Pre-order walk (parents first, siblings in name order) with an
 * explicit stack: stacks can be thousands of frames deep. */
static int fg_put_frames(struct wout *w, const struct fg_tree *t)
{
	u32 *st = xreallocarray(NULL, t->nr + 1, sizeof(*st)), i, c, tmp;
	size_t sp = 0, base, a, b;

	if (!st)
		return -ENOMEM;
	st[sp++] = 0;
	while (sp && !w->err) {
		i = st[--sp];
		fg_put_node(w, t, i);
		base = sp;
		for (c = t->n[i].child; c != FG_NONE; c = t->n[c].sibling)
			if (fg_drawn(t, c))
				st[sp++] = c;
		/* Reverse what was pushed so the first child pops first. */
		for (a = base, b = sp; a + 1 < b; a++, b--) {
			tmp = st[a];
			st[a] = st[b - 1];
			st[b - 1] = tmp;
		}
	}
	free(st);
	return 0;
}

static const char fg_style[] =
	"<style type=\"text/css\">\n"
	"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	".bg { fill: #f6f6f2; }\n"
	".title { font-size: 16px; text-anchor: middle; }\n"
	".btn { cursor: pointer; fill: #1a4c9c; text-decoration: underline; }\n"
	".lg { font-size: 11px; }\n"
	".f { cursor: pointer; }\n"
	".f rect { stroke: #f6f6f2; stroke-width: 0.5; }\n"
	".f:hover rect { stroke: #000; stroke-width: 1; }\n"
	".f text { pointer-events: none; }\n"
	".parent { opacity: 0.55; }\n"
	".hide { display: none; }\n"
	"</style>\n";

/*
 * The script: written for perfspy (no code taken from flamegraph.pl or
 * inferno; only the behaviour users know from them). Positions come from
 * data-s/data-n/data-d, so a zoom is exact at any depth: the clicked
 * frame spans the plot, its ancestors stay full width and faded, frames
 * outside its range are hidden. Search takes a regular expression (a
 * literal if it does not compile), paints matches magenta and prints the
 * share they cover, counting nested matches once.
 */
static const char fg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"(function () {\n"
	"  var svg = document.documentElement, W = 1180, PAD = 10, CW = 7.25;\n"
	"  var total = +svg.getAttribute('data-total');\n"
	"  var frames = Array.prototype.slice.call(document.querySelectorAll('#frames > g'));\n"
	"  var details = document.getElementById('details');\n"
	"  var matched = document.getElementById('matched');\n"
	"  var unzoomBtn = document.getElementById('unzoom');\n"
	"  var searchBtn = document.getElementById('search');\n"
	"  var zoom = null, term = null;\n"
	"  function num(g, k) { return +g.getAttribute('data-' + k); }\n"
	"  function info(g) { return g.querySelector('title').textContent; }\n"
	"  function name(g) { return info(g).replace(/ \\([^()]*\\)$/, ''); }\n"
	"  function fit(g, w) {\n"
	"    var s = Array.from(name(g)), max = Math.floor((w - 6) / CW);\n"
	"    g.querySelector('text').textContent = max < 3 ? '' :\n"
	"      s.length <= max ? s.join('') : s.slice(0, max - 2).join('') + '..';\n"
	"  }\n"
	"  function place() {\n"
	"    var zs = zoom ? num(zoom, 's') : 0, zn = zoom ? num(zoom, 'n') : total;\n"
	"    var zd = zoom ? num(zoom, 'd') : 0, k = W / (zn || 1);\n"
	"    frames.forEach(function (g) {\n"
	"      var s = num(g, 's'), n = num(g, 'n'), up = num(g, 'd') < zd, x, w;\n"
	"      var shown = up ? s <= zs && s + n >= zs + zn : s >= zs && s + n <= zs + zn;\n"
	"      g.classList.toggle('hide', !shown);\n"
	"      g.classList.toggle('parent', shown && up);\n"
	"      if (!shown) return;\n"
	"      x = up ? PAD : PAD + (s - zs) * k;\n"
	"      w = up ? W : (g === frames[0] ? W : n * k);\n"
	"      g.querySelector('rect').setAttribute('x', x.toFixed(2));\n"
	"      g.querySelector('rect').setAttribute('width', w.toFixed(2));\n"
	"      g.querySelector('text').setAttribute('x', (x + 3).toFixed(2));\n"
	"      fit(g, w);\n"
	"    });\n"
	"  }\n"
	"  function setZoom(g) {\n"
	"    zoom = g && num(g, 'd') > 0 ? g : null;\n"
	"    unzoomBtn.classList.toggle('hide', !zoom);\n"
	"    place();\n"
	"  }\n"
	"  function search(t) {\n"
	"    var re = null, hits = [], covered = 0, end = -1;\n"
	"    term = t || null;\n"
	"    if (term) {\n"
	"      try { re = new RegExp(term); }\n"
	"      catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')); }\n"
	"    }\n"
	"    frames.forEach(function (g) {\n"
	"      var r = g.querySelector('rect'), hit = !!re && re.test(name(g));\n"
	"      if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"      r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
	"      if (hit) hits.push([num(g, 's'), num(g, 'n')]);\n"
	"    });\n"
	"    hits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"    hits.forEach(function (h) {\n"
	"      if (h[0] >= end) { covered += h[1]; end = h[0] + h[1]; }\n"
	"    });\n"
	"    searchBtn.textContent = term ? 'Reset Search' : 'Search';\n"
	"    matched.textContent = term ? 'Matched: ' +\n"
	"      (total ? 100 * covered / total : 0).toFixed(2) + '%' : ' ';\n"
	"  }\n"
	"  function ask() {\n"
	"    var t = window.prompt('Search frames (regular expression):', term || '');\n"
	"    if (t !== null) search(t);\n"
	"  }\n"
	"  frames.forEach(function (g) {\n"
	"    g.addEventListener('click', function () { setZoom(g); });\n"
	"    g.addEventListener('mouseover', function () { details.textContent = info(g); });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  unzoomBtn.addEventListener('click', function () { setZoom(null); });\n"
	"  searchBtn.addEventListener('click', function () { if (term) search(null); else ask(); });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if (e.key === 'F3' || ((e.ctrlKey || e.metaKey) && e.key === 'f')) {\n"
	"      e.preventDefault();\n"
	"      ask();\n"
	"    } else if (e.key === 'Escape') {\n"
	"      search(null);\n"
	"      setZoom(null);\n"
	"    }\n"
	"  });\n"
	"  var q = /[?&]s=([^&]*)/.exec(window.location.search);\n"
	"  place();\n"
	"  if (q) search(decodeURIComponent(q[1]));\n"
	"})();\n"
	"]]></script>\n";

static void fg_put_legend(struct wout *w)
{
	static const struct { const char *name, *fill; } items[] = {
		{ "Python", "rgb(95,205,115)" },
		{ "native", "rgb(235,155,55)" },
		{ "kernel", "rgb(120,165,235)" },
		{ "thread/process", "rgb(211,211,211)" },
	};
	unsigned i, x = FG_PAD;

	wout_str(w, "<g id=\"legend\">");
	for (i = 0; i < ARRAY_SIZE(items); i++) {
		wout_fmt(w, "<rect x=\"%u\" y=\"34\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			 "<text class=\"lg\" x=\"%u\" y=\"43\">%s</text>",
			 x, items[i].fill, x + 14, items[i].name);
		x += 14 + 8 * (unsigned)strlen(items[i].name) + 16;
	}
	wout_str(w, "</g>\n");
}

static u32 fg_max_depth(const struct fg_tree *t)
{
	u32 i, d = 0;

	for (i = 0; i < t->nr; i++)
		if (t->n[i].depth > d && fg_drawn(t, i))
			d = t->n[i].depth;
	return d;
}

static void fg_put_head(struct wout *w, const struct fg_tree *t, const char *title)
{
	u64 h = FG_TOP + ((u64)fg_max_depth(t) + 1) * FG_ROW + FG_BOTTOM;

	wout_str(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	wout_fmt(w, "<svg version=\"1.1\" width=\"%d\" height=\"%llu\" viewBox=\"0 0 %d %llu\" "
		 "xmlns=\"http://www.w3.org/2000/svg\" data-total=\"%llu\">\n",
		 FG_WIDTH, (unsigned long long)h, FG_WIDTH, (unsigned long long)h,
		 (unsigned long long)t->n[0].total);
	wout_str(w, "<!-- perfspy flame graph (root on top). Click a frame to zoom, "
		    "Search or Ctrl-F to highlight, Escape to reset. -->\n<title>");
	wout_xml(w, title, strlen(title));
	wout_str(w, "</title>\n");
	wout_str(w, fg_style);
	wout_fmt(w, "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%llu\"/>\n",
		 FG_WIDTH, (unsigned long long)h);
	wout_fmt(w, "<text id=\"title\" class=\"title\" x=\"%d\" y=\"24\">", FG_WIDTH / 2);
	wout_xml(w, title, strlen(title));
	/* --idle: the unit, where the reader looks first (docs/top.md §3). */
	if (t->ms)
		wout_str(w, " (milliseconds, on and off CPU)");
	wout_str(w, "</text>\n");
	fg_put_legend(w);
	wout_fmt(w, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		 "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		 "<text id=\"details\" x=\"%d\" y=\"%llu\"> </text>\n"
		 "<text id=\"matched\" x=\"%d\" y=\"%llu\" text-anchor=\"end\"> </text>\n",
		 FG_PAD, FG_WIDTH - FG_PAD, FG_PAD, (unsigned long long)h - 12,
		 FG_WIDTH - FG_PAD, (unsigned long long)h - 12);
}

int write_svg(const struct perfspy_folder *f, FILE *out, const char *title, bool ms)
{
	struct fg_tree t = { .f = f, .ms = ms };
	struct wout w;
	int err;

	err = wout_init(&w, out);
	if (err)
		return err;
	htab_init(&t.tab, sizeof(struct fg_slot), 1024);
	err = fg_build(&t);
	if (!err)
		err = fg_layout(&t);
	if (!err) {
		fg_put_head(&w, &t, title ? title : "perfspy");
		wout_str(&w, "<g id=\"frames\">\n");
		err = fg_put_frames(&w, &t);
		wout_str(&w, "</g>\n");
		wout_str(&w, fg_script);
		wout_str(&w, "</svg>\n");
	}
	free(t.n);
	htab_free(&t.tab);
	if (err) {
		free(w.buf);
		return err;
	}
	return wout_finish(&w);
}
