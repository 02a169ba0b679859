// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload for qualified names of inlined frames: a namespaced
 * function template, always inlined and instantiated with a lambda. GCC
 * gives such an instance no DW_AT_linkage_name, so its frame is named from
 * DW_AT_name and the enclosing namespaces (frames/dwarf_lines.c), as the
 * symbol table's demangled names read:
 *   main -> demo::Mixer::mix -> demo::detail::apply_n<lambda> (inlined): spin
 * Kept out of cxx.cpp: binutils' addr2line, the oracle of tests/diff, names
 * such a frame after the function it was inlined into.
 * Usage: cxxns [seconds]
 */
#include <vector>
#include "common.h"

namespace demo {
namespace detail {

/* The lambda runs once per call, so samples land in the loop, not in its
 * operator() (a frame of its own, named `operator()`). */
template <typename F>
ALWAYS_INLINE uint64_t apply_n(const long *v, size_t n, int rounds, F f)
{
	uint64_t acc = 0;

	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < n; i++)
			acc += (uint64_t)v[i] * (uint64_t)(r + 3) ^ i;
	return f(acc);
}

} // namespace detail

class Mixer {
public:
	explicit Mixer(size_t n) : l_(n, 3) {}
	NOINLINE uint64_t mix(int rounds);

private:
	std::vector<long> l_;
};

NOINLINE uint64_t Mixer::mix(int rounds)
{
	SPIN_FRAME;
	return detail::apply_n(l_.data(), l_.size(), rounds,
			       [this](uint64_t acc) { return acc + l_.size(); });
}

} // namespace demo

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.0);
	demo::Mixer mixer(4096);

	while (now_s() < end)
		sink += mixer.mix(40);
	return 0;
}
