#!/usr/bin/awk -f
# SPDX-License-Identifier: GPL-2.0
# Collapse `perf script` text (default fields) into folded stacks, with the
# usual stackcollapse-perf semantics: one header line per sample
# ("comm tid ... event:") followed by its callchain, leaf first, one frame per
# line ("\t ip sym+0xoff (dso)"), and a blank line; frames root first joined
# by ';', one output line per unique stack with its sample count.
# -v comm=1 adds the command name as the root frame.  Output is unsorted
# (pipe it into `LC_ALL=C sort`).  Written for perfspy's benchmark; FlameGraph
# (CDDL) is not used.

function flush() {
	if (stack != "")
		count[(comm_root && comm != "") ? comm ";" stack : stack]++
	stack = ""
	insample = 0
}

BEGIN { comm_root = comm + 0; stack = ""; insample = 0 }

/^[^ \t]/ {
	flush()
	comm = $0
	sub(/[ \t]+[0-9]+(\/[0-9]+)?[ \t].*$/, "", comm)
	insample = 1
	next
}

/^[ \t]*$/ { flush(); next }

insample {
	line = $0
	sub(/^[ \t]*[0-9a-f]+ /, "", line)		# ip
	sub(/ \([^()]*\)$/, "", line)			# (dso)
	sub(/\+0x[0-9a-f]+$/, "", line)			# +0xoffset
	gsub(/;/, ":", line)
	stack = (stack == "") ? line : line ";" stack
}

END {
	flush()
	for (s in count)
		print s, count[s]
}
