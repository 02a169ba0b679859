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
 * Issue 15 (docs/output.md §7.1-7.3): native frames are merged by
 * function (write_group.c), the lines they stood for listed in the
 * tooltip's second line with their shares; native frames are coloured
 * by library family; the details line and "Matched:" sit in a bar under
 * the title that the script keeps at the top of the window while the
 * page scrolls, and the script stretches the plot to the window's width
 * (the file as written is 1200 px wide, for viewers without scripts).
 *
 * Invariants: the same stacks give the same bytes (sorted siblings,
 * integer pixel arithmetic, colours from a hash of the function name);
 * every byte of input text is escaped (wout_xml); nothing is loaded from
 * outside the file.
 */
#include "writers.h"
#include "common/hash.h"
#include "common/opts.h"

#include <errno.h>
#include <stdlib.h>


#define FG_WIDTH 1200
#define FG_PAD 10
#define FG_PLOT 1180	/* FG_WIDTH - 2 * FG_PAD */
#define FG_ROW 16	/* rect height 15 + 1 px gap */
#define FG_BAR 50	/* top of the details bar, under title and legend */
#define FG_TOP 76	/* title row, legend and details bar above the frames */
#define FG_BOTTOM 10
#define FG_LINES 6	/* source lines listed in a tooltip */
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

/* Weight of one source line of a grouped node: the folder frame it came
 * from. */
struct fg_line {
	u32 node, frame;
	u64 w;
	const char *txt; /* the frame's text, set for sorting */
	u32 len;
};

struct fg_tree {
	const struct perfspy_folder *f;
	const struct perfspy_write_opts *opts;
	struct fgroups grp; /* fg_node.name is a group id */
	struct fg_node *n;
	size_t nr, cap;
	struct htab tab; /* (parent, name) -> node (struct fg_slot) */
	struct fg_line *lines; /* sorted by node, then weight down */
	size_t nr_lines, cap_lines;
	struct idmap line_idx; /* node << 32 | frame -> index + 1 in lines */
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

/* Credit @w to source line (folder frame) @frame of grouped node @node. */
static int fg_add_line(struct fg_tree *t, u32 node, u32 frame, u64 w)
{
	u64 *v = idmap_put(&t->line_idx, (u64)node << 32 | frame);

	if (!v)
		return -ENOMEM;
	if (!*v) {
		if (ensure_mem((void **)&t->lines, &t->cap_lines, sizeof(*t->lines),
			       t->nr_lines + 1))
			return -ENOMEM;
		t->lines[t->nr_lines++] = (struct fg_line){ node, frame, 0 };
		*v = t->nr_lines;
	}
	t->lines[*v - 1].w += w;
	return 0;
}

static int fg_build(struct fg_tree *t)
{
	size_t i, nr = perfspy_folder__nr_stacks(t->f);
	u32 root, cur, j, n, g;
	struct fold_ids buf = { 0 };
	const u32 *ids;
	u64 count;
	int err = fg_new_node(t, FG_NONE, FG_NONE, &root);

	for (i = 0; !err && i < nr; i++) {
		if ((err = fold_stack(t->f, i, &buf, &ids, &n, &count)))
			break;
		cur = root;
		t->n[cur].total += count;
		for (j = 0; !err && j < n; j++) {
			err = fgroups_of(&t->grp, ids[j], &g);
			if (!err)
				err = fg_child(t, cur, g, &cur);
			if (err)
				break;
			t->n[cur].total += count;
			if (t->grp.grouped[g])
				err = fg_add_line(t, cur, ids[j], count);
		}
	}
	fold_ids_free(&buf);
	return err;
}

/* Heaviest line first; ties by the frame text, so output is stable. */
static int cmp_line(const void *a, const void *b)
{
	const struct fg_line *x = a, *y = b;
	int c;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	c = memcmp(x->txt, y->txt, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void fg_sort_lines(struct fg_tree *t)
{
	size_t i;

	for (i = 0; i < t->nr_lines; i++) {
		t->lines[i].txt = fold_name(t->f, t->lines[i].frame);
		t->lines[i].len = fold_name_len(t->f, t->lines[i].frame);
	}
	xqsort(t->lines, t->nr_lines, sizeof(*t->lines), cmp_line);
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
					  fgroups_name(&t->grp, t->n[i].name),
					  fgroups_len(&t->grp, t->n[i].name) };
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

/*
 * Colour families (docs/output.md §7.2): each is a box in RGB space,
 * base + spread; the shade inside it comes from a hash of the function
 * name, so one function keeps one colour across the graph, as
 * flamegraph.pl's palettes do. Python frames green, the kernel blue,
 * roots grey, native frames by library family: the program and other
 * libraries yellow-orange, the C runtime red, the interpreter olive,
 * torch deep orange, CUDA violet, BLAS/OpenMP pink, no name brown-grey.
 * The boxes do not overlap, so a family reads apart at any shade; the
 * legend shows each box's middle.
 */
enum fg_fam { FAM_ROOT, FAM_PY, FAM_NAT0 };

static const struct fg_family {
	const char *cls, *legend;
	u8 base[3], spread[3];
} fg_fams[] = {
	[FAM_ROOT] = { "rt", "thread/process", { 196, 196, 196 }, { 30, 30, 30 } },
	[FAM_PY] = { "py", "Python", { 60, 175, 80 }, { 70, 60, 70 } },
	[FAM_NAT0 + FLIB_OTHER] = { "nat", "native", { 225, 165, 30 }, { 30, 55, 40 } },
	[FAM_NAT0 + FLIB_CRT] = { "crt", "libc/ld/libstdc++", { 200, 55, 55 }, { 40, 35, 30 } },
	[FAM_NAT0 + FLIB_PYTHON] = { "pyrt", "libpython", { 170, 170, 70 }, { 30, 25, 30 } },
	[FAM_NAT0 + FLIB_TORCH] = { "torch", "libtorch/c10", { 235, 105, 0 }, { 20, 30, 25 } },
	[FAM_NAT0 + FLIB_CUDA] = { "cuda", "CUDA", { 150, 85, 205 }, { 35, 35, 45 } },
	[FAM_NAT0 + FLIB_MATH] = { "math", "BLAS/OpenMP", { 230, 125, 175 }, { 25, 30, 35 } },
	[FAM_NAT0 + FLIB_UNKNOWN] = { "unk", "no symbol", { 165, 140, 120 }, { 20, 20, 20 } },
	[FAM_NAT0 + FLIB_KERNEL] = { "ker", "kernel", { 70, 140, 215 }, { 50, 45, 40 } },
};

static size_t fg_first_line(const struct fg_tree *t, u32 i);

/* The family of node @i: its kind, for native frames their library,
 * from the frame text or from the caller (perfspy_write_opts.frame_lib)
 * when the text names a source file. The caller knows the frames as the
 * folder holds them: a grouped node asks about its heaviest line. */
static unsigned fg_family(const struct fg_tree *t, u32 i, const char *s, size_t len,
			  const struct frame_parts *p, bool root)
{
	enum frame_lib lib;
	const char *name;
	size_t k;

	if (root || frame_is_root(p->kind))
		return FAM_ROOT;
	if (p->kind == FRAME_PYTHON)
		return FAM_PY;
	lib = frame_lib_family(p);
	if (lib == FLIB_OTHER && p->kind == FRAME_NATIVE && t->opts &&
	    OPTS_GET(t->opts, frame_lib, NULL)) {
		k = fg_first_line(t, i);
		if (k < t->nr_lines && t->lines[k].node == i) {
			s = t->lines[k].txt;
			len = t->lines[k].len;
		}
		name = t->opts->frame_lib(t->opts->frame_lib_ctx, s, len);
		if (name)
			lib = frame_lib_of(name, strlen(name));
	}
	return FAM_NAT0 + lib;
}

static void put_fill(struct wout *w, const struct frame_parts *p, unsigned fam)
{
	const struct fg_family *c = &fg_fams[fam];
	u64 h = hash_bytes(p->func, p->func_len, 0);
	unsigned v[3], k;

	for (k = 0; k < 3; k++)
		v[k] = c->base[k] + (unsigned)(h >> (8 * k) & 0xff) * c->spread[k] / 255;
	if (fam == FAM_ROOT) /* grey stays grey */
		v[1] = v[2] = v[0];
	wout_fmt(w, "rgb(%u,%u,%u)", v[0], v[1], v[2]);
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

/* The first of node @i's lines in t->lines, or t->nr_lines. */
static size_t fg_first_line(const struct fg_tree *t, u32 i)
{
	size_t lo = 0, hi = t->nr_lines, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->lines[mid].node < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The tooltip's second line for a grouped node: `lines: FILE:LINE (P%),
 * ...`, heaviest first, shares of the node's weight. */
static void fg_put_lines(struct wout *w, const struct fg_tree *t, u32 i)
{
	size_t k = fg_first_line(t, i), end = k, shown;
	struct frame_parts p;

	while (end < t->nr_lines && t->lines[end].node == i)
		end++;
	if (k == end)
		return;
	wout_str(w, "\nlines: ");
	for (shown = 0; k < end && shown < FG_LINES; k++, shown++) {
		const char *s = fold_name(t->f, t->lines[k].frame);

		frame_parse(s, fold_name_len(t->f, t->lines[k].frame), &p);
		if (shown)
			wout_str(w, ", ");
		wout_xml(w, p.file, p.file_len);
		wout_fmt(w, ":%ld (", p.line);
		wout_fixed(w, t->lines[k].w * 100, t->n[i].total ? t->n[i].total : 1, 1);
		wout_str(w, "%)");
	}
	if (k < end)
		wout_fmt(w, ", +%zu more", end - k);
}

static void fg_put_node(struct wout *w, const struct fg_tree *t, u32 i)
{
	const struct fg_node *n = &t->n[i];
	const char *name = i ? fgroups_name(&t->grp, n->name) : "all";
	size_t len = i ? fgroups_len(&t->grp, n->name) : 3;
	u64 x100 = FG_PAD * 100 + fg_px100(t, n->start), w100 = fg_px100(t, n->total);
	u64 y = FG_TOP + (u64)n->depth * FG_ROW;
	struct frame_parts p;
	unsigned fam;

	frame_parse(name, len, &p);
	fam = fg_family(t, i, name, len, &p, !i);
	wout_fmt(w, "<g class=\"f %s\" data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		 fg_fams[fam].cls, (unsigned long long)n->start,
		 (unsigned long long)n->total, n->depth);
	wout_xml(w, name, len);
	if (t->ms)
		wout_fmt(w, " (%llu ms, ", (unsigned long long)n->total);
	else
		wout_fmt(w, " (%llu sample%s, ", (unsigned long long)n->total,
			 n->total == 1 ? "" : "s");
	wout_fixed(w, n->total * 100, t->n[0].total ? t->n[0].total : 1, 2);
	wout_str(w, "%)");
	if (i && t->grp.grouped[n->name])
		fg_put_lines(w, t, i);
	wout_str(w, "</title><rect x=\"");
	put_px(w, x100);
	wout_fmt(w, "\" y=\"%llu\" width=\"", (unsigned long long)y);
	put_px(w, w100);
	wout_str(w, "\" height=\"15\" fill=\"");
	put_fill(w, &p, fam);
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
	".barbg { fill: #e8e8e0; stroke: #c8c8c0; stroke-width: 0.5; }\n"
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
 * share they cover, counting nested matches once. The plot is as wide as
 * the window (fitWidth, on load and resize); the details bar follows the
 * scroll position so it stays at the top of the window (keepBar), as an
 * SVG document has no position: fixed (docs/output.md §7.3).
 */
static const char fg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"(function () {\n"
	"  var svg = document.documentElement, W = 1180, PAD = 10, CW = 7.25;\n"
	"  var BAR = +svg.getAttribute('data-bar');\n"
	"  var total = +svg.getAttribute('data-total');\n"
	"  var frames = Array.prototype.slice.call(document.querySelectorAll('#frames > g'));\n"
	"  var details = document.getElementById('details');\n"
	"  var matched = document.getElementById('matched');\n"
	"  var unzoomBtn = document.getElementById('unzoom');\n"
	"  var searchBtn = document.getElementById('search');\n"
	"  var bar = document.getElementById('bar');\n"
	"  var zoom = null, term = null;\n"
	"  function num(g, k) { return +g.getAttribute('data-' + k); }\n"
	"  function tip(g) { return g.querySelector('title').textContent; }\n"
	"  function info(g) { return tip(g).split('\\n')[0]; }\n"
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
	"  function fitWidth() {\n"
	"    var vw = Math.max(document.documentElement.clientWidth || window.innerWidth || 0, 400);\n"
	"    var h = svg.getAttribute('height');\n"
	"    W = vw - 2 * PAD;\n"
	"    svg.setAttribute('width', vw);\n"
	"    svg.setAttribute('viewBox', '0 0 ' + vw + ' ' + h);\n"
	"    Array.prototype.forEach.call(document.querySelectorAll('.bg, .barbg'), function (r) {\n"
	"      r.setAttribute('width', vw);\n"
	"    });\n"
	"    document.getElementById('title').setAttribute('x', vw / 2);\n"
	"    searchBtn.setAttribute('x', vw - PAD);\n"
	"    matched.setAttribute('x', vw - PAD);\n"
	"    place();\n"
	"  }\n"
	"  function keepBar() {\n"
	"    var y = Math.max(0, (window.scrollY || window.pageYOffset || 0) - BAR);\n"
	"    bar.setAttribute('transform', 'translate(0,' + y + ')');\n"
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
	"    g.addEventListener('mouseover', function () {\n"
	"      details.textContent = tip(g).replace(/\\n/g, '  ');\n"
	"    });\n"
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
	"  window.addEventListener('resize', fitWidth);\n"
	"  window.addEventListener('scroll', keepBar);\n"
	"  var q = /[?&]s=([^&]*)/.exec(window.location.search);\n"
	"  fitWidth();\n"
	"  keepBar();\n"
	"  if (q) search(decodeURIComponent(q[1]));\n"
	"})();\n"
	"]]></script>\n";

/* One swatch per family, at the middle of its colour box. */
static void fg_put_legend(struct wout *w)
{
	static const u8 order[] = { FAM_PY, FAM_NAT0 + FLIB_OTHER, FAM_NAT0 + FLIB_CRT,
				    FAM_NAT0 + FLIB_PYTHON, FAM_NAT0 + FLIB_TORCH,
				    FAM_NAT0 + FLIB_CUDA, FAM_NAT0 + FLIB_MATH,
				    FAM_NAT0 + FLIB_KERNEL, FAM_NAT0 + FLIB_UNKNOWN,
				    FAM_ROOT };
	unsigned i, k, x = FG_PAD, v[3];

	wout_str(w, "<g id=\"legend\">");
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		const struct fg_family *c = &fg_fams[order[i]];

		for (k = 0; k < 3; k++)
			v[k] = c->base[k] + c->spread[k] / 2u;
		wout_fmt(w, "<rect x=\"%u\" y=\"34\" width=\"10\" height=\"10\" "
			 "fill=\"rgb(%u,%u,%u)\"/><text class=\"lg\" x=\"%u\" y=\"43\">%s</text>",
			 x, v[0], v[1], v[2], x + 14, c->legend);
		x += 14 + 7 * (unsigned)strlen(c->legend) + 14;
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
		 "xmlns=\"http://www.w3.org/2000/svg\" data-total=\"%llu\" data-bar=\"%d\">\n",
		 FG_WIDTH, (unsigned long long)h, FG_WIDTH, (unsigned long long)h,
		 (unsigned long long)t->n[0].total, FG_BAR);
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
		 "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		 FG_PAD, FG_WIDTH - FG_PAD);
}

/* The details bar, written after the frames so it is drawn over them
 * when the script moves it down to the top of the window. */
static void fg_put_bar(struct wout *w)
{
	wout_fmt(w, "<g id=\"bar\"><rect class=\"barbg\" x=\"0\" y=\"%d\" width=\"%d\" "
		 "height=\"20\"/>\n"
		 "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		 "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text></g>\n",
		 FG_BAR, FG_WIDTH, FG_PAD, FG_BAR + 14, FG_WIDTH - FG_PAD, FG_BAR + 14);
}

int write_svg(const struct perfspy_folder *f, FILE *out,
	      const struct perfspy_write_opts *opts)
{
	struct fg_tree t = { .f = f, .opts = opts,
			     .ms = OPTS_GET(opts, milliseconds, false) };
	const char *title = OPTS_GET(opts, title, NULL);
	struct wout w;
	int err;

	err = wout_init(&w, out);
	if (err)
		return err;
	htab_init(&t.tab, sizeof(struct fg_slot), 1024);
	err = fgroups_init(&t.grp, f, OPTS_GET(opts, lineno, false));
	if (!err)
		err = fg_build(&t);
	if (!err)
		err = fg_layout(&t);
	if (!err) {
		fg_sort_lines(&t);
		fg_put_head(&w, &t, title ? title : "perfspy");
		wout_str(&w, "<g id=\"frames\">\n");
		err = fg_put_frames(&w, &t);
		wout_str(&w, "</g>\n");
		fg_put_bar(&w);
		wout_str(&w, fg_script);
		wout_str(&w, "</svg>\n");
	}
	free(t.n);
	free(t.lines);
	idmap_free(&t.line_idx);
	fgroups_free(&t.grp);
	htab_free(&t.tab);
	if (err) {
		free(w.buf);
		return err;
	}
	return wout_finish(&w);
}
