/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `perfspy report` internals shared by report.c (rules, categorizing and
 * counting) and report_out.c (the text table and the JSON object).
 *
 * A report keeps its own copy of every name it shows (interned in a
 * private folder), so it outlives the folder it was made from. Counts
 * are kept as relations: (category, innermost Python frame), (category,
 * native leaf), (category, thread name), (category, syscall), (thread,
 * Python frame), (Python frame, native leaf), each a set of
 * (a, b) -> weight entries. Every table the writers print is a grouping
 * of one relation by one side, sorted by weight then by name, so output
 * never depends on hash or insertion order.
 */
#ifndef PERFSPY_REPORT_H
#define PERFSPY_REPORT_H

#include "perfspy.h"
#include "common/frame.h"
#include "common/hash.h"
#include "common/util.h"
#include "common/write.h"

#define RP_NONE UINT32_MAX

enum rp_rel_id {
	REL_CAT_PY = 0,
	REL_CAT_NAT,
	REL_CAT_THR,
	REL_CAT_SYS,
	REL_THR_PY,
	REL_PY_NAT,
	REL_CAT_PROC,	/* (category, process root frame) */
	REL_CAT_TID,	/* (category, thread root frame: one TID) */
	REL_PROC_PY,
	REL_TID_PY,
	REL_N,
};

struct rp_ent {
	u32 a, b;
	u64 n;
};

struct rp_rel {
	struct rp_ent *e; /* in first-seen order */
	size_t nr, cap;
	struct htab tab; /* (a, b) -> index into e (struct rel_slot) */
};

enum rp_kind { RK_FUNC = 0, RK_LIB, RK_FRAME, RK_KERNEL };

struct rp_rule {
	u32 cat;	 /* index into perfspy_report.cats */
	enum rp_kind kind;
	bool leaf;
	bool py;	 /* `python`: only in stacks with a Python frame */
	const char *pat; /* NUL-terminated glob; "" for RK_KERNEL */
	/* What a matching subject must hold (rule_lit() in report.c): the
	 * pattern's longest run of plain characters, at the subject's start
	 * when the pattern starts with it; lit_len 0: nothing known. */
	const char *lit;
	u32 lit_len;
	bool lit_start;
	u64 lit_pairs[4]; /* rp_pairs() of the run */
};

struct perfspy_report {
	struct perfspy_folder *names; /* private string table */
	u32 nnames;
	struct arena pats;
	struct rp_rule *rules;
	size_t nrules, cap_rules;
	/* rp_index(): bit i of cand + ((k * 257 + c) * cand_words) is set
	 * when rule i can match a frame whose part k (report.c's SUBJ_*:
	 * text, function, file) starts with byte c (256: the part is empty
	 * or absent). */
	u64 *cand;
	size_t cand_words;
	u32 *cats;		/* category name ids, in rule order */
	u64 *cat_total;
	size_t ncats, cap_cats, cap_tot;
	u32 cat_other, cat_python;
	u32 *cat_order;		/* categories by weight, then rule order */
	u32 no_python;		/* name id "(no Python frame)" */
	u32 no_thread;		/* name id "(all threads)" */
	u32 no_process;		/* name id "(all processes)" */
	bool has_procs;		/* some stack had a process root */
	bool has_threads;	/* some stack had a thread root */
	u64 total;
	struct rp_rel rel[REL_N];
	u32 *rank;		/* name id -> bytewise rank (built by report.c) */
	struct log_sink log;
	const char *rules_name;
	u32 *stack_cat; /* rp_new(per_stack): each stack's category index */
	u32 last_cat;	/* the category rp_stack() gave last */
};

/* perfspy_report__new(), and with @per_stack r->stack_cat[i] is the
 * category of the folder's stack i (the pprof writer's `category`
 * label). */
int rp_new(const struct perfspy_folder *f, const struct perfspy_report_opts *opts,
	   bool per_stack, struct perfspy_report **out);

/* Intern @len bytes of @s into the report's names; RP_NONE on ENOMEM. */
u32 rp_name(struct perfspy_report *r, const char *s, size_t len);

/* The length of function name @f (@n bytes) without compiler clone
 * suffixes (.lto_priv.N, .constprop.N, .isra.N, .part.N, .cold, .llvm.N). */
size_t rp_strip_clone(const char *f, size_t n);

/* One group of a relation grouped by one side: @key, its total, and its
 * entries in order (ent[first .. first + count)). */
struct rp_group {
	u32 key;
	u64 total;
	size_t first, count;
};

struct rp_grouping {
	const struct rp_rel *rel;
	bool by_b;		/* grouped by b (else by a) */
	u32 *ent;		/* entry indices, group after group */
	struct rp_group *g;	/* groups by total, then by key name */
	size_t ng;
};

/* Group relation @rel by side b (@by_b) or a. 0 or -ENOMEM. */
int rp_group_by(const struct perfspy_report *r, enum rp_rel_id rel, bool by_b,
		struct rp_grouping *out);
void rp_grouping_free(struct rp_grouping *gr);

/* The group of @key in @gr, or NULL. */
const struct rp_group *rp_find(const struct rp_grouping *gr, u32 key);

/* Does side b (else a) of relation @rel hold category indices? */
static inline bool rp_side_is_cat(enum rp_rel_id rel, bool b)
{
	return !b && (rel <= REL_CAT_SYS || rel == REL_CAT_PROC || rel == REL_CAT_TID);
}

/* The text of a category index or name id. */
const char *rp_text(const struct perfspy_report *r, u32 v, bool is_cat,
		    size_t *len);

#endif
