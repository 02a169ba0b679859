// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload for C++ names: a namespaced class method, a function template
 * instantiated twice, an anonymous-namespace function and std::sort.
 *   main -> demo::Engine::run -> demo::detail::accumulate<double> : spin
 *   main -> demo::Engine::run -> demo::detail::accumulate<long>   : spin
 *   main -> (anonymous namespace)::shuffle_sort -> std::sort ...  : sort
 * Usage: cxx [seconds]
 */
#include <algorithm>
#include <vector>
#include "common.h"

namespace demo {
namespace detail {

template <typename T>
NOINLINE T accumulate(const T *v, size_t n, int rounds)
{
	SPIN_FRAME;
	T acc = 0;

	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < n; i++)
			acc += v[i] * (T)(r + 1);
	return acc;
}

} // namespace detail

class Engine {
public:
	explicit Engine(size_t n) : d_(n, 1.5), l_(n, 3) {}
	NOINLINE double run(int rounds);

private:
	std::vector<double> d_;
	std::vector<long> l_;
};

NOINLINE double Engine::run(int rounds)
{
	double x = detail::accumulate<double>(d_.data(), d_.size(), rounds);
	long y = detail::accumulate<long>(l_.data(), l_.size(), rounds);

	return x + (double)y;
}

} // namespace demo

namespace {

NOINLINE uint64_t shuffle_sort(std::vector<uint32_t> &v, uint32_t seed)
{
	for (auto &e : v) {
		seed = seed * 1664525u + 1013904223u;
		e = seed;
	}
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.5);
	demo::Engine engine(4096);
	std::vector<uint32_t> v(4000);
	uint32_t seed = 1;

	while (now_s() < end) {
		sink += (uint64_t)engine.run(40);
		sink += shuffle_sort(v, seed++);
	}
	return 0;
}
